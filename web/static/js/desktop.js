// Desktop states, lifecycle actions, console sessions and screenshots, shared by the views.
import { api, post, del, seg, describe, readOnly } from './api.js';
import { upsert, remove } from './store.js';
import { h, icon, toast, confirmDialog, infoDialog, busy } from './ui.js';

const TRANSIENT = ['creating', 'starting', 'stopping', 'rebooting', 'pausing', 'hibernating', 'resuming', 'reverting', 'reimaging', 'migrating', 'deleting'];

// Paused by a caller, in an idle tier (napping, sleeping) or hibernated:
// use wakes it.
export const WAKEABLE = ['paused', 'napping', 'sleeping', 'hibernated'];

export function stateKind(state) {
  if (state === 'running') return 'ok';
  if (TRANSIENT.includes(state)) return 'busy';
  if (WAKEABLE.includes(state)) return 'sleep';
  if (state === 'error' || state === 'crashed' || state === 'unreachable') return 'bad';
  return 'idle';
}

// What the steps the manager records mean (internal/manager: create, start,
// resume and delete record them; cmd/bureau/phases.go has the same list).
const STEPS = {
  image: 'copying the base image to its host',
  disks: 'making the disks',
  define: 'defining the VM',
  start: 'starting the VM',
  restore: 'restoring its memory',
  'warm-disks': "copying the warm template's disks",
  'warm-restore': 'restoring the warm template',
  'warm-identity': 'giving it its own identity',
  destroy: 'stopping the VM',
  undefine: 'removing the VM',
  files: 'removing its files',
};

/** Where d's operation is ("starting the VM"), or '' when none runs or no step is recorded. */
export function phaseOf(d) {
  if (!d?.operation || !d.operation_step) return '';
  const copying = /^image (\d+%)$/.exec(d.operation_step);
  if (copying) return `${STEPS.image} (${copying[1]})`;
  return STEPS[d.operation_step] || d.operation_step;
}

/** The state; with d, also the step its operation is at. */
export function statePill(state, d) {
  const kind = stateKind(state);
  const phase = phaseOf(d);
  return h(`span.pill.pill-${kind}`, { title: `State: ${state}${phase ? ` — ${phase}` : ''}` }, h('span.dot'), state || 'unknown',
    phase ? h('span.pill-note', `· ${phase}`) : null);
}

function fmtElapsed(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** How long d's operation has run ("1m05s"), kept up to date; null when none runs. */
export function elapsedEl(d) {
  if (!d?.operation || !d.operation_started_at) return null;
  const since = Date.parse(d.operation_started_at);
  if (Number.isNaN(since)) return null;
  return h('span.elapsed', { dataset: { since: String(since) }, title: `Since ${new Date(since).toLocaleTimeString()}` }, fmtElapsed(Date.now() - since));
}

// One timer for every elapsed time on the page.
setInterval(() => {
  for (const el of document.querySelectorAll('.elapsed[data-since]')) el.textContent = fmtElapsed(Date.now() - Number(el.dataset.since));
}, 1000);

// Which states each operation may start from (mirrors internal/desktop/state.go).
const FROM = {
  start: ['stopped', 'hibernated', 'crashed', 'error'],
  resume: ['paused', 'napping', 'sleeping'],
  stop: ['running', 'paused', 'napping', 'sleeping', 'hibernated', 'error'],
  reboot: ['running'],
  hibernate: ['running', 'paused', 'napping', 'sleeping'],
  delete: ['creating', 'running', 'paused', 'napping', 'sleeping', 'hibernated', 'stopped', 'crashed', 'error'],
  // The console page wakes paused, napping, sleeping and hibernated desktops and waits out transitions.
  console: ['running', 'paused', 'napping', 'sleeping', 'hibernated', 'creating', 'starting', 'rebooting', 'pausing', 'hibernating', 'resuming', 'reverting', 'reimaging', 'migrating'],
  revert: ['running', 'paused', 'napping', 'sleeping', 'stopped'],
};

export const can = (op, d) => !!d && FROM[op].includes(d.state);

const ACTIONS = {
  start: {
    label: 'Start', icon: 'play',
    confirm: (d) => ({
      title: `Start ${d.name}?`,
      message: d.state === 'hibernated'
        ? 'The desktop resumes from hibernation with its programs as they were.'
        : 'The desktop boots. Under software emulation this can take a few minutes.',
      confirmLabel: 'Start',
    }),
  },
  resume: {
    label: 'Resume', icon: 'play',
    confirm: (d) => ({ title: `Resume ${d.name}?`, message: 'The paused desktop continues where it was frozen.', confirmLabel: 'Resume' }),
  },
  stop: {
    label: 'Stop', icon: 'stop',
    confirm: (d) => ({
      title: `Stop ${d.name}?`,
      message: 'The desktop is shut down (ACPI power-off, forced after 90 s). Running programs are closed; its disks are kept.',
      confirmLabel: 'Stop', danger: true,
    }),
  },
  reboot: {
    label: 'Reboot', icon: 'reboot',
    confirm: (d) => ({
      title: `Reboot ${d.name}?`,
      message: 'The desktop restarts. Unsaved work in running programs is lost.',
      confirmLabel: 'Reboot', danger: true,
    }),
  },
  hibernate: {
    label: 'Hibernate', icon: 'moon',
    confirm: (d) => ({
      title: `Hibernate ${d.name}?`,
      message: 'Its memory is saved to disk and its CPU and memory are freed. Starting it again (or opening its console) brings the running programs back.',
      confirmLabel: 'Hibernate',
    }),
  },
};

/** Asks, then runs a lifecycle operation. Returns true when the API accepted it. */
export async function runAction(op, d, btn) {
  if (op === 'delete') return deleteDesktop(d, btn);
  const a = ACTIONS[op];
  const ok = await confirmDialog(a.confirm(d));
  if (!ok) return false;
  try {
    const res = await busy(btn, () => post(`/desktops/${seg(d.id)}/${op}`));
    if (res && res.id) upsert(res);
    toast(`${a.label}: ${d.name} — ${res?.state || 'accepted'}`, 'success');
    return true;
  } catch (e) {
    toast(`Could not ${op} ${d.name}: ${describe(e)}`, 'error');
    return false;
  }
}

export async function deleteDesktop(d, btn) {
  const ok = await confirmDialog({
    title: `Delete ${d.name}?`,
    message: [
      'The virtual machine, its OS disk and its snapshots are removed.',
      h('p', h('strong', 'The data disk (/home) is kept'), ' — the server tells you where, so it can be recovered.'),
    ],
    checkbox: 'Also delete the data disk (cannot be undone)',
    checkboxHint: 'Everything in /home is destroyed.',
    confirmLabel: 'Delete desktop',
    danger: true,
  });
  if (!ok) return false;
  try {
    const q = ok.checked ? '?delete_data=true' : '';
    const res = await busy(btn, () => del(`/desktops/${seg(d.id)}${q}`));
    remove(d.id);
    if (res?.data_deleted) {
      toast(`Deleted ${d.name} and its data disk.`, 'success');
    } else {
      const path = res?.data_disk_kept || res?.desktop?.data_disk_path;
      infoDialog(`Deleted ${d.name}`, [
        h('p', 'The desktop is gone. Its data disk was kept:'),
        // Host paths are shown to admins only.
        path ? h('pre.code', path) : h('p.muted', 'An administrator can find it on the host if you need its contents back.'),
      ]);
    }
    return true;
  } catch (e) {
    toast(`Could not delete ${d.name}: ${describe(e)}`, 'error');
    return false;
  }
}

/** Opens a console tab for the desktop (view-only or interactive). */
export async function openConsole(d, viewOnly, btn) {
  // Open the tab synchronously (inside the click) so popup blockers allow it.
  const w = window.open('', '_blank');
  if (w) {
    try {
      w.document.title = 'Opening console…';
      w.document.body.style.cssText = 'font:16px system-ui,sans-serif;color:#555;padding:2rem';
      w.document.body.textContent = `Opening the console of ${d.name}…`;
    } catch { /* ignore */ }
  }
  try {
    const res = await busy(btn, () => post(`/desktops/${seg(d.id)}/console`, { view_only: !!viewOnly }));
    if (!res?.url) throw new Error('The server did not return a console URL.');
    if (w && !w.closed) {
      w.opener = null;
      w.location.href = res.url;
    } else {
      infoDialog('Console ready', [
        h('p', 'Your browser blocked the new tab. Open the console here:'),
        h('p', h('a.btn.btn-primary', { href: res.url, target: '_blank', rel: 'noopener' }, icon('monitor'), viewOnly ? 'Open view-only console' : 'Open console')),
      ]);
    }
    return res;
  } catch (e) {
    if (w && !w.closed) w.close();
    toast(`Could not open the console of ${d.name}: ${describe(e)}`, 'error');
    return null;
  }
}

function actionButton(op, d, { compact = false } = {}) {
  const a = ACTIONS[op] || { label: 'Delete', icon: 'trash' };
  const danger = op === 'delete';
  const btn = h(`button.btn${compact ? '.btn-sm' : ''}${danger ? '.btn-danger-ghost' : ''}`, {
    type: 'button', title: a.label, 'aria-label': `${a.label} ${d.name}`,
    onclick: (e) => { e.stopPropagation(); runAction(op, d, btn); },
  }, icon(a.icon, 14), compact && danger ? null : h('span', a.label));
  btn.disabled = !can(op, d) || readOnly();
  if (readOnly()) btn.title = `${a.label}: a viewer only watches`;
  return btn;
}

/** The Start/Resume, Stop, Reboot, Hibernate, Delete buttons for a desktop. */
export function actionButtons(d, opts = {}) {
  const first = d.state === 'paused' ? 'resume' : 'start';
  const ops = opts.ops || ['start', 'stop', 'reboot', 'hibernate', 'delete'];
  return h('div.actions', ops.map((op) => actionButton(op === 'start' ? first : op, d, opts)));
}

export function deleteButton(d, opts = {}) { return actionButton('delete', d, opts); }

/** The Console and View only buttons. */
export function consoleButtons(d, { compact = false } = {}) {
  const sm = compact ? '.btn-sm' : '';
  const enabled = can('console', d);
  const title = enabled ? '' : `No console while the desktop is ${d.state}.`;
  // A viewer's consoles are view-only whatever it asks: offer that one only.
  const b1 = readOnly() ? null : h(`button.btn.btn-primary${sm}`, { type: 'button', disabled: !enabled, title: title || 'Open an interactive console in a new tab', onclick: (e) => { e.stopPropagation(); openConsole(d, false, b1); } }, icon('monitor', 14), h('span', 'Console'));
  const b2 = h(`button.btn${sm}`, { type: 'button', disabled: !enabled, title: title || 'Watch the screen without keyboard or mouse', onclick: (e) => { e.stopPropagation(); openConsole(d, true, b2); } }, icon('eye', 14), h('span', 'View only'));
  return h('div.actions', b1, b2);
}

// ---------- screenshots ----------
// Cache of the last screenshot per desktop and width: {url, inflight, at, error}.
const shots = new Map();
const shotListeners = new Set();
export function onShot(fn) { shotListeners.add(fn); return () => shotListeners.delete(fn); }
export const shotOf = (id, width) => shots.get(`${id}:${width}`);

/** Fetches a screenshot unless one is in flight or fresh (younger than minAge ms). */
export async function requestShot(id, width, minAge = 4000) {
  const key = `${id}:${width}`;
  const s = shots.get(key) || {};
  shots.set(key, s);
  if (s.inflight || (s.at && Date.now() - s.at < minAge)) return;
  s.inflight = true;
  try {
    const res = await api('GET', `/desktops/${seg(id)}/screenshot?format=jpeg&width=${width}&passive=true`, undefined, { raw: true });
    const blob = await res.blob();
    const old = s.url;
    s.url = URL.createObjectURL(blob);
    s.error = null;
    s.size = res.headers.get('X-Screen-Size') || '';
    shotListeners.forEach((fn) => fn(id, width));
    if (old) URL.revokeObjectURL(old);
  } catch (e) {
    s.error = e;
    shotListeners.forEach((fn) => fn(id, width));
  } finally {
    s.inflight = false;
    s.at = Date.now();
  }
}

/** Forgets a desktop's screenshots (it stopped or was deleted) and frees their blob URLs. */
export function dropShots(id) {
  for (const [key, s] of shots) {
    if (key.startsWith(`${id}:`) && !s.inflight) {
      if (s.url) URL.revokeObjectURL(s.url);
      shots.delete(key);
    }
  }
}

export function dropAllShots() {
  for (const s of shots.values()) if (s.url) URL.revokeObjectURL(s.url);
  shots.clear();
}
