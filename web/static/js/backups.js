// Backups of desktops' data disks: a desktop's Backups tab (back up now,
// its schedule, verify, restore into a new desktop or over a stopped one's
// data disk, delete) and the Backups
// page, where admins keep the targets backups go to and find every backup,
// deleted desktops' included.
import { get, post, put, del, seg, describe } from './api.js';
import { store, subscribe, upsert } from './store.js';
import { h, icon, clear, toast, modal, confirmDialog, busy, fmtBytes, fmtTime, fmtAgo, timeEl } from './ui.js';
import { backupFilesDialog } from './backup-files.js';

const FAST = 2000; // while a backup runs
const SLOW = 15000;

// ---------- formatting ----------
const STATE_KIND = { running: 'busy', complete: 'ok', failed: 'bad' };

function statePill(state) {
  return h(`span.pill.pill-${STATE_KIND[state] || 'idle'}.bk-state`, { title: `Backup state: ${state || 'unknown'}` }, h('span.dot'), state || 'unknown');
}

const CONSISTENCY = {
  filesystem: ['filesystem', 'The guest’s filesystems were frozen for the moment of the backup'],
  crash: ['crash', 'As after a power cut: the guest agent did not answer, so its filesystems were not frozen'],
  stopped: ['stopped', 'The desktop was not running: its disk was read as it was'],
};

function consistencyEl(c) {
  const [label, why] = CONSISTENCY[c] || [c || '—', c ? '' : 'Not known until the disk is marked'];
  return h('span.bk-consistency', { title: why }, label);
}

function fmtTook(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

function tookOf(b) {
  const a = Date.parse(b.started_at);
  const z = Date.parse(b.finished_at);
  return Number.isNaN(a) || Number.isNaN(z) ? '' : fmtTook(z - a);
}

const plural = (n, one, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function kindEl(b) {
  return h('div.bk-kind',
    h(`span.tag${b.kind === 'full' ? '.tag-strong' : ''}`, { title: b.why_full || (b.kind === 'incremental' ? 'Only what changed since the previous backup was read' : '') }, b.kind || '—'),
    b.kind === 'full' && b.why_full ? h('div.muted.small.bk-why', { title: b.why_full }, b.why_full) : null);
}

// When it started, and how long it took (or has run so far).
function whenEl(b) {
  const since = Date.parse(b.started_at);
  return h('div.bk-when', timeEl(b.started_at),
    b.state === 'running' && !Number.isNaN(since)
      // desktop.js keeps every .elapsed[data-since] up to date.
      ? h('div.muted.small', 'running for ', h('span.elapsed', { dataset: { since: String(since) } }, fmtTook(Date.now() - since)))
      : b.finished_at ? h('div.muted.small', { title: `Finished ${fmtTime(b.finished_at)}` }, `took ${tookOf(b)}`) : null);
}

// What was read and uploaded.
function sizesEl(b) {
  if (b.state === 'running') {
    return h('div.bk-sizes', h('div', fmtBytes(b.bytes_read), ' read'),
      h('div.muted.small', `${fmtBytes(b.bytes_new)} uploaded`));
  }
  return h('div.bk-sizes',
    h('div', { title: `The data disk is ${fmtBytes(b.disk_bytes)}` }, fmtBytes(b.read_total || b.bytes_read), ' read'),
    h('div.muted.small', `${fmtBytes(b.bytes_new)} uploaded`),
    h('div.muted.small', { title: `${plural(b.chunks_new, 'chunk')} the target lacked, of ${b.chunks}; it held the rest already` },
      `${b.chunks_new} of ${plural(b.chunks, 'chunk')} new`));
}

// The state; while it runs, a progress bar; once failed, why.
function stateEl(b) {
  if (b.state === 'running') {
    const pct = b.read_total ? Math.max(0, Math.min(100, Math.floor((b.bytes_read / b.read_total) * 100))) : 0;
    return h('div.bk-progress', statePill(b.state),
      h('div.meter', { role: 'progressbar', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct, 'aria-label': 'Backup progress', title: b.read_total ? `${pct}%` : 'Working out what to read…' },
        h('span.meter-fill', { style: { width: `${pct}%` } })),
      h('div.muted.small.bk-progress-text', b.read_total
        ? `${fmtBytes(b.bytes_read)} of ${fmtBytes(b.read_total)} (${pct}%) · ${plural(b.chunks_new, 'new chunk')}`
        : 'marking the disk…'));
  }
  return h('div', statePill(b.state), b.state === 'failed' && b.error ? h('div.bk-error', { title: b.error }, b.error) : null);
}

// ---------- verify, restore and delete, shared by the tab and the page ----------
// backupActions(render, {removed, targetName}) keeps what verifying found
// per backup (shown under its row until the view closes), why a delete was
// refused, and the verifications and deletes in flight, so a re-render
// (polling) keeps them. removed(b) drops a deleted backup from the view's
// list; live(list) leaves out those deleted here (a list loaded meanwhile
// may still hold them).
function backupActions(render, { removed, targetName }) {
  const checks = new Map(); // backup id -> {check} or {error}, or {error, op: 'delete'}
  const verifying = new Set();
  const deleting = new Set();
  const deleted = new Set();

  async function verify(b) {
    if (verifying.has(b.id)) return;
    verifying.add(b.id);
    checks.delete(b.id);
    render();
    try {
      checks.set(b.id, { check: await post(`/backups/${seg(b.id)}/verify`) });
    } catch (e) {
      checks.set(b.id, { error: e });
    } finally {
      verifying.delete(b.id);
      render();
    }
  }

  async function remove(b) {
    if (deleting.has(b.id)) return;
    const where = targetName?.(b.target_id);
    const ok = await confirmDialog({
      title: `Delete this backup of ${b.desktop_name || 'the desktop'}?`,
      message: b.state === 'complete'
        ? [`The ${b.kind ? `${b.kind} ` : ''}backup taken ${fmtTime(b.started_at)} is deleted from ${where ? `target ${where}` : 'its target'}: it can no longer be restored.`,
          'The backups taken after it stay whole and can still be restored: each holds all it needs. The chunks no other backup uses are removed from the target in the background.']
        : [`This failed backup, started ${fmtTime(b.started_at)}, was never whole in ${where ? `target ${where}` : 'its target'}: bureau forgets it.`,
          'The chunks it uploaded that no other backup uses are removed from the target in the background; the other backups are not touched.'],
      confirmLabel: 'Delete backup', danger: true,
    });
    if (!ok) return;
    deleting.add(b.id);
    checks.delete(b.id);
    render();
    try {
      await del(`/backups/${seg(b.id)}`);
      deleted.add(b.id);
      deleting.delete(b.id);
      toast(`Backup of ${b.desktop_name || 'the desktop'} taken ${fmtTime(b.started_at)} deleted.`, 'success');
      removed(b);
    } catch (e) {
      deleting.delete(b.id);
      checks.set(b.id, { error: e, op: 'delete' });
      render();
    }
  }

  // Files, verify and restore: a complete backup's (only those are in their
  // target whole). Delete: a complete or failed one's (not while it runs).
  function buttons(b) {
    if (b.state !== 'complete' && b.state !== 'failed') return null;
    const gone = deleting.has(b.id);
    const d = h(`button.btn.btn-sm.btn-danger-ghost.bk-delete${gone ? '.is-busy' : ''}`, {
      type: 'button', disabled: gone, title: 'Delete this backup from its target',
      onclick: () => remove(b),
    }, icon('trash', 14), h('span', 'Delete'));
    if (b.state !== 'complete') return h('div.bk-actions', d);
    const running = verifying.has(b.id);
    const v = h(`button.btn.btn-sm.bk-verify${running ? '.is-busy' : ''}`, {
      type: 'button', disabled: running || gone, title: 'Read back every chunk of it from the target and check it',
      onclick: () => verify(b),
    }, icon('check', 14), h('span', 'Verify'));
    const r = h('button.btn.btn-sm.bk-restore', {
      type: 'button', disabled: gone, title: 'Make a new desktop whose data disk is this backup',
      onclick: () => restoreDialog(b),
    }, icon('undo', 14), h('span', 'Restore as new desktop…'));
    const o = h('button.btn.btn-sm.bk-restore-onto', {
      type: 'button', disabled: gone, title: 'Write this backup over a stopped desktop’s data disk (what it holds now is kept as a snapshot)',
      onclick: () => restoreOntoDialog(b),
    }, icon('undo', 14), h('span', 'Restore over a desktop…'));
    const f = h('button.btn.btn-sm.bk-files', {
      type: 'button', disabled: gone, title: 'Browse its /home: download files or folders, or put them back into a running desktop',
      onclick: () => backupFilesDialog(b),
    }, icon('folder', 14), h('span', 'Files'));
    return h('div.bk-actions', f, v, r, o, d);
  }

  // The row under a backup's with what verifying it found (null: nothing yet).
  function checkRow(b, cols) {
    const res = checks.get(b.id);
    if (!res && !verifying.has(b.id)) return null;
    let note;
    if (verifying.has(b.id)) {
      note = h('div.bk-note', { dataset: { check: 'running' } }, h('span.spinner'), 'Verifying: reading back every chunk of it from the target…');
    } else if (res.op === 'delete') {
      note = h('div.bk-note.bk-note-bad', { dataset: { delete: 'error' }, role: 'alert' }, `Could not delete it: ${describe(res.error)}`);
    } else if (res.error) {
      note = h('div.bk-note.bk-note-bad', { dataset: { check: 'error' }, role: 'alert' }, `Could not verify: ${describe(res.error)}`);
    } else if (res.check.ok) {
      note = h('div.bk-note.bk-note-ok', { dataset: { check: 'ok' } }, icon('check', 14),
        h('span', h('strong', 'Verified: '), `all ${plural(res.check.chunks, 'chunk')} are there and intact (${fmtTook(res.check.took_ms)}).`));
    } else {
      const list = (label, names) => (names?.length ? h('div.bk-chunks', h('strong', `${label} (${names.length}): `),
        h('span.bk-chunk-names', names.slice(0, 50).map((n) => h('code', n))), names.length > 50 ? h('span.muted', ` … and ${names.length - 50} more`) : null) : null);
      note = h('div.bk-note.bk-note-bad', { dataset: { check: 'bad' }, role: 'alert' },
        h('div', h('strong', 'Damaged: '), `of ${plural(res.check.chunks, 'chunk')}, ${res.check.missing.length} missing and ${res.check.corrupt.length} corrupt; a restore of it would fail.`),
        list('Missing', res.check.missing), list('Corrupt', res.check.corrupt));
    }
    const close = res ? h('button.icon-btn', { type: 'button', title: 'Dismiss', 'aria-label': 'Dismiss', onclick: () => { checks.delete(b.id); render(); } }, icon('x', 14)) : null;
    return h('tr.bk-check-row', { dataset: { checkFor: b.id } }, h('td', { colSpan: cols }, h('div.bk-check', note, close)));
  }

  const live = (list) => list.filter((b) => !deleted.has(b.id));
  return { buttons, checkRow, live };
}

const NAME_RE = /^[a-z0-9-]{1,63}$/;

// Asks for a name, restores b into a new desktop and opens its page.
function restoreDialog(b) {
  return modal((close) => {
    const suggested = `${b.desktop_name || 'desktop'}-restored`.slice(0, 63);
    const input = h('input#restore-name', { type: 'text', required: true, autocomplete: 'off', spellcheck: false, maxlength: 63, value: suggested, 'aria-describedby': 'restore-name-hint' });
    const err = h('div.form-error', { role: 'alert', hidden: true });
    const submit = h('button.btn.btn-primary', { type: 'submit', form: 'restore-form' }, icon('undo', 14), 'Restore');
    const showError = (msg) => {
      err.hidden = false;
      err.textContent = msg;
      input.setAttribute('aria-invalid', 'true');
      input.focus();
    };
    const form = h('form#restore-form.form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        input.removeAttribute('aria-invalid');
        const name = input.value.trim();
        if (!NAME_RE.test(name)) {
          showError(name ? `“${name}” is not a valid name: use lowercase letters, digits and “-” (1–63).` : 'Give the new desktop a name.');
          return;
        }
        try {
          const d = await busy(submit, () => post(`/backups/${seg(b.id)}/restore`, { name }));
          upsert(d);
          close(d);
          toast(`Restoring ${b.desktop_name}’s backup as ${d.name}: it is being created.`, 'success');
          location.hash = `#/desktops/${encodeURIComponent(d.id)}`;
        } catch (ex) {
          showError(describe(ex));
        }
      },
    },
    h('div', h('p', 'A new desktop is made whose data disk (', h('code', '/home'), `) is this backup of ${b.desktop_name}, taken ${fmtTime(b.started_at)}, with a fresh OS disk of its image${b.image ? ` (${b.image})` : ''}. It boots like a new desktop; ${b.desktop_name} itself is not touched.`),
      b.owner ? h('p.muted.small.bk-restore-owner', `It will be ${b.owner}’s, as the backup is.`) : null),
    h('div.field', h('label', { for: 'restore-name' }, 'Name of the new desktop'), input,
      h('small.hint#restore-name-hint', 'Lowercase letters, digits and “-”, up to 63 characters.')),
    err);
    return {
      title: `Restore ${b.desktop_name}’s backup`,
      body: form,
      actions: [h('button.btn', { type: 'button', onclick: () => close(null) }, 'Cancel'), submit],
      onOpen: () => { input.focus(); input.select(); },
    };
  });
}

// Asks which stopped desktop of the backup's owner gets it, and for a yes to
// replacing that desktop's /home; writes b over its data disk and opens its
// page. Its disk as it is is kept as the snapshot before-restore-<id>.
function restoreOntoDialog(b) {
  return modal((close) => {
    const mine = [...store.desktops.values()].filter((d) => d.owner === b.owner).sort((x, y) => x.name.localeCompare(y.name));
    const stopped = mine.filter((d) => d.state === 'stopped');
    const pick = h('select#restore-onto', { required: true, 'aria-describedby': 'restore-onto-hint' },
      stopped.map((d) => h('option', { value: d.id, selected: d.id === b.desktop_id }, d.name)));
    const yes = h('input#restore-onto-yes', { type: 'checkbox' });
    const snap = `before-restore-${b.id}`;
    const err = h('div.form-error', { role: 'alert', hidden: true });
    const submit = h('button.btn.btn-primary', { type: 'submit', form: 'restore-onto-form', disabled: !stopped.length }, icon('undo', 14), 'Replace its data disk');
    const showError = (msg) => { err.hidden = false; err.textContent = msg; };
    const form = h('form#restore-onto-form.form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        if (!yes.checked) {
          showError('Tick the box: the desktop’s /home is replaced by the backup’s.');
          yes.focus();
          return;
        }
        try {
          const d = await busy(submit, () => post(`/backups/${seg(b.id)}/restore`, { desktop: pick.value, replace_data_disk: true }));
          upsert(d);
          close(d);
          toast(`Restoring ${b.desktop_name}’s backup over ${d.name}’s data disk; its disk as it was is snapshot ${snap}.`, 'success');
          location.hash = `#/desktops/${encodeURIComponent(d.id)}`;
        } catch (ex) {
          showError(describe(ex));
        }
      },
    },
    h('p', 'The backup of ', h('strong', b.desktop_name), `, taken ${fmtTime(b.started_at)}, is written over the data disk (`, h('code', '/home'),
      ') of a stopped desktop, which keeps its OS disk and settings and boots from it when started. What its data disk holds now is kept first as the snapshot ',
      h('code', snap), ': reverting it undoes the restore.'),
    stopped.length
      ? h('div.field', h('label', { for: 'restore-onto' }, 'Desktop'), pick,
        h('small.hint#restore-onto-hint', `${b.owner ? `${b.owner}’s ` : ''}stopped desktops: stop a running one first.`))
      : h('p.bk-note', { dataset: { onto: 'none' } }, mine.length
        ? `None of ${b.owner ? `${b.owner}’s` : 'the'} desktops is stopped: stop the one to restore over first.`
        : `${b.owner || 'The owner'} has no desktop: restore it as a new desktop instead.`),
    h('label.check.check-danger.bk-onto-yes', yes, ' Replace its ', h('code', '/home'), ' with the backup’s'),
    err);
    return {
      title: `Restore ${b.desktop_name}’s backup over a desktop`,
      body: form,
      actions: [h('button.btn', { type: 'button', onclick: () => close(null) }, 'Cancel'), submit],
      onOpen: () => (stopped.length ? pick : yes).focus(),
    };
  });
}

// ---------- polling ----------
// poller(load) calls load() now, then every 2 s while it answers true (a
// backup runs) and every 15 s otherwise, while the page is visible; stop()
// ends it.
function poller(load) {
  let timer = null;
  let gone = false;
  let inflight = null;
  let again = false; // asked for while a load ran: load once more after it
  function tick() {
    clearTimeout(timer);
    if (gone) return Promise.resolve();
    if (inflight) { again = true; return inflight; }
    inflight = (async () => {
      let fast = false;
      do {
        again = false;
        try { fast = await load(); } catch { /* load shows its errors */ }
      } while (again && !gone);
      inflight = null;
      schedule(fast);
    })();
    return inflight;
  }
  function schedule(fast) {
    clearTimeout(timer);
    if (!gone) timer = setTimeout(() => (document.visibilityState === 'visible' ? tick() : schedule(fast)), fast ? FAST : SLOW);
  }
  const onVis = () => { if (document.visibilityState === 'visible') tick(); };
  document.addEventListener('visibilitychange', onVis);
  tick();
  return { now: tick, stop: () => { gone = true; clearTimeout(timer); document.removeEventListener('visibilitychange', onVis); } };
}

// The targets (admins only): a list, or null when the token may not list them.
async function loadTargets() {
  try {
    const b = await get('/backup-targets');
    return b?.targets || [];
  } catch (e) {
    if (e.status === 403) return null;
    throw e;
  }
}

const newestFirst = (list) => list.sort((a, b) => (Date.parse(b.started_at) || 0) - (Date.parse(a.started_at) || 0));

function loading(text = 'Loading…') { return h('div.loading', h('span.spinner'), text); }
function table(cls, head, rows) {
  return h('div.table-wrap', h(`table.${cls}`, h('thead', h('tr', head.map((x) => h('th', x)))), h('tbody', rows)));
}

// ---------- a desktop's backup schedule ----------
// What PUT /desktops/{id}/backup-schedule takes for a field left out.
const SCHEDULE_DEFAULTS = { every_minutes: 60, keep_last: 0, keep_hourly: 24, keep_daily: 7, keep_weekly: 4 };
const EVERY_PRESETS = [[60, 'Hourly'], [360, 'Every 6 h'], [1440, 'Daily']];
const KEEPS = [
  ['keep_last', 'Last', 'The newest this many backups stay'],
  ['keep_hourly', 'Hourly', 'The newest backup of each of the newest this many hours that have one stays'],
  ['keep_daily', 'Daily', 'The newest backup of each of the newest this many days (UTC) that have one stays'],
  ['keep_weekly', 'Weekly', 'The newest backup of each of the newest this many ISO weeks that have one stays'],
];

// How often, after "Every": "60 min", "6 h", "day", "2 days".
function fmtEvery(m) {
  if (m % 1440 === 0) return m === 1440 ? 'day' : `${m / 1440} days`;
  if (m % 60 === 0 && m > 60) return `${m / 60} h`;
  return `${m} min`;
}

function keepsText(s) {
  const parts = [s.keep_last ? `the last ${s.keep_last}` : null, s.keep_hourly ? `${s.keep_hourly} hourly` : null,
    s.keep_daily ? `${s.keep_daily} daily` : null, s.keep_weekly ? `${s.keep_weekly} weekly` : null].filter(Boolean);
  return parts.length ? `keeps ${parts.join(', ')}` : 'keeps only the newest';
}

function nextEl(at) {
  const t = Date.parse(at);
  if (Number.isNaN(t)) return null;
  return h('time.bk-sched-next', { datetime: at, title: `The next scheduled backup: ${fmtTime(at)}` },
    t - Date.now() < 10000 ? 'next due now' : `next ${fmtAgo(at)}`);
}

// The API's message for a field, shown next to it: without the field's name
// in front ("every_minutes: from 1 to 10080 (a week)").
function fieldMessage(err) {
  const m = String(err.message || '').replace(new RegExp(`^${err.field}:\\s*`), '');
  return m ? m[0].toUpperCase() + m.slice(1) : describe(err);
}

// schedulePanel shows a desktop's backup schedule in a line ("Not
// scheduled" without one) and edits it in place. ctx: targets() (a list;
// null: not an admin, who names none), names() (target id -> name) and
// lastTarget() (the name of the target the newest backup went to). Each load
// calls set(answer, stamp) with {schedule} (null: none) or {error} and the
// stamp() taken before it asked: an answer older than a change made here is
// dropped. While the editor is open, loads leave it be: what is typed stays.
function schedulePanel(id, desk, ctx) {
  let schedule; // undefined: not loaded; null: none
  let loadError = null;
  let editor = null;
  let changes = 0;
  const deskName = () => desk()?.name || 'the desktop';

  const text = h('div.bk-sched-text');
  const openBtn = h('button.btn.btn-sm.bk-sched-open', { type: 'button', onclick: () => edit() }, icon('clock', 14), 'Schedule backups…');
  const editBtn = h('button.btn.btn-sm.bk-sched-edit', { type: 'button', title: 'Change how often and how many are kept', onclick: () => edit() }, 'Edit');
  const stopBtn = h('button.btn.btn-sm.bk-sched-stop', { type: 'button', title: 'Stop the scheduled backups; the backups taken stay', onclick: () => stop() }, icon('stop', 14), 'Stop');
  const line = h('div.bk-sched-line', h('div.bk-sched-what', icon('clock', 16), text), h('div.bk-sched-buttons', openBtn, editBtn, stopBtn));
  const lineError = h('div.form-error.bk-sched-error', { role: 'alert', hidden: true });
  const el = h('section.bk-sched', { hidden: true, 'aria-label': 'Backup schedule' }, line, lineError);

  function render() {
    el.hidden = schedule === undefined && !loadError;
    el.dataset.scheduled = String(!!schedule);
    line.hidden = !!editor;
    openBtn.hidden = schedule !== null;
    editBtn.hidden = !schedule;
    stopBtn.hidden = !schedule;
    if (schedule === undefined) {
      clear(text, h('span.bk-sched-bad', `Could not load the schedule: ${describe(loadError)}`));
    } else if (!schedule) {
      clear(text, h('strong', 'Not scheduled'), h('span.muted', ' — bureau can back it up by itself every so often and thin its backups out.'));
    } else {
      const s = schedule;
      const where = ctx.targets() === null ? '' : ` to ${ctx.names().get(s.target_id) || s.target_id}`;
      const next = nextEl(s.next_at);
      clear(text, h('span', { title: s.updated_by ? `Set by ${s.updated_by}, ${fmtTime(s.updated_at)}` : null },
        h('strong', `Every ${fmtEvery(s.every_minutes)}${where}`), ` · ${keepsText(s)}`, next ? [' · ', next] : null));
    }
  }

  function set(res, stamp) {
    if (stamp !== changes) return;
    if (res.error) {
      if (schedule === undefined) loadError = res.error;
    } else {
      schedule = res.schedule;
      loadError = null;
    }
    render();
  }

  async function stop() {
    const ok = await confirmDialog({
      title: `Stop scheduled backups of ${deskName()}?`,
      message: 'No more backups of it are taken by themselves, and its backups are no longer thinned out. The backups taken stay.',
      confirmLabel: 'Stop schedule',
    });
    if (!ok) return;
    lineError.hidden = true;
    try {
      await busy(stopBtn, () => del(`/desktops/${seg(id)}/backup-schedule`));
      changes++;
      schedule = null;
      toast(`Backups of ${deskName()} are no longer scheduled; the backups taken stay.`, 'success');
      render();
      openBtn.focus();
    } catch (e) {
      lineError.hidden = false;
      lineError.textContent = `Could not stop the schedule: ${describe(e)}`;
    }
  }

  function edit() {
    lineError.hidden = true;
    const s = schedule || SCHEDULE_DEFAULTS;
    const targets = ctx.targets();
    const fields = new Map(); // the API's field name -> {input, err}
    const field = (name, input) => {
      const err = h('small.bk-field-error', { id: `bk-sched-${name}-error`, role: 'alert', hidden: true });
      fields.set(name, { input, err });
      return err;
    };
    const num = (name, value, attrs) => h(`input#bk-sched-${name}`, { type: 'number', inputmode: 'numeric', step: 1, value: String(value), ...attrs });

    // The target: admins pick one; an owner's schedule goes where the admin's targets allow.
    let targetSel = null;
    let targetField = null;
    if (targets) {
      const want = schedule ? ctx.names().get(schedule.target_id) : ctx.lastTarget();
      targetSel = h('select#bk-sched-target', { hidden: !targets.length },
        targets.map((t) => h('option', { value: t.name, selected: t.name === want }, `${t.name} (${t.kind})`)));
      targetField = h('div.field.bk-sched-target', { dataset: { field: 'target' } },
        h('label', { for: 'bk-sched-target' }, 'Target'), targetSel,
        targets.length ? null : h('small.hint', 'No backup targets yet: ', h('a', { href: '#/backups' }, 'add one'), '.'),
        field('target', targetSel));
    }

    const every = num('every_minutes', s.every_minutes, { min: 1, max: 10080, 'aria-describedby': 'bk-sched-every-hint' });
    const presets = EVERY_PRESETS.map(([m, label]) => h('button.btn.btn-sm.bk-preset', {
      type: 'button', dataset: { minutes: String(m) }, title: `Every ${fmtEvery(m)} (${m} minutes)`,
      onclick: () => { every.value = String(m); markPreset(); },
    }, label));
    const markPreset = () => presets.forEach((b) => b.setAttribute('aria-pressed', String(every.value.trim() === b.dataset.minutes)));
    every.addEventListener('input', markPreset);
    markPreset();
    const everyField = h('div.field.bk-sched-every', { dataset: { field: 'every_minutes' } },
      h('label', { for: 'bk-sched-every_minutes' }, 'Every'),
      h('div.bk-every', h('span.bk-unit', every, h('span.muted', 'minutes')), h('div.bk-presets', { role: 'group', 'aria-label': 'Common periods' }, presets)),
      field('every_minutes', every),
      h('small.hint#bk-sched-every-hint', 'Up to a week (10080). The first scheduled backup is due one period after you save.'));

    const keepField = h('fieldset.field.bk-keeps',
      h('legend', 'Keep'),
      h('div.bk-keep-grid', KEEPS.map(([name, label, why]) => {
        const input = num(name, s[name], { min: 0, max: 1000, title: why });
        return h('div.field.bk-keep', { dataset: { field: name } }, h('label', { for: `bk-sched-${name}`, title: why }, label), input, field(name, input));
      })),
      h('small.hint', 'The newest backup always stays, and so do the last N and the newest of each of N hours, days and weeks; after each backup the others in that target are deleted, older backups taken by hand included.'));

    const general = h('div.form-error.bk-sched-form-error', { role: 'alert', hidden: true });
    const save = h('button.btn.btn-primary.bk-sched-save', { type: 'submit' }, icon('clock', 14), schedule ? 'Save schedule' : 'Schedule backups');
    const cancel = h('button.btn.bk-sched-cancel', { type: 'button', onclick: () => close() }, 'Cancel');

    const clearErrors = () => {
      general.hidden = true;
      fields.forEach(({ input, err }) => { err.hidden = true; input.removeAttribute('aria-invalid'); });
    };
    const showField = (name, msg) => {
      const f = fields.get(name);
      f.err.hidden = false;
      f.err.textContent = msg;
      f.input.setAttribute('aria-invalid', 'true');
      f.input.setAttribute('aria-errormessage', f.err.id);
      if (!f.input.hidden) f.input.focus();
    };

    const form = h('form.form.bk-sched-form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        clearErrors();
        const req = {};
        // The counts: whole numbers (their ranges are the API's to say).
        const bad = [];
        for (const name of ['every_minutes', ...KEEPS.map(([n]) => n)]) {
          const v = fields.get(name).input.value.trim();
          if (v === '' || !Number.isInteger(Number(v))) bad.push(name);
          else req[name] = Number(v);
        }
        if (bad.length) {
          bad.reverse().forEach((name) => showField(name, 'Give a whole number.')); // the first one focused
          return;
        }
        if (targetSel) {
          if (targetSel.value) req.target = targetSel.value;
        } else if (schedule?.target_id) req.target = schedule.target_id; // an owner's edit keeps the target
        try {
          const got = await busy(save, () => put(`/desktops/${seg(id)}/backup-schedule`, req));
          changes++;
          schedule = got;
          close();
          toast(`Backups of ${deskName()} scheduled: every ${fmtEvery(got.every_minutes)}, the first ${fmtAgo(got.next_at)}.`, 'success');
        } catch (ex) {
          if (fields.has(ex.field)) showField(ex.field, fieldMessage(ex));
          else {
            general.hidden = false;
            general.textContent = describe(ex);
          }
        }
      },
    },
    h('h3', schedule ? 'Edit the backup schedule' : 'Schedule backups'),
    h('div.bk-sched-grid', targetField, everyField), keepField, general,
    h('div.actions', save, cancel));
    form.addEventListener('keydown', (e) => { if (e.key === 'Escape') { e.preventDefault(); close(); } });

    function close() {
      form.remove();
      editor = null;
      render();
      (schedule ? editBtn : openBtn).focus();
    }

    editor = form;
    el.append(form);
    render();
    (targetSel && !targetSel.hidden && !schedule ? targetSel : every).focus();
  }

  return { el, set, stamp: () => changes };
}

// ---------- a desktop's Backups tab ----------
export function backupsTab(box, id, desk) {
  const body = h('div', loading());
  const targetSelect = h('select.bk-target-select', { 'aria-label': 'Backup target', hidden: true });
  const targetHint = h('span.muted.small.bk-target-hint');
  const submit = h('button.btn.btn-primary.bk-now', { type: 'submit' }, icon('archive', 14), 'Back up now');
  const formError = h('div.form-error.bk-form-error', { role: 'alert', hidden: true });
  let backups = null;
  let targets; // undefined: not known yet; null: not an admin
  let names = new Map(); // target id -> name
  let picked = false; // the target was chosen by hand: polling leaves it
  targetSelect.addEventListener('change', () => { picked = true; });

  const acts = backupActions(render, {
    targetName: (tid) => names.get(tid),
    removed: (b) => { backups = backups?.filter((x) => x.id !== b.id) || null; render(); poll.now(); },
  });
  const form = h('form.inline-form.bk-form', {
    novalidate: true,
    onsubmit: async (e) => {
      e.preventDefault();
      formError.hidden = true;
      delete formError.dataset.refresh;
      targetSelect.removeAttribute('aria-invalid');
      const req = targetSelect.value && !targetSelect.hidden ? { target: targetSelect.value } : {};
      try {
        const b = await busy(submit, () => post(`/desktops/${seg(id)}/backups`, req));
        toast(`Backing up ${desk()?.name || 'the desktop'}${b?.kind ? ` (${b.kind})` : ''}…`, 'success');
        if (b?.id && backups && !backups.some((x) => x.id === b.id)) { backups.unshift(b); render(); }
        poll.now();
      } catch (err) {
        formError.hidden = false;
        formError.textContent = describe(err);
        if (err.field === 'target' && !targetSelect.hidden) targetSelect.setAttribute('aria-invalid', 'true');
      }
    },
  }, targetSelect, submit);
  const sched = schedulePanel(id, desk, {
    targets: () => targets,
    names: () => names,
    lastTarget: () => (backups?.length ? names.get(backups[0].target_id) : undefined),
  });
  box.append(h('div.tab-head.bk-head',
    h('p.muted', 'Copies of the data disk (', h('code', '/home'), ') in a backup target, compressed and encrypted; after the first, only what changed is read. ',
      'They outlive the desktop: ', h('a', { href: '#/backups' }, 'all backups'), ' lists those of deleted desktops too.'),
    h('div.bk-tools', form, targetHint)),
  formError, sched.el, body);

  function renderTargets() {
    if (targets === undefined) return;
    if (targets === null) { // not an admin: the API picks the only target there is
      targetSelect.hidden = true;
      clear(targetHint);
      return;
    }
    const keep = targetSelect.value;
    clear(targetSelect, targets.map((t) => h('option', { value: t.name, selected: t.name === keep }, `${t.name} (${t.kind})`)));
    targetSelect.hidden = targets.length === 0;
    clear(targetHint, targets.length ? null : ['No backup targets yet: ', h('a', { href: '#/backups' }, 'add one'), '.']);
  }

  function render() {
    if (!backups) return;
    if (!backups.length) {
      clear(body, h('div.empty.empty-sm.bk-empty', h('p', 'No backups of this desktop yet.')));
      return;
    }
    // Targets are named to admins; an owner's backups go where the admin said.
    const showTarget = targets !== null;
    const cols = showTarget ? 7 : 6;
    clear(body, table('bk-table', ['When', 'Kind', showTarget ? 'Target' : null, 'Consistency', 'Size', 'State', ''].filter((x) => x !== null), backups.flatMap((b) => [
      h('tr.bk-row', { dataset: { backup: b.id, kind: b.kind || '', state: b.state || '' } },
        h('td.nowrap', whenEl(b)),
        h('td', kindEl(b)),
        showTarget ? h('td.nowrap.bk-target', names.get(b.target_id) || h('code', { title: 'Target id' }, b.target_id)) : null,
        h('td.nowrap', consistencyEl(b.consistency)),
        h('td', sizesEl(b)),
        h('td.bk-state-cell', stateEl(b)),
        h('td.row-actions', acts.buttons(b))),
      acts.checkRow(b, cols),
    ])));
  }

  async function load() {
    const stamp = sched.stamp();
    try {
      const [b, t, sc] = await Promise.all([
        get(`/desktops/${seg(id)}/backups`),
        targets === undefined ? loadTargets().catch(() => undefined) : Promise.resolve(targets),
        // 404: the desktop has no schedule.
        get(`/desktops/${seg(id)}/backup-schedule`).then((x) => ({ schedule: x }), (e) => (e.status === 404 ? { schedule: null } : { error: e })),
      ]);
      if (t !== targets) {
        targets = t;
        names = new Map((targets || []).map((x) => [x.id, x.name]));
        renderTargets();
      }
      backups = newestFirst(acts.live(b?.backups || []));
      // The next backup goes, by default, where the last one went (an incremental one there).
      const last = backups.length && names.get(backups[0].target_id);
      if (!picked && last) targetSelect.value = last;
      render();
      sched.set(sc, stamp);
      if (formError.dataset.refresh) { formError.hidden = true; delete formError.dataset.refresh; }
    } catch (e) {
      if (!backups) clear(body, h('div.empty.empty-error.empty-sm', h('p', describe(e)),
        h('button.btn.btn-sm', { type: 'button', onclick: () => poll.now() }, icon('refresh', 14), 'Try again')));
      else if (formError.hidden || formError.dataset.refresh) {
        formError.hidden = false;
        formError.dataset.refresh = 'true';
        formError.textContent = `Could not refresh the backups: ${describe(e)}`;
      }
    }
    return !!backups?.some((x) => x.state === 'running');
  }
  const poll = poller(load);
  return () => poll.stop();
}

// ---------- the Backups page ----------
export function backupsView(root) {
  const count = h('span.count');
  const refreshBtn = h('button.btn', { type: 'button', onclick: () => busy(refreshBtn, () => poll.now()) }, icon('refresh', 14), 'Refresh');
  const targetsBody = h('div', loading('Loading targets…'));
  const targetsError = h('div.form-error.bk-target-error', { role: 'alert', hidden: true });
  const addBtn = h('button.btn.btn-sm.btn-primary.bk-add-open', { type: 'button', onclick: () => showForm(true) }, icon('plus', 14), 'Add target');
  const filter = h('select.bk-filter', { 'aria-label': 'Only the backups in this target', onchange: () => { backups = null; clear(backupsBody, loading()); poll.now(); } },
    h('option', { value: '' }, 'All targets'));
  const backupsBody = h('div', loading('Loading backups…'));
  const targetsPanel = h('section.panel.bk-panel.bk-targets',
    h('div.panel-head', h('h2', 'Targets'), addBtn));
  const addForm = targetForm(() => { showForm(false); poll.now(); });
  targetsPanel.append(addForm.el, targetsError, targetsBody);
  root.append(
    h('div.page-head',
      h('div', h('h1', 'Backups', count), h('p.muted', 'Backups of desktops’ data disks, those of deleted desktops too — restoring one is how a desktop comes back — and the targets they go to.')),
      refreshBtn),
    targetsPanel,
    h('section.panel.bk-panel.bk-all',
      h('div.panel-head', h('h2', 'All backups'), filter),
      backupsBody));

  let targets; // undefined: not loaded; null: not an admin
  let backups = null;
  let targetsLoadError = null;
  const acts = backupActions(renderBackups, {
    targetName: (id) => targetName(id),
    removed: (b) => { backups = backups?.filter((x) => x.id !== b.id) || null; renderBackups(); poll.now(); },
  });

  function showForm(on) {
    addForm.el.hidden = !on;
    addBtn.hidden = on || targets === null;
    if (on) addForm.focus();
  }

  const targetName = (id) => targets?.find((t) => t.id === id)?.name;

  function whereEl(t) {
    if (t.kind === 'dir') return h('code', t.dir);
    const s = t.s3 || {};
    return h('span', h('code', `${s.insecure ? 'http' : 'https'}://${s.endpoint}/${s.bucket}${s.prefix ? `/${s.prefix.replace(/^\/+/, '')}` : ''}`),
      h('div.muted.small', [s.region ? `region ${s.region}` : null, s.access_key ? `key ${s.access_key}` : null].filter(Boolean).join(' · ')));
  }

  function renderTargets() {
    if (targets === undefined) {
      if (targetsLoadError) clear(targetsBody, h('div.empty.empty-error.empty-sm', h('p', `Could not load the targets: ${describe(targetsLoadError)}`)));
      return;
    }
    if (targets === null) { // not an admin: their own backups only
      targetsPanel.hidden = true;
      filter.hidden = true;
      return;
    }
    addBtn.hidden = !addForm.el.hidden;
    const keep = filter.value;
    clear(filter, h('option', { value: '' }, 'All targets'), targets.map((t) => h('option', { value: t.id, selected: t.id === keep }, t.name)));
    if (!targets.length) {
      clear(targetsBody, h('div.empty.empty-sm', h('p', 'No backup targets yet. Add a directory or an S3-compatible bucket to back desktops up to.')));
      return;
    }
    clear(targetsBody, table('bk-targets-table', ['Name', 'Kind', 'Location', 'Created', ''], targets.map((t) => {
      const rm = h('button.btn.btn-sm.btn-danger-ghost.bk-remove', { type: 'button', title: `Remove target ${t.name}`, onclick: () => removeTarget(t, rm) }, icon('trash', 14), h('span', 'Remove'));
      return h('tr.bk-target-row', { dataset: { target: t.name, kind: t.kind } },
        h('td', h('strong', t.name)),
        h('td', h('span.tag', t.kind === 'dir' ? 'directory' : 'S3')),
        h('td.wrap', whereEl(t)),
        h('td.nowrap', timeEl(t.created_at), t.created_by ? h('div.muted.small', `by ${t.created_by}`) : null),
        h('td.row-actions', rm));
    })));
  }

  async function removeTarget(t, btn) {
    const ok = await confirmDialog({
      title: `Remove target ${t.name}?`,
      message: ['bureau forgets the target and the backups it recorded there. The backups themselves stay in it: adding the target again lists them again.',
        'It cannot be removed while a backup to it runs.'],
      confirmLabel: 'Remove target', danger: true,
    });
    if (!ok) return;
    targetsError.hidden = true;
    try {
      await busy(btn, () => del(`/backup-targets/${seg(t.id)}`));
      toast(`Target ${t.name} removed.`, 'success');
      if (filter.value === t.id) filter.value = '';
    } catch (e) {
      targetsError.hidden = false;
      targetsError.textContent = `Could not remove ${t.name}: ${describe(e)}`;
    }
    poll.now();
  }

  const deskLink = (b) => {
    const d = store.desktops.get(b.desktop_id);
    if (d) return h('a.bk-desktop', { href: `#/desktops/${encodeURIComponent(b.desktop_id)}/backups`, title: `${d.name}’s Backups tab` }, h('strong', d.name));
    return h('span.bk-desktop', h('strong', b.desktop_name || b.desktop_id));
  };
  const deleted = (b) => store.loaded && !store.desktops.has(b.desktop_id)
    ? h('span.tag.bk-deleted', { title: 'The desktop was deleted: restoring a backup brings it back as a new one' }, 'deleted') : null;

  function renderBackups() {
    if (!backups) return;
    count.textContent = backups.length ? String(backups.length) : '';
    if (!backups.length) {
      clear(backupsBody, h('div.empty.empty-sm', h('p', filter.value ? 'No backups in this target.' : 'No backups yet. Back a desktop up from its Backups tab.')));
      return;
    }
    const showTarget = targets !== null;
    const cols = showTarget ? 8 : 7;
    clear(backupsBody, table('bk-table.bk-all-table', ['Desktop', 'When', 'Kind', showTarget ? 'Target' : null, 'Consistency', 'Size', 'State', ''].filter((x) => x !== null), backups.flatMap((b) => [
      h('tr.bk-row', { dataset: { backup: b.id, kind: b.kind || '', state: b.state || '', desktop: b.desktop_id } },
        h('td.nowrap', deskLink(b), h('div.muted.small.bk-owner', deleted(b), b.owner || null)),
        h('td.nowrap', whenEl(b)),
        h('td', kindEl(b)),
        showTarget ? h('td.nowrap.bk-target', targetName(b.target_id) || h('code', { title: 'Target id' }, b.target_id)) : null,
        h('td.nowrap', consistencyEl(b.consistency)),
        h('td', sizesEl(b)),
        h('td.bk-state-cell', stateEl(b)),
        h('td.row-actions', acts.buttons(b))),
      acts.checkRow(b, cols),
    ])));
  }

  async function load() {
    const q = filter.value ? `?target=${encodeURIComponent(filter.value)}` : '';
    const [t, b] = await Promise.allSettled([loadTargets(), get(`/backups${q}`)]);
    if (t.status === 'fulfilled') { targets = t.value; targetsLoadError = null; } else targetsLoadError = t.reason;
    renderTargets();
    if (b.status === 'fulfilled') {
      backups = newestFirst(acts.live(b.value?.backups || []));
      renderBackups();
    } else if (b.reason?.status === 404 && filter.value) { // the target filtered on was removed
      filter.value = '';
      return load();
    } else if (!backups) {
      clear(backupsBody, h('div.empty.empty-error.empty-sm', h('p', `Could not load the backups: ${describe(b.reason)}`)));
    } else {
      toast(`Could not refresh the backups: ${describe(b.reason)}`, 'error');
    }
    return !!backups?.some((x) => x.state === 'running');
  }

  const poll = poller(load);
  // Whether a backup's desktop still exists comes with the desktop list.
  const unsub = subscribe((reason) => { if (reason === 'list' || reason === 'remove') renderBackups(); });
  return () => { poll.stop(); unsub(); };
}

// The "Add target" form: a directory or an S3-compatible bucket. On an error
// the API's message shows above its buttons and what was typed stays.
function targetForm(onAdded) {
  const field = (id, label, input, hint) => h('div.field', { dataset: { field: id } }, h('label', { for: `bk-${id.replace('.', '-')}` }, label), input, hint ? h('small.hint', hint) : null);
  const text = (id, attrs = {}) => h(`input#bk-${id.replace('.', '-')}`, { type: 'text', autocomplete: 'off', spellcheck: false, ...attrs });
  const inputs = {
    name: text('name', { maxlength: 63, placeholder: 'e.g. offsite', required: true }),
    dir: text('dir', { placeholder: '/mnt/backups/bureau' }),
    's3.endpoint': text('s3.endpoint', { placeholder: 's3.example.com or 10.0.0.5:8333' }),
    's3.bucket': text('s3.bucket', { placeholder: 'bureau-backups' }),
    's3.prefix': text('s3.prefix', { placeholder: 'optional' }),
    's3.region': text('s3.region', { placeholder: 'optional, e.g. us-east-1' }),
    's3.access_key': text('s3.access_key'),
    's3.secret_key': h('input#bk-s3-secret_key', { type: 'password', autocomplete: 'new-password', spellcheck: false }),
  };
  const insecure = h('input#bk-s3-insecure', { type: 'checkbox' });
  const kinds = ['dir', 's3'].map((k, i) => h('input', { type: 'radio', name: 'bk-kind', value: k, checked: i === 0, onchange: () => showKind() }));
  const kind = () => kinds.find((r) => r.checked)?.value || 'dir';
  const err = h('div.form-error.bk-add-error', { role: 'alert', hidden: true });
  const submit = h('button.btn.btn-primary.bk-add', { type: 'submit' }, icon('plus', 14), 'Add target');
  const cancel = h('button.btn', { type: 'button', onclick: () => { reset(); onAdded(null); } }, 'Cancel');

  const dirBox = h('div.bk-kind-fields', { dataset: { kind: 'dir' } },
    field('dir', 'Directory', inputs.dir, 'An absolute path on bureau’s host: a local disk or a mounted share.'));
  const s3Box = h('div.bk-kind-fields.bk-s3-grid', { dataset: { kind: 's3' } },
    field('s3.endpoint', 'Endpoint', inputs['s3.endpoint'], 'host:port of the store (MinIO, SeaweedFS, Garage, AWS S3…).'),
    field('s3.bucket', 'Bucket', inputs['s3.bucket']),
    field('s3.prefix', 'Prefix', inputs['s3.prefix']),
    field('s3.region', 'Region', inputs['s3.region']),
    field('s3.access_key', 'Access key', inputs['s3.access_key']),
    field('s3.secret_key', 'Secret key', inputs['s3.secret_key'], 'Kept encrypted; never shown again.'),
    h('label.bk-insecure', insecure, ' Plain HTTP (a store on loopback or a private network)'));

  function showKind() {
    dirBox.hidden = kind() !== 'dir';
    s3Box.hidden = kind() !== 's3';
  }

  function clearInvalid() { Object.values(inputs).forEach((el) => el.removeAttribute('aria-invalid')); }

  function reset() {
    Object.values(inputs).forEach((el) => { el.value = ''; });
    insecure.checked = false;
    kinds[0].checked = true;
    err.hidden = true;
    clearInvalid();
    showKind();
  }

  const el = h('form.form.bk-add-form', {
    hidden: true,
    novalidate: true,
    onsubmit: async (e) => {
      e.preventDefault();
      err.hidden = true;
      clearInvalid();
      const v = (k) => inputs[k].value.trim();
      const body = { name: v('name'), kind: kind() };
      if (body.kind === 'dir') body.dir = v('dir');
      else {
        body.s3 = { endpoint: v('s3.endpoint'), bucket: v('s3.bucket'), prefix: v('s3.prefix'), region: v('s3.region'),
          access_key: v('s3.access_key'), secret_key: inputs['s3.secret_key'].value, insecure: insecure.checked };
      }
      try {
        const t = await busy(submit, () => post('/backup-targets', body));
        toast(`Target ${t?.name || body.name} added.`, 'success');
        reset();
        onAdded(t);
      } catch (ex) {
        err.hidden = false;
        err.textContent = describe(ex);
        // The secret key's field is named for the pair (access_key and secret_key).
        const bad = inputs[ex.field] || (ex.field === 'kind' ? kinds[0] : null);
        if (bad) { bad.setAttribute('aria-invalid', 'true'); bad.focus(); }
      }
    },
  },
  h('div.bk-add-grid',
    field('name', 'Name', inputs.name, 'Lowercase letters, digits and “-”.'),
    h('fieldset.field.bk-kinds', h('legend', 'Kind'),
      h('div.bk-kind-choice',
        h('label', kinds[0], ' Directory'),
        h('label', kinds[1], ' S3-compatible bucket')))),
  dirBox, s3Box, err,
  h('div.actions', submit, cancel),
  h('p.muted.small', 'bureau reaches the target before adding it; the backups it already holds (written with this install’s key) are listed at once.'));
  showKind();
  return { el, focus: () => inputs.name.focus() };
}
