// The desktop list: a responsive grid of cards with live thumbnails.
import { describe, readOnly } from './api.js';
import { store, subscribe, sortedDesktops, refresh } from './store.js';
import { h, icon, clear, fmtMiB } from './ui.js';
import { statePill, stateKind, phaseOf, elapsedEl, actionButtons, consoleButtons, deleteButton, requestShot, shotOf, onShot, dropShots } from './desktop.js';
import { openCreateDialog } from './create.js';
import { loopBadges } from './people.js';

const THUMB_WIDTH = 320;

export function specLine(d) {
  return [
    h('span', h('strong', d.vcpus), ' vCPU'),
    h('span', h('strong', fmtMiB(d.memory_mib)), ' memory'),
    h('span', h('strong', `${d.data_disk_gib} GiB`), ' disk'),
  ];
}

/** What stands for the screen when there is none: the state, and while an operation runs its step and time. */
export function placeholder(d) {
  const kind = stateKind(d.state);
  const phase = phaseOf(d);
  const elapsed = elapsedEl(d);
  return h(`div.thumb-placeholder.ph-${kind}`,
    kind === 'busy' ? h('span.spinner') : icon(d.state === 'hibernated' || d.state === 'sleeping' ? 'moon' : d.state === 'paused' || d.state === 'napping' ? 'pause' : 'monitor', 28),
    h('span', d.state),
    phase || elapsed ? h('span.ph-phase', phase, phase && elapsed ? ' · ' : '', elapsed) : null);
}

function thumb(d) {
  const box = h('a.thumb', { href: `#/desktops/${encodeURIComponent(d.id)}`, 'aria-label': `Open ${d.name}` });
  fillThumb(box, d);
  return box;
}

function fillThumb(box, d) {
  const s = shotOf(d.id, THUMB_WIDTH);
  if (d.state === 'running' && s?.url) {
    let img = box.querySelector('img');
    if (!img) clear(box, img = h('img', { alt: `Screen of ${d.name}`, decoding: 'async' }));
    if (img.src !== s.url) img.src = s.url;
  } else if (d.state === 'running') {
    clear(box, h('div.thumb-placeholder.ph-ok', s?.error ? icon('monitor', 28) : h('span.spinner'),
      h('span', s?.error ? 'No screenshot yet' : 'Loading screen…')));
  } else {
    clear(box, placeholder(d));
  }
}

function card(d) {
  return h('article.card.desktop-card', { dataset: { id: d.id } },
    thumb(d),
    h('div.card-body',
      h('div.card-title',
        h('a.name', { href: `#/desktops/${encodeURIComponent(d.id)}` }, d.name),
        statePill(d.state, d)),
      loopBadges(d),
      h('div.specs', specLine(d)),
      h('div.meta',
        h('span', { title: 'Image' }, d.image || '—'),
        h('span.sep', '·'),
        h('span', { title: 'Accelerator' }, (d.accelerator || '—').toUpperCase()),
        d.host && d.host !== 'local' ? [h('span.sep', '·'), h('span', { title: 'Host' }, d.host)] : null),
      d.last_error ? h('div.card-error', { title: d.last_error }, d.last_error) : null),
    h('div.card-foot',
      h('div.foot-row', consoleButtons(d, { compact: true }), deleteButton(d, { compact: true })),
      actionButtons(d, { compact: true, ops: ['start', 'stop', 'reboot', 'hibernate'] })));
}

function skeleton() {
  return h('div.grid', Array.from({ length: 3 }, () => h('div.card.skeleton', h('div.thumb'), h('div.card-body', h('div.sk-line.w60'), h('div.sk-line.w40'), h('div.sk-line.w80')))));
}

export function listView(root) {
  const grid = h('div.grid');
  const body = h('div');
  const count = h('span.count');
  root.append(
    h('div.page-head',
      h('div', h('h1', 'Desktops', count), h('p.muted', 'Persistent Linux desktops for your agents.')),
      h('button.btn.btn-primary.needs-write', { type: 'button', dataset: { create: 'desktop' }, onclick: () => openCreateDialog() }, icon('plus'), 'New desktop')),
    body);

  const cards = new Map(); // id -> element
  const sigs = new Map(); // id -> JSON of the desktop the card shows (unchanged → card kept)

  function render() {
    if (!store.loaded) {
      if (store.error) {
        clear(body, h('div.empty.empty-error', h('h2', 'Could not load desktops'), h('p', describe(store.error)),
          h('button.btn', { type: 'button', onclick: () => refresh() }, icon('refresh'), 'Try again')));
      } else {
        clear(body, skeleton());
      }
      return;
    }
    const list = sortedDesktops();
    count.textContent = list.length ? String(list.length) : '';
    if (!list.length) {
      cards.clear();
      sigs.clear();
      clear(body, h('div.empty',
        h('div.empty-icon', icon('monitor', 36)),
        h('h2', readOnly() ? 'No desktops yet' : 'No desktops yet — create one'),
        h('p.muted', 'A desktop is a Linux VM with a graphical session and a persistent /home.'),
        h('button.btn.btn-primary.needs-write', { type: 'button', dataset: { create: 'desktop' }, onclick: () => openCreateDialog() }, icon('plus'), 'New desktop')));
      return;
    }
    if (grid.parentNode !== body) clear(body, grid);
    const keep = new Set();
    list.forEach((d, i) => {
      keep.add(d.id);
      if (d.state !== 'running') dropShots(d.id);
      const sig = JSON.stringify(d);
      let el = cards.get(d.id);
      if (!el || sigs.get(d.id) !== sig) {
        const fresh = card(d);
        if (el) el.replaceWith(fresh);
        el = fresh;
        cards.set(d.id, el);
        sigs.set(d.id, sig);
      }
      if (grid.children[i] !== el) grid.insertBefore(el, grid.children[i] || null);
    });
    for (const [id, el] of cards) if (!keep.has(id)) { el.remove(); cards.delete(id); sigs.delete(id); dropShots(id); }
    body.querySelector('.banner-error')?.remove();
    if (store.error) body.prepend(h('div.banner.banner-error', `Could not refresh the list: ${describe(store.error)}`));
    tick();
  }

  function tick() {
    if (document.visibilityState !== 'visible') return;
    for (const d of store.desktops.values()) if (d.state === 'running') requestShot(d.id, THUMB_WIDTH, 4500);
  }

  const unsubs = [
    subscribe((reason) => { if (reason !== 'live') render(); }),
    onShot((id, width) => {
      if (width !== THUMB_WIDTH) return;
      const el = cards.get(id);
      const d = store.desktops.get(id);
      if (el && d) fillThumb(el.querySelector('.thumb'), d);
    }),
  ];
  const timer = setInterval(tick, 5000);
  const onVis = () => tick();
  document.addEventListener('visibilitychange', onVis);
  render();

  return () => {
    unsubs.forEach((u) => u());
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVis);
  };
}
