// The hosts page (admins): every libvirt host bureau runs desktops on, its
// capacity and load, and its drain (every desktop moved off it).
import { get, post, del, seg, describe, signedInKey } from './api.js';
import { store } from './store.js';
import { h, icon, clear, toast, confirmDialog, busy, fmtBytes, timeEl } from './ui.js';

const FAST = 2000; // while a drain runs
const SLOW = 10000;

// ---------- who may see hosts ----------
// /info does not say the token's role, and GET /hosts is admin-only: its
// answer says both whether the signed-in token is an admin and the hosts.
let probe = null; // { token, promise }
let last = null; // { token, hosts }: the last answer

/** The hosts (GET /api/v1/hosts), or null when the token is not an admin's. Cached per token; fresh re-asks. */
export function adminHosts(fresh = false) {
  const token = signedInKey();
  if (!fresh && probe && probe.token === token) return probe.promise;
  const promise = get('/hosts').then((b) => b?.hosts || [], (e) => {
    if (e.status === 403) return null;
    if (probe?.promise === promise) probe = null; // a network error: ask again next time
    throw e;
  }).then((hosts) => {
    if (signedInKey() === token) last = { token, hosts };
    return hosts;
  });
  probe = { token, promise };
  return promise;
}

/** The hosts last answered for this token: a list, null (not an admin) or undefined (not asked yet). */
export function knownHosts() {
  return last && last.token === signedInKey() ? last.hosts : undefined;
}

/** Forgets the cached answer (sign-out). */
export function forgetHosts() { probe = null; last = null; }

/** A server icon (ui.js has no such one). */
export function hostIcon(size = 16) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  for (const [k, v] of Object.entries({ viewBox: '0 0 24 24', width: size, height: size, 'aria-hidden': 'true' })) svg.setAttribute(k, v);
  svg.classList.add('icon');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', 'M4 4h16v6H4zM4 14h16v6H4zM8 7h.01M8 17h.01');
  svg.append(p);
  return svg;
}

// ---------- formatting ----------
// A host's MiB figure, rounded to its unit ("4.0 GiB"); none: —.
export const mib = (n) => (n ? fmtBytes(n * 1048576) : '—');

function hostKind(state) {
  if (state === 'up') return 'ok';
  if (state === 'unreachable') return 'bad';
  return 'busy'; // connecting
}

/** A host's state as a pill. */
export function hostPill(state) {
  return h(`span.pill.pill-${hostKind(state)}.host-state`, { title: `Host state: ${state || 'unknown'}` }, h('span.dot'), state || 'unknown');
}

const drainRunning = (host) => !!host.drain && !host.drain.done;
const deskName = (id) => store.desktops.get(id)?.name || id;
const deskLink = (id) => h('a', { href: `#/desktops/${encodeURIComponent(id)}` }, deskName(id));

function meter(used, total, label) {
  if (!total) return null;
  const pct = Math.max(0, Math.min(100, Math.round((used / total) * 100)));
  return h('div.meter', { role: 'meter', 'aria-valuemin': 0, 'aria-valuemax': 100, 'aria-valuenow': pct, 'aria-label': label, title: `${label}: ${pct}%` },
    h(`span.meter-fill${pct >= 90 ? '.meter-hot' : ''}`, { style: { width: `${pct}%` } }));
}

// What the drain did, or is doing.
function drainBox(host) {
  const dr = host.drain;
  if (!dr) {
    return host.draining ? h('div.drain.drain-running', { dataset: { drain: 'unknown' } },
      h('div.drain-head', h('strong', 'Draining'), ' — bureau places no desktops here; its progress is not known yet')) : null;
  }
  const left = Object.entries(dr.left || {});
  const running = !dr.done;
  const kind = running ? 'running' : left.length ? 'left' : 'done';
  const head = running
    ? [h('span.spinner'), h('span', h('strong', 'Draining'), dr.moving ? [' — moving ', h('span.drain-moving', deskLink(dr.moving))] : ' — looking for the next desktop')]
    : h('span', h('strong', host.draining ? 'Drained' : 'Last drain ended'), dr.ended_at ? [' ', timeEl(dr.ended_at)] : null,
      host.draining && !host.desktops ? ': no desktops left on it' : null);
  return h(`div.drain.drain-${kind}`, { dataset: { drain: kind } },
    h('div.drain-head', head),
    h('div.drain-counts',
      h('span', h('strong.drain-moved', String(dr.moved || 0)), ' moved'),
      h('span', h('strong', String(left.length)), ' left'),
      h('span.muted', 'started ', timeEl(dr.started_at))),
    left.length ? h('ul.drain-reasons', left.map(([id, why]) => h('li', deskLink(id), h('span.muted', ` — ${why}`)))) : null);
}

function stat(label, value, extra) {
  return h('div.host-stat', h('dt', label), h('dd', value, extra || null));
}

// ---------- the page ----------
export function hostsView(root) {
  const count = h('span.count');
  const body = h('div', h('div.loading', h('span.spinner'), 'Loading hosts…'));
  const refreshBtn = h('button.btn', { type: 'button', onclick: () => load(refreshBtn) }, icon('refresh', 14), 'Refresh');
  root.append(
    h('div.page-head',
      h('div', h('h1', 'Hosts', count), h('p.muted', 'The libvirt hosts desktops run on. Draining a host moves every desktop off it.')),
      refreshBtn),
    body);

  let hosts = null;
  let loadError = null;
  const errors = new Map(); // host name -> error of its last action
  let timer = null;
  let gone = false;

  function card(host) {
    const err = errors.get(host.name);
    const used = host.memory_mib && host.free_memory_mib != null ? host.memory_mib - host.free_memory_mib : 0;
    const labels = Object.entries(host.labels || {});
    const action = host.draining
      ? h('button.btn.btn-sm', { type: 'button', title: 'End the drain: placement uses the host again', onclick: (e) => undrain(host, e.currentTarget) }, icon('undo', 14), 'Undrain')
      : h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', title: 'Move every desktop off this host', onclick: (e) => drain(host, e.currentTarget) }, icon('download', 14), 'Drain');
    return h('article.card.host-card', { dataset: { host: host.name, state: host.state || '', draining: String(!!host.draining) } },
      h('div.card-body',
        h('div.card-title',
          h('span.host-name', hostIcon(18), h('strong', host.name)),
          h('span.host-pills',
            hostPill(host.state),
            host.draining ? h('span.pill.pill-busy.host-draining', { title: 'bureau moves desktops off it and places none there' }, h('span.dot'), 'draining') : null,
            host.state === 'up' && !host.ready ? h('span.pill.pill-bad', { title: host.ready_error || 'bureau’s network or firewall is not in place' }, 'not ready') : null)),
        h('div.host-uri', h('code', host.uri), host.hostname ? h('span.muted.small', ` ${host.hostname}`) : null),
        h('dl.host-stats',
          stat('Desktops', String(host.desktops ?? 0)),
          stat('Accelerator', (host.accelerator || '—').toUpperCase()),
          stat('CPUs', host.cpus ? String(host.cpus) : '—'),
          stat('Memory', host.memory_mib ? `${mib(host.free_memory_mib)} free of ${mib(host.memory_mib)}` : '—', meter(used, host.memory_mib, 'Memory in use')),
          stat('Committed', host.committed_memory_mib ? `${mib(host.committed_memory_mib)} to desktops` : 'none', meter(host.committed_memory_mib || 0, host.memory_mib, 'Memory committed to desktops')),
          stat('Disk', host.disk_mib ? `${mib(host.free_disk_mib)} free of ${mib(host.disk_mib)}` : '—', meter(host.disk_mib - (host.free_disk_mib || 0), host.disk_mib, 'Disk in use'))),
        labels.length ? h('div.host-labels', labels.map(([k, v]) => h('span.tag', `${k}=${v}`))) : null,
        host.last_error ? h('div.card-error', { title: host.last_error }, host.last_error) : null,
        host.ready_error && host.ready_error !== host.last_error ? h('div.card-error', { title: host.ready_error }, `Not ready: ${host.ready_error}`) : null,
        drainBox(host),
        err ? h('div.form-error.host-action-error', { role: 'alert' }, err) : null),
      h('div.card-foot.host-foot',
        h('span.muted.small', host.last_seen_at ? ['seen ', timeEl(host.last_seen_at)] : 'never answered'),
        action));
  }

  function render() {
    if (gone) return;
    if (!hosts) {
      if (loadError) {
        clear(body, h('div.empty.empty-error',
          h('h2', loadError.status === 403 ? 'Hosts are for admins' : 'Could not load the hosts'),
          h('p', loadError.status === 403 ? 'Sign in with an admin token to see and drain hosts.' : describe(loadError)),
          loadError.status === 403 ? h('a.btn', { href: '#/' }, 'Back to the desktops')
            : h('button.btn', { type: 'button', onclick: () => load() }, icon('refresh'), 'Try again')));
      }
      return;
    }
    count.textContent = hosts.length ? String(hosts.length) : '';
    if (!hosts.length) {
      clear(body, h('div.empty', h('div.empty-icon', hostIcon(36)), h('h2', 'No hosts'), h('p.muted', 'Add one with bureau host add NAME URI.')));
      return;
    }
    clear(body,
      loadError ? h('div.banner.banner-error', `Could not refresh the hosts: ${describe(loadError)}`) : null,
      h('div.host-grid', hosts.map(card)));
  }

  function schedule() {
    clearTimeout(timer);
    if (gone || loadError?.status === 403) return;
    timer = setTimeout(() => (document.visibilityState === 'visible' ? load() : schedule()), hosts?.some(drainRunning) ? FAST : SLOW);
  }

  async function load(btn) {
    clearTimeout(timer);
    try {
      const b = await busy(btn, () => get('/hosts'));
      hosts = b?.hosts || [];
      loadError = null;
    } catch (e) {
      loadError = e;
    }
    render();
    schedule();
  }

  // A host the API answered with replaces ours at once.
  function replace(host) {
    if (!host?.name || !hosts) return;
    hosts = hosts.map((x) => (x.name === host.name ? host : x));
  }

  async function drain(host, btn) {
    const n = host.desktops || 0;
    const ok = await confirmDialog({
      title: `Drain ${host.name}?`,
      message: [
        n ? `Its ${n === 1 ? 'desktop is' : `${n} desktops are`} moved off it, one at a time, each to the host placement picks among the others: running ones live, stopped and hibernated ones cold.`
          : 'It runs no desktops now; any that are there are moved off it to other hosts.',
        'Until you undrain it, bureau places no new desktop there. Desktops no other host has room for stay, and the drain says why.',
      ],
      confirmLabel: 'Drain host',
      danger: true,
    });
    if (!ok) return;
    errors.delete(host.name);
    try {
      replace(await busy(btn, () => post(`/hosts/${seg(host.name)}/drain`)));
      toast(`Draining ${host.name}…`, 'success');
    } catch (e) {
      errors.set(host.name, `Could not drain ${host.name}: ${describe(e)}`);
    }
    render();
    load();
  }

  async function undrain(host, btn) {
    errors.delete(host.name);
    try {
      replace(await busy(btn, () => del(`/hosts/${seg(host.name)}/drain`)));
      toast(`${host.name} is no longer draining.`, 'success');
    } catch (e) {
      errors.set(host.name, `Could not undrain ${host.name}: ${describe(e)}`);
    }
    render();
    load();
  }

  const onVis = () => { if (document.visibilityState === 'visible') load(); };
  document.addEventListener('visibilitychange', onVis);
  load();

  return () => {
    gone = true;
    clearTimeout(timer);
    document.removeEventListener('visibilitychange', onVis);
  };
}
