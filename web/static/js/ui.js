// DOM helpers, dialogs, toasts and formatting shared by the views.

/** h('div.card#x', {onclick, class, ...attrs}, ...children) builds an element. */
export function h(sel, attrs, ...children) {
  const m = sel.match(/^([a-z0-9-]+)?((?:[.#][\w-]+)*)$/i);
  const node = document.createElement((m && m[1]) || 'div');
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === '.') node.classList.add(part.slice(1));
      else node.id = part.slice(1);
    }
  }
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2), v);
    else if (k === 'class') node.className += (node.className ? ' ' : '') + v;
    else if (k === 'dataset') Object.assign(node.dataset, v);
    else if (k === 'style' && typeof v === 'object') Object.assign(node.style, v);
    else if (k in node && typeof v !== 'string') node[k] = v;
    else node.setAttribute(k, v === true ? '' : v);
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c == null || c === false) continue;
    node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(node, ...children) {
  node.replaceChildren();
  append(node, children);
  return node;
}

// ---------- icons (inline SVG, stroke style) ----------
const ICONS = {
  plus: 'M12 5v14M5 12h14',
  play: 'M7 4.5v15l12-7.5z',
  stop: 'M6 6h12v12H6z',
  reboot: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
  moon: 'M20 14.5A8 8 0 0 1 9.5 4 8 8 0 1 0 20 14.5z',
  trash: 'M4 7h16M9 7V4h6v3M6 7l1 13h10l1-13',
  monitor: 'M3 4h18v12H3zM8 20h8M12 16v4',
  eye: 'M2 12s3.5-7 10-7 10 7 10 7-3.5 7-10 7S2 12 2 12zM12 9a3 3 0 1 0 0 6 3 3 0 0 0 0-6z',
  back: 'M15 5l-7 7 7 7',
  folder: 'M3 6h6l2 2h10v11H3z',
  file: 'M6 3h8l4 4v14H6zM14 3v4h4',
  link: 'M10 14a4 4 0 0 0 5.7 0l3-3a4 4 0 0 0-5.7-5.7l-1 1M14 10a4 4 0 0 0-5.7 0l-3 3a4 4 0 0 0 5.7 5.7l1-1',
  download: 'M12 4v11M7 10l5 5 5-5M5 20h14',
  refresh: 'M20 11a8 8 0 1 0-2.3 5.7M20 4v7h-7',
  logout: 'M15 4h4v16h-4M10 8l-4 4 4 4M6 12h11',
  camera: 'M4 8h3l2-3h6l2 3h3v11H4zM12 10a3.5 3.5 0 1 0 0 7 3.5 3.5 0 0 0 0-7z',
  undo: 'M9 14L4 9l5-5M4 9h11a5 5 0 0 1 0 10h-3',
  x: 'M6 6l12 12M18 6L6 18',
  pause: 'M7 5h3v14H7zM14 5h3v14h-3z',
  archive: 'M3 4h18v4H3zM5 8v12h14V8M10 12h4',
  check: 'M5 12.5l4.5 4.5L19 7.5',
  clock: 'M12 3a9 9 0 1 0 0 18 9 9 0 0 0 0-18zM12 7.5V12l3 2',
  key: 'M14.5 3.5a6 6 0 1 1-4.9 9.4L3 19.5V21h3v-2h2v-2h2l1.6-1.6A6 6 0 0 1 14.5 3.5zM16.5 7.5h.01',
  login: 'M15 4h4v16h-4M10 8l4 4-4 4M4 12h10',
  copy: 'M8 8h12v12H8zM4 16V4h12',
  users: 'M9 11a4 4 0 1 0 0-8 4 4 0 0 0 0 8zM2 21v-1a6 6 0 0 1 6-6h2a6 6 0 0 1 6 6v1M16 3.3a4 4 0 0 1 0 7.4M22 21v-1a6 6 0 0 0-4-5.6',
};

export function icon(name, size = 16) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 24 24');
  svg.setAttribute('width', size);
  svg.setAttribute('height', size);
  svg.setAttribute('aria-hidden', 'true');
  svg.classList.add('icon');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', ICONS[name] || '');
  svg.append(p);
  return svg;
}

// ---------- toasts ----------
let toastHost;
export function toast(message, kind = 'info', ms) {
  if (!toastHost) {
    toastHost = h('div.toasts', { role: 'status', 'aria-live': 'polite' });
    document.body.append(toastHost);
  }
  const close = () => { t.classList.add('leaving'); setTimeout(() => t.remove(), 200); };
  const t = h(`div.toast.toast-${kind}`,
    h('div.toast-msg', message),
    h('button.icon-btn', { type: 'button', title: 'Dismiss', 'aria-label': 'Dismiss', onclick: close }, icon('x', 14)));
  toastHost.append(t);
  setTimeout(close, ms ?? (kind === 'error' ? 9000 : 4000));
}

// ---------- dialogs ----------
/**
 * Opens a modal <dialog>. build(close) returns {title, body, actions}; close(value)
 * resolves the returned promise. Escape or the backdrop resolve with undefined.
 */
export function modal(build, { wide = false } = {}) {
  return new Promise((resolve) => {
    const dlg = h(`dialog.modal${wide ? '.modal-wide' : ''}`);
    let done = false;
    const close = (value) => {
      if (done) return;
      done = true;
      dlg.close();
      dlg.remove();
      resolve(value);
    };
    const { title, body, actions, onOpen } = build(close);
    dlg.append(
      h('header.modal-head', h('h2', title),
        h('button.icon-btn', { type: 'button', title: 'Close', 'aria-label': 'Close', onclick: () => close(undefined) }, icon('x'))),
      h('div.modal-body', body),
      actions ? h('footer.modal-foot', actions) : null,
    );
    dlg.addEventListener('cancel', (e) => { e.preventDefault(); close(undefined); });
    dlg.addEventListener('mousedown', (e) => { if (e.target === dlg) close(undefined); });
    document.body.append(dlg);
    dlg.showModal();
    onOpen?.(dlg);
  });
}

/**
 * Asks for confirmation. Resolves {checked} when confirmed, null otherwise.
 * checkbox: optional label of an extra, unchecked-by-default checkbox.
 */
export function confirmDialog({ title, message, confirmLabel = 'Confirm', danger = false, checkbox, checkboxHint }) {
  return modal((close) => {
    const cb = checkbox ? h('input', { type: 'checkbox' }) : null;
    const ok = h(`button.btn${danger ? '.btn-danger' : '.btn-primary'}`, { type: 'button', onclick: () => close({ checked: cb ? cb.checked : false }) }, confirmLabel);
    return {
      title,
      body: [
        ...(Array.isArray(message) ? message : [message]).map((m) => (m instanceof Node ? m : h('p', m))),
        cb ? h('label.check.check-danger', cb, h('span', h('strong', checkbox), checkboxHint ? h('small', checkboxHint) : null)) : null,
      ],
      actions: [h('button.btn', { type: 'button', onclick: () => close(null) }, 'Cancel'), ok],
      onOpen: () => ok.focus(),
    };
  }).then((v) => v || null);
}

export function infoDialog(title, body) {
  return modal((close) => {
    const ok = h('button.btn.btn-primary', { type: 'button', onclick: () => close(true) }, 'OK');
    return { title, body, actions: [ok], onOpen: () => ok.focus() };
  });
}

/** Runs fn with btn disabled and a spinner; errors become toasts. Returns fn's result or undefined. */
export async function busy(btn, fn) {
  if (btn) { btn.disabled = true; btn.classList.add('is-busy'); }
  try {
    return await fn();
  } finally {
    if (btn) { btn.disabled = false; btn.classList.remove('is-busy'); }
  }
}

// ---------- formatting ----------
export function fmtBytes(n) {
  if (n == null || Number.isNaN(n)) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  let v = Number(n);
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${u[i]}`;
}

export function fmtMiB(mib) {
  if (!mib) return '—';
  return mib % 1024 === 0 ? `${mib / 1024} GiB` : `${mib} MiB`;
}

export function fmtTime(ts) {
  if (!ts) return '—';
  const d = typeof ts === 'number' ? new Date(ts * 1000) : new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts);
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function fmtAgo(ts) {
  if (!ts) return '—';
  const d = typeof ts === 'number' ? new Date(ts * 1000) : new Date(ts);
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  const fut = s < 0;
  const a = Math.abs(s);
  if (a > 30 * 86400) return d.toLocaleDateString(undefined, { year: 'numeric', month: 'short', day: 'numeric' });
  if (a < 10) return fut ? 'in a few seconds' : 'just now';
  let out;
  if (a < 45) out = `${a} s`;
  else if (a < 3600) out = `${Math.round(a / 60)} min`;
  else if (a < 86400) out = `${Math.round(a / 3600)} h`;
  else out = `${Math.round(a / 86400)} d`;
  return fut ? `in ${out}` : `${out} ago`;
}

/** <time> element with relative text and the absolute time as tooltip. */
export function timeEl(ts, relative = true) {
  return h('time', { datetime: ts || '', title: fmtTime(ts) }, relative ? fmtAgo(ts) : fmtTime(ts));
}

export function fmtDuration(secs) {
  if (!secs) return 'never';
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}
