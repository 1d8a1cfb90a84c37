// The details page of one desktop: properties, a large screenshot and tabs for
// events, steps, recordings, snapshots, backups, files and console sessions.
import { get, post, del, api, seg, describe } from './api.js';
import { store, subscribe, upsert, onDesktopEvent } from './store.js';
import { h, icon, clear, toast, confirmDialog, busy, fmtMiB, fmtBytes, fmtTime, fmtDuration, timeEl } from './ui.js';
import { statePill, actionButtons, consoleButtons, can, requestShot, shotOf, onShot, WAKEABLE } from './desktop.js';
import { placeholder } from './list.js';
import { servicesTab } from './services.js';
import { stepsTab } from './steps.js';
import { recordingsTab } from './recordings.js';
import { moveActions, loadMoveHosts } from './move.js';
import { backupsTab } from './backups.js';
import { loopBadges, requestsSection } from './people.js';

const SHOT_WIDTH = 1024;
const TABS = [
  ['events', 'Events'],
  ['steps', 'Steps'],
  ['recordings', 'Recordings'],
  ['snapshots', 'Snapshots'],
  ['backups', 'Backups'],
  ['files', 'Files'],
  ['services', 'Services'],
  ['console', 'Console sessions'],
  ['network', 'Network'],
];

export function detailsView(root, id, tab = 'events', params = {}) {
  if (!TABS.some(([t]) => t === tab)) tab = 'events';
  const cleanups = [];
  const base = `#/desktops/${encodeURIComponent(id)}`;
  const headBox = h('div');
  const shotBox = h('div.shot-large');
  const shotMeta = h('div.shot-meta');
  const propsBox = h('div');
  const tabBar = h('nav.tabs', { role: 'tablist' });
  const tabBody = h('div.tab-body');
  let loadError = null;
  let seen = false; // the desktop was loaded once (so its disappearance means it was deleted)
  const requests = requestsSection(id); // the agent's pending questions and approvals
  cleanups.push(requests.cleanup);

  root.append(
    h('a.back', { href: '#/' }, icon('back', 14), 'All desktops'),
    headBox,
    h('div.details-grid',
      h('section.panel.panel-shot', h('div.panel-head', h('h2', 'Screen'), shotMeta), shotBox),
      h('section.panel', h('div.panel-head', h('h2', 'Properties')), propsBox)),
    requests.el,
    h('section.panel.panel-tabs', tabBar, tabBody));

  const desk = () => store.desktops.get(id);

  function renderHead() {
    const d = desk();
    if (d) seen = true;
    if (!d && seen) {
      clear(headBox, h('div.empty', h('h2', 'This desktop was deleted'), h('p.muted', 'It no longer exists on the server.'),
        h('a.btn.btn-primary', { href: '#/' }, 'Back to the list')));
      return;
    }
    if (!d) {
      clear(headBox, loadError
        ? h('div.empty.empty-error', h('h2', loadError.status === 404 ? 'Desktop not found' : 'Could not load the desktop'),
          h('p', loadError.status === 404 ? 'It may have been deleted.' : describe(loadError)),
          h('a.btn', { href: '#/' }, 'Back to the list'))
        : h('div.page-head', h('div', h('div.sk-line.w40'), h('div.sk-line.w60'))));
      return;
    }
    clear(headBox, h('div.page-head.details-head',
      h('div', h('h1', d.name, statePill(d.state, d)),
        h('p.muted', h('code', d.id), d.operation ? ` · operation in progress: ${d.operation}` : ''),
        loopBadges(d, { release: true })),
      h('div.head-actions', consoleButtons(d), actionButtons(d), moveActions(d))),
    d.last_error ? h('div.banner.banner-error', h('strong', 'Last error: '), d.last_error) : null);
  }

  function prop(label, value) { return [h('dt', label), h('dd', value ?? '—')]; }

  function renderProps() {
    const d = desk();
    if (!d) { clear(propsBox, h('div.sk-line.w80'), h('div.sk-line.w60'), h('div.sk-line.w80')); return; }
    clear(propsBox, h('dl.kv',
      prop('Name', d.name),
      prop('ID', h('code', d.id)),
      prop('State', statePill(d.state, d)),
      prop('Desired state', d.desired_state || '—'),
      prop('Operation', d.operation || '—'),
      prop('Owner', d.owner || '—'),
      prop('Image', d.image || '—'),
      prop('vCPUs', String(d.vcpus)),
      prop('Memory', fmtMiB(d.memory_mib)),
      prop('Data disk', `${d.data_disk_gib} GiB`),
      // Only admins are shown host paths.
      d.data_disk_path ? prop('Data disk path', h('code', d.data_disk_path)) : null,
      prop('Host', d.host || 'local'),
      prop('Accelerator', (d.accelerator || '—').toUpperCase()),
      prop('When idle', idleTiers(d)),
      prop('Restart on crash', d.restart_on_crash ? 'yes' : 'no'),
      prop('Network', policySummary(d.network)),
      prop('Last error', d.last_error || '—'),
      prop('Created', fmtTime(d.created_at)),
      prop('Updated', h('span', fmtTime(d.updated_at), ' (', timeEl(d.updated_at), ')'))));
  }

  function renderShot() {
    const d = desk();
    if (!d) { clear(shotBox, h('div.thumb-placeholder', h('span.spinner'))); return; }
    const s = shotOf(id, SHOT_WIDTH);
    if (d.state === 'running' && s?.url) {
      let img = shotBox.querySelector('img');
      if (!img) clear(shotBox, img = h('img', { alt: `Screen of ${d.name}` }));
      if (img.src !== s.url) img.src = s.url;
      clear(shotMeta, s.size ? h('span.muted', s.size) : null,
        h('button.btn.btn-sm', { type: 'button', title: 'Refresh now', onclick: () => requestShot(id, SHOT_WIDTH, 0) }, icon('refresh', 14), 'Refresh'));
    } else if (d.state === 'running') {
      clear(shotBox, h('div.thumb-placeholder.ph-ok', s?.error ? icon('monitor', 32) : h('span.spinner'),
        h('span', s?.error ? `No screenshot: ${describe(s.error)}` : 'Loading screen…')));
      clear(shotMeta);
    } else {
      clear(shotBox, placeholder(d));
      clear(shotMeta, h('span.muted', 'The screen is shown while the desktop runs.'));
    }
  }

  function renderAll() { renderHead(); renderProps(); renderShot(); }

  // ----- tabs -----
  const tabButtons = TABS.map(([t, label]) => h('a.tab', { href: `${base}/${t}`, role: 'tab', dataset: { tab: t } }, label));
  tabBar.append(...tabButtons);
  let tabCleanup = null;
  // params: the query of the tab's address (#/desktops/<id>/<tab>?…), e.g. a recording to open.
  function selectTab(t, params = {}) {
    tabButtons.forEach((b) => b.setAttribute('aria-selected', String(b.dataset.tab === t)));
    tabCleanup?.();
    clear(tabBody);
    tabCleanup = { events: eventsTab, steps: stepsTab, recordings: recordingsTab, snapshots: snapshotsTab, backups: backupsTab, files: filesTab, services: servicesTab, console: consoleTab, network: networkTab }[t](tabBody, id, desk, params) || null;
  }
  selectTab(tab, params);
  cleanups.push(() => tabCleanup?.());

  // ----- live updates -----
  cleanups.push(subscribe((reason, changed) => {
    if (reason === 'live' || (changed && changed !== id)) return;
    renderAll();
  }));
  cleanups.push(onShot((sid, width) => { if (sid === id && width === SHOT_WIDTH) renderShot(); }));
  const tick = () => {
    const d = desk();
    if (d?.state === 'running' && document.visibilityState === 'visible') requestShot(id, SHOT_WIDTH, 4500);
  };
  const timer = setInterval(tick, 5000);
  document.addEventListener('visibilitychange', tick);
  cleanups.push(() => { clearInterval(timer); document.removeEventListener('visibilitychange', tick); });

  renderAll();
  loadMoveHosts(renderHead); // admins with several hosts get "Move to host…"
  get(`/desktops/${seg(id)}`).then((d) => { upsert(d); renderAll(); tick(); }).catch((e) => { loadError = e; renderAll(); });

  return {
    cleanup: () => cleanups.forEach((f) => f()),
    // Switching tabs within the same desktop keeps the page.
    setTab: (t, params) => { if (TABS.some(([x]) => x === t)) selectTab(t, params); },
  };
}

// ---------- shared bits ----------
function loading(text = 'Loading…') { return h('div.loading', h('span.spinner'), text); }
function errorBlock(e, retry) {
  return h('div.empty.empty-error.empty-sm', h('p', describe(e)), retry ? h('button.btn.btn-sm', { type: 'button', onclick: retry }, icon('refresh', 14), 'Try again') : null);
}
function table(head, rows) {
  return h('div.table-wrap', h('table', h('thead', h('tr', head.map((x) => h('th', x)))), h('tbody', rows)));
}

// ---------- events ----------
// What a desktop may reach outside, in a line.
function policySummary(p) {
  const allow = p?.allow_out || [], deny = p?.deny_out || [];
  if (!allow.length && !deny.length && !p?.deny_dns) return 'default: the internet, nothing private';
  return [allow.length ? `allow ${allow.join(', ')}` : '', deny.length ? `deny ${deny.join(', ')}` : '',
    p?.deny_dns ? 'no DNS' : ''].filter(Boolean).join(' · ');
}

// The network tab: the desktop's egress policy, shown and edited. A change
// applies at once to a running desktop.
function networkTab(box, id, desk) {
  const lines = (l) => (l || []).join('\n');
  const parse = (t) => t.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);
  const allow = h('textarea.mono', { id: 'net-allow', rows: 5, spellcheck: false, placeholder: '10.20.0.0/16\napi.example.com' });
  const deny = h('textarea.mono', { id: 'net-deny', rows: 5, spellcheck: false, placeholder: '0.0.0.0/0' });
  const noDNS = h('input', { id: 'net-nodns', type: 'checkbox' });
  const current = h('p');
  const err = h('div.form-error', { hidden: true });
  let dirty = false; // the user is editing: a live update must not overwrite it
  allow.addEventListener('input', () => { dirty = true; });
  deny.addEventListener('input', () => { dirty = true; });
  noDNS.addEventListener('change', () => { dirty = true; });
  function fill() {
    const p = desk()?.network;
    allow.value = lines(p?.allow_out);
    deny.value = lines(p?.deny_out);
    noDNS.checked = !!p?.deny_dns;
    dirty = false;
    showCurrent();
  }
  function showCurrent() {
    const d = desk();
    clear(current, h('strong', 'Now: '), d ? policySummary(d.network) : 'loading…');
  }
  async function save(ev) {
    ev.preventDefault();
    err.hidden = true;
    const network = { allow_out: parse(allow.value), deny_out: parse(deny.value), deny_dns: noDNS.checked };
    try {
      const d = await busy(ev.submitter, () => api('PATCH', `/desktops/${seg(id)}`, { network }));
      upsert(d);
      fill();
      toast('Network policy saved', 'success');
    } catch (e) {
      err.hidden = false;
      clear(err, describe(e));
    }
  }
  box.append(h('div.tab-head', h('p.muted',
    'A desktop never reaches the host or other desktops. By default it reaches the internet and nothing private ',
    '(private, link-local and reserved addresses). Entries are IPv4 addresses, CIDRs or host names, one per line; ',
    'an allow wins over a deny, so deny 0.0.0.0/0 plus allows is an allow-list. Changes apply at once. ',
    'Private ranges are opened by an admin; cloud metadata (link-local) by nobody.')),
  h('form.form.net-form', { onsubmit: save }, current, err,
    h('div.field', h('label', { for: 'net-allow' }, 'Allow out'), allow,
      h('span.hint', 'Opens private ranges or punches holes in a deny.')),
    h('div.field', h('label', { for: 'net-deny' }, 'Deny out'), deny),
    h('div.field', h('label', { for: 'net-nodns' }, noDNS, ' No DNS'),
      h('span.hint', 'Drops its DNS to the gateway too, so an allow-list cannot be tunnelled through DNS.')),
    h('div', h('button.btn.btn-primary', { type: 'submit' }, 'Save policy'), ' ',
      h('button.btn', { type: 'button', onclick: fill }, 'Reset'))));
  fill();
  // The desktop may load, or its policy change elsewhere, after the tab opens.
  return subscribe((reason, changed) => {
    if (reason === 'live' || (changed && changed !== id)) return;
    if (dirty) showCurrent(); else fill();
  });
}

function eventsTab(box, id) {
  let events = [];
  const body = h('div', loading());
  box.append(h('div.tab-head', h('p.muted', 'What happened to this desktop, newest first. New entries appear live.'),
    h('button.btn.btn-sm', { type: 'button', onclick: load }, icon('refresh', 14), 'Refresh')), body);

  function render() {
    if (!events.length) { clear(body, h('div.empty.empty-sm', h('p', 'No events yet.'))); return; }
    clear(body, table(['When', 'Type', 'Message', 'Actor'], events.map((ev) => h('tr',
      h('td.nowrap', timeEl(ev.created_at, false)),
      h('td', h('span.tag', ev.type)),
      h('td.wrap', ev.message),
      h('td.muted', ev.actor || '—')))));
  }
  const sortEvents = () => events.sort((a, b) => String(b.created_at).localeCompare(String(a.created_at)));
  async function load() {
    try {
      const b = await get(`/desktops/${seg(id)}/events?limit=200`);
      events = Array.isArray(b) ? b : b?.events || [];
      sortEvents();
      render();
    } catch (e) { clear(body, errorBlock(e, load)); }
  }
  load();
  return onDesktopEvent((ev) => {
    if (ev.desktop_id !== id || events.some((x) => x.id === ev.id)) return;
    events.unshift(ev);
    sortEvents();
    render();
  });
}

// ---------- snapshots ----------
function snapshotsTab(box, id, desk) {
  const body = h('div', loading());
  const nameInput = h('input', { type: 'text', placeholder: 'snapshot name, e.g. clean', maxlength: 63, required: true, 'aria-label': 'Snapshot name' });
  const descInput = h('input', { type: 'text', placeholder: 'description (optional)', 'aria-label': 'Snapshot description' });
  const submit = h('button.btn.btn-primary', { type: 'submit' }, icon('camera', 14), 'Take snapshot');
  const formError = h('div.form-error', { role: 'alert', hidden: true });
  const form = h('form.inline-form', {
    novalidate: true,
    onsubmit: async (e) => {
      e.preventDefault();
      formError.hidden = true;
      const name = nameInput.value.trim();
      if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name)) {
        formError.hidden = false;
        formError.textContent = 'Name: 1–63 letters, digits, “.”, “_” or “-”, starting with a letter or digit.';
        nameInput.focus();
        return;
      }
      try {
        const req = { name };
        if (descInput.value.trim()) req.description = descInput.value.trim();
        const sn = await busy(submit, () => post(`/desktops/${seg(id)}/snapshots`, req));
        toast(`Snapshot ${sn?.name || name} taken.`, 'success');
        nameInput.value = '';
        descInput.value = '';
        load();
      } catch (err) {
        formError.hidden = false;
        formError.textContent = describe(err);
      }
    },
  }, nameInput, descInput, submit);
  box.append(h('div.tab-head.tab-head-form', form,
    h('p.muted.small', 'A snapshot of a running desktop includes its memory (programs come back on revert); of a stopped one, its disks only.')),
  formError, body);

  async function load() {
    try {
      const b = await get(`/desktops/${seg(id)}/snapshots`);
      render(Array.isArray(b) ? b : b?.snapshots || []);
    } catch (e) { clear(body, errorBlock(e, load)); }
  }
  function render(list) {
    if (!list.length) { clear(body, h('div.empty.empty-sm', h('p', 'No snapshots yet. Take one to have a point to go back to.'))); return; }
    const d = desk();
    clear(body, table(['Name', 'Scope', 'Memory', 'Size', 'Created', ''], list.map((sn) => {
      const rv = h('button.btn.btn-sm', {
        type: 'button', disabled: !can('revert', d), title: can('revert', d) ? 'Revert to this snapshot' : `Cannot revert while ${d?.state}`,
        onclick: async () => {
          const ok = await confirmDialog({
            title: `Revert to ${sn.name}?`,
            message: [`${d?.name || 'The desktop'} goes back to the snapshot taken ${fmtTime(sn.created_at)}${sn.scope && sn.scope !== 'all' ? ` (${sn.scope} disk only)` : ''}.`,
              h('p', h('strong', 'Everything changed since then is lost.'))],
            confirmLabel: 'Revert', danger: true,
          });
          if (!ok) return;
          try {
            const res = await busy(rv, () => post(`/desktops/${seg(id)}/snapshots/${seg(sn.name)}/revert`));
            if (res?.id) upsert(res);
            toast(`Reverting to ${sn.name}…`, 'success');
          } catch (e) { toast(`Could not revert: ${describe(e)}`, 'error'); }
        },
      }, icon('undo', 14), 'Revert');
      const rm = h('button.btn.btn-sm.btn-danger-ghost', {
        type: 'button', title: 'Delete this snapshot',
        onclick: async () => {
          const ok = await confirmDialog({ title: `Delete snapshot ${sn.name}?`, message: 'The snapshot is removed; the desktop itself is not changed. This cannot be undone.', confirmLabel: 'Delete snapshot', danger: true });
          if (!ok) return;
          try {
            await busy(rm, () => del(`/desktops/${seg(id)}/snapshots/${seg(sn.name)}`));
            toast(`Snapshot ${sn.name} deleted.`, 'success');
            load();
          } catch (e) { toast(`Could not delete the snapshot: ${describe(e)}`, 'error'); }
        },
      }, icon('trash', 14));
      return h('tr',
        h('td', h('strong', sn.name), sn.description ? h('div.muted.small', sn.description) : null,
          sn.reverted_at ? h('div.muted.small', 'last reverted ', timeEl(sn.reverted_at)) : null),
        h('td', h('span.tag', sn.scope || 'all')),
        h('td', sn.memory ? 'with RAM' : 'disk only'),
        h('td.nowrap', fmtBytes(sn.size_bytes)),
        h('td.nowrap', timeEl(sn.created_at)),
        h('td.row-actions', rv, rm));
    })));
  }
  load();
  // Re-evaluate whether revert is allowed when the state changes.
  let last = desk()?.state;
  return subscribe((reason, changed) => {
    if (changed !== id) return;
    const s = desk()?.state;
    if (s !== last) { last = s; load(); }
  });
}

// ---------- files ----------
function filesTab(box, id, desk) {
  let path = '/home/agent';
  let woken = false;
  const crumbs = h('nav.crumbs', { 'aria-label': 'Path' });
  const body = h('div');
  box.append(h('div.tab-head', crumbs, h('button.btn.btn-sm', { type: 'button', onclick: () => load(path) }, icon('refresh', 14), 'Refresh')), body);

  function renderCrumbs(p) {
    const parts = p.split('/').filter(Boolean);
    const items = [h('a', { href: '#', onclick: (e) => { e.preventDefault(); load('/'); } }, '/')];
    parts.forEach((part, i) => {
      const to = `/${parts.slice(0, i + 1).join('/')}`;
      if (i) items.push(h('span.crumb-sep', '/'));
      items.push(i === parts.length - 1 ? h('strong', part) : h('a', { href: '#', onclick: (e) => { e.preventDefault(); load(to); } }, part));
    });
    clear(crumbs, items);
  }

  async function load(p) {
    const d = desk();
    if (d && d.state !== 'running' && !woken) {
      renderCrumbs(p);
      const wakeable = WAKEABLE.includes(d.state);
      clear(body, h('div.empty.empty-sm',
        h('p', `Files can be browsed while the desktop is running (it is ${d.state}).`),
        wakeable ? h('button.btn.btn-sm', { type: 'button', onclick: () => { woken = true; load(p); } }, 'Browse anyway (wakes the desktop)') : null));
      return;
    }
    clear(body, loading(`Reading ${p}…`));
    renderCrumbs(p);
    try {
      const res = await api('GET', `/desktops/${seg(id)}/files?path=${encodeURIComponent(p)}`, undefined, { raw: true });
      const ct = res.headers.get('Content-Type') || '';
      if (!ct.includes('application/json')) { // a file (e.g. a link to one): download it
        await saveBlob(res, p);
        return;
      }
      const st = await res.json();
      path = st.path || p;
      renderCrumbs(path);
      render(st);
    } catch (e) {
      clear(body, errorBlock(e, () => load(p)));
    }
  }

  function join(dir, name) { return `${dir.replace(/\/+$/, '')}/${name}`; }

  function render(st) {
    const entries = [...(st.entries || [])].sort((a, b) => (a.type === 'dir') !== (b.type === 'dir') ? (a.type === 'dir' ? -1 : 1) : a.name.localeCompare(b.name));
    const rows = [];
    if (st.path && st.path !== '/') {
      rows.push(h('tr.clickable', { onclick: () => load(st.path.replace(/\/[^/]+\/?$/, '') || '/') },
        h('td', h('span.file-name', icon('back', 16), '..')), h('td'), h('td'), h('td'), h('td')));
    }
    for (const en of entries) {
      const full = join(st.path, en.name);
      const isDir = en.type === 'dir';
      const dl = isDir ? null : h('button.btn.btn-sm', { type: 'button', title: `Download ${en.name}`, onclick: (e) => { e.stopPropagation(); download(full, dl); } }, icon('download', 14));
      rows.push(h(`tr${isDir || en.type === 'link' ? '.clickable' : ''}`, {
        onclick: isDir || en.type === 'link' ? () => load(full) : null,
      },
      h('td', h('span.file-name', icon(isDir ? 'folder' : en.type === 'link' ? 'link' : 'file', 16), en.name)),
      h('td.nowrap.num', isDir ? '—' : fmtBytes(en.size)),
      h('td.nowrap.muted', h('code', en.mode || '')),
      h('td.nowrap', en.mtime ? timeEl(en.mtime) : '—'),
      h('td.row-actions', dl)));
    }
    clear(body,
      entries.length ? table(['Name', 'Size', 'Mode', 'Modified', ''], rows) : h('div', table(['Name', 'Size', 'Mode', 'Modified', ''], rows), h('div.empty.empty-sm', h('p', 'This directory is empty.'))),
      st.truncated ? h('p.muted.small', 'The listing was cut off at the server’s limit.') : null);
  }

  async function download(p, btn) {
    try {
      const res = await busy(btn, () => api('GET', `/desktops/${seg(id)}/files?path=${encodeURIComponent(p)}`, undefined, { raw: true }));
      await saveBlob(res, p);
    } catch (e) { toast(`Could not download ${p}: ${describe(e)}`, 'error'); }
  }

  async function saveBlob(res, p) {
    const name = (res.headers.get('X-File-Path') || p).split('/').pop() || 'download';
    const blob = await res.blob();
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: name });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
    toast(`Downloaded ${name} (${fmtBytes(blob.size)}).`, 'success');
  }

  load(path);
  let last = desk()?.state;
  return subscribe((reason, changed) => {
    if (changed !== id) return;
    const s = desk()?.state;
    if (s !== last && (s === 'running' || last === 'running')) load(path);
    last = s;
  });
}

// ---------- console sessions ----------
function consoleTab(box, id, desk) {
  const body = h('div', loading());
  const openBox = h('div');
  box.append(h('div.tab-head', h('p.muted', 'Console links that are still valid. Revoking one closes its viewer at once.'),
    h('div.actions', openBox, h('button.btn.btn-sm', { type: 'button', onclick: load }, icon('refresh', 14), 'Refresh'))), body);
  const renderOpen = () => { const d = desk(); clear(openBox, d ? consoleButtons(d, { compact: true }) : null); };
  renderOpen();

  async function load() {
    try {
      const b = await get(`/desktops/${seg(id)}/console`);
      render((Array.isArray(b) ? b : b?.sessions || []).filter((s) => !s.revoked_at)
        .sort((x, y) => String(y.created_at).localeCompare(String(x.created_at))));
    } catch (e) { clear(body, errorBlock(e, load)); }
  }
  function render(list) {
    if (!list.length) { clear(body, h('div.empty.empty-sm', h('p', 'No active console sessions.'))); return; }
    clear(body, table(['Session', 'Mode', 'Opened by', 'Created', 'Expires', ''], list.map((s) => {
      const rv = h('button.btn.btn-sm.btn-danger-ghost', {
        type: 'button',
        onclick: async () => {
          const ok = await confirmDialog({ title: 'Revoke console session?', message: 'Its link stops working and an open console using it is disconnected.', confirmLabel: 'Revoke', danger: true });
          if (!ok) return;
          try {
            await busy(rv, () => del(`/desktops/${seg(id)}/console/${seg(s.id)}`));
            toast('Console session revoked.', 'success');
            load();
          } catch (e) { toast(`Could not revoke: ${describe(e)}`, 'error'); }
        },
      }, 'Revoke');
      return h('tr',
        h('td', h('code', s.id)),
        h('td', s.view_only ? h('span.tag', icon('eye', 12), ' view only') : h('span.tag.tag-strong', 'interactive')),
        h('td.muted', s.created_by || '—'),
        h('td.nowrap', s.created_at ? timeEl(s.created_at) : '—'),
        h('td.nowrap', s.expires_at ? h('span', { title: fmtTime(s.expires_at) }, timeEl(s.expires_at)) : '—'),
        h('td.row-actions', rv));
    })));
  }
  load();
  const t = setInterval(() => { if (document.visibilityState === 'visible') load(); }, 15000);
  const unsub = subscribe((reason, changed) => { if (changed === id) renderOpen(); });
  const onFocus = () => load();
  window.addEventListener('focus', onFocus);
  return () => { clearInterval(t); unsub(); window.removeEventListener('focus', onFocus); };
}

// idleTiers says when a quiet desktop naps, sleeps and hibernates.
function idleTiers(d) {
  const at = (s) => (s ? `after ${fmtDuration(s)}` : 'never');
  return `nap ${at(d.nap_after_seconds)} · sleep ${at(d.sleep_after_seconds)} · hibernate ${at(d.idle_timeout_seconds)}`;
}
