// The Steps tab of a desktop: its step log — every computer-use action, exec,
// file write or delete and clipboard write made through the API — newest
// first, each with who did it, what it asked, what came of it and small
// pictures of the screen before and after. Exports for replay (Anthropic,
// OpenAI, bureau JSON) and reverts to before a step; a step a recording covers
// opens it at the step's time (Recordings tab). While the tab is open it asks
// for new steps every 2 s.
import { api, get, post, seg, describe } from './api.js';
import { upsert, subscribe } from './store.js';
import { h, icon, clear, toast, confirmDialog, busy, fmtBytes, fmtTime, fmtAgo } from './ui.js';
import { can } from './desktop.js';
import { recordingAt, recordingHref, fmtClock } from './recordings.js';
import { checkpointsBox } from './checkpoints.js';

const PAGE = 100; // steps shown at first and added by "Show older steps"
const MAX_ROWS = 600; // beyond this, the oldest (collapsed) rows are dropped
const POLL_MS = 2000;
const GAP_GRACE_MS = 30000; // how long a missing number is waited for (a step still being recorded)
const THUMB_CONCURRENCY = 4;

const KIND_LABEL = { computer: 'computer', exec: 'exec', file_write: 'file write', file_delete: 'file delete', clipboard: 'clipboard' };
const FILTERS = [
  ['', 'All steps'],
  ['computer', 'Computer use'],
  ['exec', 'Commands'],
  ['files', 'File changes'],
  ['clipboard', 'Clipboard'],
  ['failed', 'Failed only'],
];
const EXPORTS = [
  ['anthropic', 'Anthropic', 'A conversation in Anthropic’s Messages format (tool_use / tool_result), with the screen after each step'],
  ['openai', 'OpenAI', 'Input items of OpenAI’s Responses API (computer_call / function_call), with the screen after each step'],
  ['bureau', 'bureau JSON', 'The steps as bureau keeps them'],
];

// ---------- one-line summaries ----------
const pt = (c) => (Array.isArray(c) && c.length === 2 ? `(${c[0]},${c[1]})` : '');
const xy = (a) => (a.x != null && a.y != null ? `(${a.x},${a.y})` : '');

function quoted(s, max = 48) {
  const t = String(s ?? '');
  return JSON.stringify(t.length > max ? `${t.slice(0, max)}…` : t);
}

/** One computer-use action in a few words: left_click (640,400), type "hello", key ctrl+s. */
export function actionText(a) {
  if (!a || typeof a !== 'object') return String(a ?? '');
  const name = a.action || a.type || '?';
  const out = [name];
  switch (name) {
    case 'type': out.push(quoted(a.text)); break;
    case 'key': out.push(a.text || ''); break;
    case 'hold_key': out.push(a.text || '', a.duration ? `${a.duration}s` : ''); break;
    case 'keypress': out.push((a.keys || []).join('+')); break;
    case 'left_click_drag': out.push(`${pt(a.start_coordinate)}→${pt(a.coordinate)}`); break;
    case 'drag': out.push((a.path || []).map((p) => `(${p.x},${p.y})`).join('→')); break;
    case 'scroll':
      if (a.action) out.push(a.scroll_direction || '', a.scroll_amount != null ? String(a.scroll_amount) : '', pt(a.coordinate));
      else out.push(xy(a), `Δ${a.scroll_x || 0},${a.scroll_y || 0}`);
      break;
    case 'wait': out.push(a.duration ? `${a.duration}s` : a.ms ? `${a.ms}ms` : ''); break;
    case 'zoom': out.push(Array.isArray(a.region) ? `[${a.region.join(',')}]` : ''); break;
    case 'click': out.push(a.button && a.button !== 'left' ? a.button : '', xy(a)); break;
    default:
      out.push(pt(a.coordinate) || xy(a));
      if (a.text) out.push(`with ${a.text}`); // a click with modifier keys held
  }
  return out.filter(Boolean).join(' ');
}

function shellQuote(s) {
  s = String(s);
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A step in one line: its actions, its command, its path or its size. */
export function summary(st) {
  const inp = st.input && typeof st.input === 'object' ? st.input : {};
  switch (st.kind) {
    case 'computer': {
      const acts = Array.isArray(inp.actions) ? inp.actions : [];
      if (!acts.length) return inp.screenshot ? 'screenshot' : '(no actions)';
      return acts.map(actionText).join(' · ');
    }
    case 'exec': {
      const cmd = inp.cmd || (Array.isArray(inp.argv) ? inp.argv.map(shellQuote).join(' ') : '');
      return `$ ${cmd || '?'}`;
    }
    case 'file_write':
    case 'file_delete':
      return inp.path || '(no path)';
    case 'clipboard': {
      const n = Number(inp.chars) || 0;
      return `${n.toLocaleString()} char${n === 1 ? '' : 's'}`;
    }
    default:
      return JSON.stringify(inp);
  }
}

const failed = (st) => !(st.status < 300) || !!st.error;

function matches(st, f) {
  switch (f) {
    case '': return true;
    case 'files': return st.kind === 'file_write' || st.kind === 'file_delete';
    case 'failed': return failed(st);
    default: return st.kind === f;
  }
}

function fmtMs(ms) {
  if (ms == null) return '';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

/** The clock time of a step; with the date when it is not today. */
function clock(ts) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts || '—');
  const t = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (d.toDateString() === new Date().toDateString()) return t;
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${t}`;
}

/** JSON indented by two, with short arrays and objects of plain values on one line. */
export function pretty(v, indent = '') {
  if (v === undefined) return 'null';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  const inner = `${indent}  `;
  const isArr = Array.isArray(v);
  const entries = isArr ? v.map((x) => [null, x]) : Object.entries(v);
  if (!entries.length) return isArr ? '[]' : '{}';
  const flat = entries.every(([, x]) => x === null || typeof x !== 'object');
  if (flat) {
    const one = isArr ? `[${v.map((x) => JSON.stringify(x)).join(', ')}]`
      : `{ ${entries.map(([k, x]) => `${JSON.stringify(k)}: ${JSON.stringify(x)}`).join(', ')} }`;
    if (one.length + indent.length <= 72 && (isArr || entries.length <= 3)) return one;
  }
  const lines = entries.map(([k, x]) => `${inner}${isArr ? '' : `${JSON.stringify(k)}: `}${pretty(x, inner)}`);
  return isArr ? `[\n${lines.join(',\n')}\n${indent}]` : `{\n${lines.join(',\n')}\n${indent}}`;
}

// ---------- the tab ----------
export function stepsTab(box, id, desk, params = {}) {
  const ctl = new AbortController();
  const { signal } = ctl;
  let disposed = false;

  const steps = new Map(); // seq -> step
  const rows = new Map(); // seq -> <li>
  const expanded = new Set(); // seqs whose details are open
  const gaps = new Map(); // missing seq -> when it was first missed
  let firstSeq = 0; // the oldest step the log holds (when known)
  let maxSeq = 0;
  let hasOlder = false;
  let loaded = false;
  let filter = '';

  const list = h('ol.steps', { 'aria-label': 'Steps, newest first' });
  const body = h('div', h('div.loading', h('span.spinner'), 'Loading steps…'));
  const status = h('div.steps-status.muted.small', { 'aria-live': 'polite' });
  const olderBox = h('div.steps-older');
  const noMatch = h('div.empty.empty-sm', { hidden: true }, h('p', 'No step matches this filter.'));

  const filterSel = h('select.steps-filter', {
    'aria-label': 'Show',
    onchange: () => { filter = filterSel.value; applyFilter(); },
  }, FILTERS.map(([v, label]) => h('option', { value: v }, label)));

  const exportBtns = EXPORTS.map(([format, label, title]) => {
    const b = h('button.btn.btn-sm', { type: 'button', title, dataset: { format }, onclick: () => exportAs(format, label, b) }, icon('download', 14), label);
    return b;
  });

  box.append(
    h('div.tab-head.steps-head',
      h('p.muted', 'Everything done in this desktop through the API — computer use, commands, file changes and clipboard writes — newest first. Click a step for the screen before and after, what it asked and what came of it.'),
      h('div.steps-tools',
        filterSel,
        h('div.btn-group', { role: 'group', 'aria-label': 'Export' }, h('span.btn-group-label', 'Export'), exportBtns)),
      checkpointsBox(id, signal, !desk() || can('revert', desk()))),
    status, body);

  // ----- thumbnails: fetched with the token, shown as blob URLs -----
  const thumbs = new Map(); // "seq:which" -> Promise<string|null>
  const blobURLs = [];
  const queue = [];
  let running = 0;
  function pump() {
    while (running < THUMB_CONCURRENCY && queue.length) {
      const job = queue.shift();
      running++;
      job().finally(() => { running--; pump(); });
    }
  }
  function thumbURL(seq, which) {
    const key = `${seq}:${which}`;
    if (!thumbs.has(key)) {
      thumbs.set(key, new Promise((resolve) => {
        queue.push(async () => {
          if (disposed) { resolve(null); return; }
          try {
            const res = await api('GET', `/desktops/${seg(id)}/steps/${seq}/thumbnails/${which}`, undefined, { raw: true, signal });
            const blob = await res.blob();
            if (disposed) { resolve(null); return; }
            const url = URL.createObjectURL(blob);
            blobURLs.push(url);
            resolve(url);
          } catch {
            thumbs.delete(key); // try again next time it is shown
            resolve(null);
          }
        });
        pump();
      }));
    }
    return thumbs.get(key);
  }

  /** An <img> box for a step's thumbnail; loads when it comes into view. */
  function thumbBox(st, which, cls) {
    const has = which === 'before' ? st.thumbnail_before : st.thumbnail_after;
    const el = h(`div.step-shot.${cls}`, { dataset: { which } });
    if (!has) {
      el.classList.add('step-shot-none');
      el.append(h('span', 'no picture'));
      el.title = 'No picture of the screen was kept (the desktop was not running, or the screenshot failed).';
      return el;
    }
    el.classList.add('step-shot-loading');
    el.dataset.seq = String(st.seq);
    observer?.observe(el);
    if (!observer) fillThumb(el);
    return el;
  }

  async function fillThumb(el) {
    if (el.dataset.filled) return;
    el.dataset.filled = '1';
    const which = el.dataset.which;
    const seq = Number(el.dataset.seq);
    const url = await thumbURL(seq, which);
    if (disposed) return;
    el.classList.remove('step-shot-loading');
    if (!url) {
      el.classList.add('step-shot-none');
      clear(el, h('span', 'picture unavailable'));
      delete el.dataset.filled;
      return;
    }
    clear(el, h('img', { src: url, alt: `Screen ${which} step ${seq}`, decoding: 'async' }));
  }

  const observer = 'IntersectionObserver' in window
    ? new IntersectionObserver((entries) => {
      for (const e of entries) {
        if (!e.isIntersecting) continue;
        observer.unobserve(e.target);
        fillThumb(e.target);
      }
    }, { rootMargin: '300px 0px' })
    : null;

  // ----- rows -----
  function row(st) {
    const bad = failed(st);
    const sum = summary(st);
    const exitCode = st.kind === 'exec' && st.result && typeof st.result === 'object' ? st.result.exit_code : undefined;
    const inp = st.input || {};
    const head = h('div.step-row', {
      role: 'button', tabindex: 0, 'aria-expanded': 'false',
      title: 'Show the screen before and after, the input and the result',
      onclick: () => toggle(st.seq),
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); toggle(st.seq); } },
    },
    thumbBox(st, 'after', 'step-thumb'),
    h('div.step-main',
      h('div.step-line',
        h('span.step-seq', `#${st.seq}`),
        h(`span.step-kind.kind-${st.kind}`, KIND_LABEL[st.kind] || st.kind),
        h('span.step-summary', { title: sum }, sum)),
      h('div.step-meta',
        h('time', { datetime: st.at, title: `${fmtTime(st.at)} (${fmtAgo(st.at)})` }, clock(st.at)),
        h('span', { title: 'How long the call took' }, fmtMs(st.duration_ms)),
        h('span.step-actor', { title: 'Who made the call (owner/token)' }, st.actor || '—'),
        st.kind === 'exec' && inp.background ? h('span.tag', 'background') : null,
        st.kind === 'exec' && inp.user ? h('span.tag', `as ${inp.user}`) : null,
        st.kind === 'file_delete' && inp.recursive && inp.recursive !== 'false' ? h('span.tag', 'recursive') : null,
        exitCode ? h('span.tag.tag-warn', { title: 'The command ran and exited with this code' }, `exit ${exitCode}`) : null,
        st.result?.timed_out ? h('span.tag.tag-warn', 'timed out') : null,
        st.checkpoint ? h('span.tag', { title: `Snapshot ${st.checkpoint} was taken just before this step: reverting to before it goes there` }, st.checkpoint.startsWith('auto-') ? 'auto checkpoint' : 'checkpoint') : null,
        st.checkpoint_error ? h('span.tag.tag-warn', { title: st.checkpoint_error }, 'no checkpoint') : null,
        bad ? h('span.pill.pill-bad', { title: `HTTP ${st.status}` }, h('span.dot'), `failed · ${st.status}`) : null),
      bad && st.error ? h('div.step-error', { title: st.error }, st.error) : null),
    h('span.step-chevron', { 'aria-hidden': 'true' }, icon('back', 14)));
    const li = h(`li.step${bad ? '.step-failed' : ''}`, { dataset: { seq: String(st.seq), kind: st.kind } }, head);
    li.hidden = !matches(st, filter);
    if (expanded.has(st.seq)) openDetail(li, st);
    return li;
  }

  function toggle(seq) {
    const li = rows.get(seq);
    const st = steps.get(seq);
    if (!li || !st) return;
    if (expanded.has(seq)) {
      expanded.delete(seq);
      li.classList.remove('open');
      li.querySelector('.step-row').setAttribute('aria-expanded', 'false');
      li.querySelector('.step-detail')?.remove();
    } else {
      expanded.add(seq);
      openDetail(li, st);
      loadRecordings();
    }
  }

  // ----- recordings: a step a finished recording covers opens it at its time -----
  let recordings = null; // the desktop's recordings, once asked for
  let recLoading = null;
  function loadRecordings() {
    if (recLoading) return recLoading;
    recLoading = (async () => {
      try {
        const b = await get(`/desktops/${seg(id)}/recordings`, { signal });
        recordings = Array.isArray(b) ? b : b?.recordings || [];
      } catch {
        return; // no recordings on this bureau, or a hiccup: no links this time
      } finally {
        recLoading = null;
      }
      if (disposed) return;
      for (const li of list.querySelectorAll('li.step.open')) fillRecording(li);
    })();
    return recLoading;
  }

  /** The "Watch in recording" link of an open step, when a recording covers its time. */
  function fillRecording(li) {
    const slot = li.querySelector('.step-rec');
    const st = steps.get(Number(li.dataset.seq));
    if (!slot || !st) return;
    const hit = recordings ? recordingAt(recordings, st.at) : null;
    if (!hit) { clear(slot); return; }
    if (hit.live) {
      clear(slot, h('span.muted.small.step-rec-live', { title: 'A recording under way covers this step' },
        h('span.rec-dot'), 'Being recorded — watch it once the recording stops'));
      return;
    }
    const href = recordingHref(id, hit.rec.id, hit.t, st.seq);
    clear(slot, h('a.btn.btn-sm.step-watch', {
      href, dataset: { rid: hit.rec.id, t: hit.t.toFixed(2) },
      title: `The recording started ${fmtTime(hit.rec.started_at)} shows this step ${fmtClock(hit.t)} into it`,
    }, icon('play', 14), `Watch in recording (at ${fmtClock(hit.t)})`));
  }

  function openDetail(li, st) {
    li.classList.add('open');
    li.querySelector('.step-row').setAttribute('aria-expanded', 'true');
    if (li.querySelector('.step-detail')) return;
    const note = h('div.step-note', { hidden: true, role: 'status' });
    const revert = h('button.btn.btn-sm.btn-danger-ghost.step-revert', {
      type: 'button',
      onclick: () => revertTo(st, revert, note),
    }, icon('undo', 14), 'Revert to before this step');
    revertState(revert);
    const figure = (which, label) => h('figure.step-fig',
      h('figcaption', label),
      thumbBox(st, which, 'step-big'));
    li.append(h('div.step-detail',
      h('div.step-shots', figure('before', `Before step ${st.seq}`), figure('after', `After step ${st.seq}`)),
      failed(st) ? h('div.banner.banner-error.step-error-full', h('strong', `Failed (HTTP ${st.status})`), st.error ? `: ${st.error}` : '') : null,
      h('div.step-json',
        h('section', h('h3', 'Input'), h('pre.code.json.step-input', pretty(st.input))),
        h('section', h('h3', 'Result'), h('pre.code.json.step-result', pretty(st.result)))),
      output(st),
      h('div.step-detail-foot',
        revert,
        h('span.step-rec'),
        h('span.muted.small', `Step ${st.seq} · ${fmtTime(st.at)} · ${fmtMs(st.duration_ms)} · HTTP ${st.status} · by ${st.actor || '—'}`)),
      note));
    fillRecording(li);
  }

  /** Revert is offered in the states a snapshot can be reverted from. */
  function revertState(btn) {
    const d = desk();
    const ok = !d || can('revert', d);
    btn.disabled = !ok;
    btn.title = ok ? 'Put the desktop back to the newest snapshot taken before this step began' : `Cannot revert while the desktop is ${d.state}`;
  }

  /** An exec's output as text, as a terminal shows it (the result has it as JSON strings). */
  function output(st) {
    const r = st.result;
    if (st.kind !== 'exec' || !r || typeof r !== 'object' || r.encoding === 'base64') return null;
    if (!r.stdout && !r.stderr) return null;
    return h('section.step-output', h('h3', 'Output', r.truncated ? h('span.muted', ' (cut off)') : null),
      h('pre.log', r.stdout || '', r.stderr ? h('span.step-stderr', `${r.stdout && !r.stdout.endsWith('\n') ? '\n' : ''}${r.stderr}`) : null));
  }

  async function revertTo(st, btn, note) {
    const d = desk();
    const ok = await confirmDialog({
      title: `Revert to before step ${st.seq}?`,
      message: [
        `${d?.name || 'The desktop'} goes back to the newest snapshot taken before step ${st.seq} began (${clock(st.at)}).`,
        h('p', h('strong', 'Everything changed since that snapshot is lost'), ' — including this step and the ones after it.'),
      ],
      confirmLabel: 'Revert', danger: true,
    });
    if (!ok) return;
    note.hidden = true;
    note.className = 'step-note';
    try {
      const res = await busy(btn, () => post(`/desktops/${seg(id)}/steps/${st.seq}/revert`));
      if (res?.desktop?.id) upsert(res.desktop);
      const sn = res?.snapshot?.name || '?';
      const holds = res?.holds_through_step ?? 0;
      note.classList.add('step-note-ok');
      clear(note, 'Reverting to snapshot ', h('strong', sn),
        res?.snapshot?.created_at ? ` (taken ${fmtTime(res.snapshot.created_at)})` : '',
        '. It holds the desktop as it was ',
        holds ? ['through step ', h('strong', `#${holds}`), `; the steps after it are undone.`] : 'before any step was recorded; every step is undone.',
        res?.note ? [' ', res.note] : '');
      note.hidden = false;
      toast(`Reverting ${d?.name || 'the desktop'} to snapshot ${sn} (holds through step ${holds}).`, 'success');
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      note.classList.add('step-note-error');
      clear(note, e.status === 409 ? h('strong', 'Cannot revert: ') : null, describe(e));
      note.hidden = false;
      toast(`Could not revert: ${describe(e)}`, 'error');
    }
    revertState(btn); // busy() re-enabled it; the desktop may be reverting now
  }

  // ----- adding steps -----
  function minShown() {
    let m = Infinity;
    for (const s of rows.keys()) if (s < m) m = s;
    return m === Infinity ? 0 : m;
  }

  /** Adds steps (any order) to the list at their places; marks them new when fresh. */
  function add(batch, { fresh = false } = {}) {
    const before = document.documentElement.scrollHeight;
    const readerBelowTop = rows.size > 0 && list.getBoundingClientRect().top < 0;
    let addedOnTop = false;
    const prevMax = maxSeq;
    for (const st of batch) {
      if (!st || typeof st.seq !== 'number' || steps.has(st.seq)) continue;
      steps.set(st.seq, st);
      gaps.delete(st.seq);
      const li = row(st);
      if (fresh) li.classList.add('step-new');
      // Rows are in descending order: insert before the first older one.
      let next = null;
      for (const el of list.children) { if (Number(el.dataset.seq) < st.seq) { next = el; break; } }
      list.insertBefore(li, next);
      rows.set(st.seq, li);
      if (st.seq > prevMax) addedOnTop = true;
      if (st.seq > maxSeq) maxSeq = st.seq;
    }
    // Numbers skipped between what was known and what came: steps still being recorded.
    const low = prevMax ? prevMax + 1 : Math.min(...batch.map((x) => x.seq));
    const now = Date.now();
    for (let s = low; s < maxSeq && gaps.size < 200; s++) if (!steps.has(s) && !gaps.has(s)) gaps.set(s, now);
    trim();
    // Keep what the reader looks at in place when rows come in above it.
    if (addedOnTop && readerBelowTop) window.scrollBy(0, document.documentElement.scrollHeight - before);
    renderStatus();
    applyFilter();
  }

  function trim() {
    if (rows.size <= MAX_ROWS) return;
    const seqs = [...rows.keys()].sort((a, b) => a - b);
    for (const s of seqs) {
      if (rows.size <= MAX_ROWS) break;
      if (expanded.has(s)) continue;
      rows.get(s).remove();
      rows.delete(s);
      steps.delete(s);
      hasOlder = true;
    }
  }

  function applyFilter() {
    let visible = 0;
    for (const [s, li] of rows) {
      const show = matches(steps.get(s), filter);
      li.hidden = !show;
      if (show) visible++;
    }
    noMatch.hidden = !(rows.size && !visible);
  }

  function renderStatus() {
    if (!loaded) return;
    const n = rows.size;
    clear(status,
      h('span.live.live-live', { title: 'New steps are fetched every 2 s while this tab is open' }, h('span.dot'), 'Live'),
      h('span', n ? `${n.toLocaleString()} step${n === 1 ? '' : 's'} shown` : 'No steps yet',
        maxSeq ? ` · newest #${maxSeq}` : '',
        firstSeq ? ` · the log starts at #${firstSeq}` : '',
        ' · new steps appear within 2 s'));
    clear(olderBox, hasOlder
      ? h('button.btn.btn-sm', { type: 'button', onclick: (e) => loadOlder(e.currentTarget) }, 'Show older steps')
      : (n ? h('p.muted.small', 'That is the whole log.') : null));
  }

  function renderBody() {
    if (!rows.size) {
      clear(body, h('div.empty.empty-sm.steps-empty',
        h('p', h('strong', 'No steps yet.')),
        h('p.muted', 'Computer-use actions, commands, file writes and deletes and clipboard writes made in this desktop through the API appear here as they happen.')),
      list);
      return;
    }
    clear(body, list, noMatch, olderBox);
  }

  // ----- loading -----
  const page = async (after, limit) => {
    const b = await get(`/desktops/${seg(id)}/steps?after=${after}&limit=${limit}`, { signal });
    return Array.isArray(b) ? b : b?.steps || [];
  };

  /** The newest `limit` steps below `before` (0: no bound), oldest first. */
  const newestPage = async (before, limit) => {
    const b = await get(`/desktops/${seg(id)}/steps?newest=true&limit=${limit}${before ? `&before=${before}` : ''}`, { signal });
    return Array.isArray(b) ? b : b?.steps || [];
  };

  async function load() {
    clear(body, h('div.loading', h('span.spinner'), 'Loading steps…'));
    try {
      const [head, first] = await Promise.all([page(0, 1), newestPage(0, PAGE)]);
      if (head.length) firstSeq = head[0].seq;
      if (disposed) return;
      loaded = true;
      hasOlder = first.length > 0 && first[0].seq > firstSeq;
      add(first);
      renderBody();
      if (params.seq) showStep(Number(params.seq));
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      clear(body, h('div.empty.empty-error.empty-sm', h('p', describe(e)),
        h('button.btn.btn-sm', { type: 'button', onclick: load }, icon('refresh', 14), 'Try again')));
    }
  }

  /** Opens step seq (#/desktops/<id>/steps?seq=N) and scrolls to it, when it is shown. */
  function showStep(seq) {
    const li = rows.get(seq);
    if (!li) return;
    if (!expanded.has(seq)) toggle(seq);
    const top = li.getBoundingClientRect().top + window.scrollY - 72; // below the sticky top bar
    window.scrollTo(0, Math.max(0, top));
  }

  async function loadOlder(btn) {
    const oldest = minShown();
    if (!oldest) return;
    try {
      const more = await busy(btn, () => newestPage(oldest, PAGE));
      hasOlder = more.length > 0 && more[0].seq > (firstSeq || 1);
      add(more);
    } catch (e) {
      if (!disposed && e.name !== 'AbortError') toast(`Could not load older steps: ${describe(e)}`, 'error');
    }
  }

  // New steps: every 2 s while the tab is shown and the page visible. The
  // cursor stays below a number still missing (its step may be still being
  // recorded) for a while, so a step that lands late is not skipped.
  let polling = false;
  async function poll() {
    if (!loaded || polling || disposed || document.visibilityState !== 'visible' || !box.isConnected) return;
    polling = true;
    try {
      const now = Date.now();
      for (const [s, since] of gaps) if (now - since > GAP_GRACE_MS) gaps.delete(s);
      const cursor = gaps.size ? Math.min(...gaps.keys()) - 1 : maxSeq;
      const fresh = await page(cursor, 1000);
      if (disposed) return;
      const had = rows.size;
      if (fresh.length) {
        if (!firstSeq) firstSeq = fresh[0].seq;
        add(fresh, { fresh: true });
        if (!had && rows.size) renderBody();
      }
    } catch (e) {
      if (e.name === 'AbortError') return;
      // Transient: the next tick tries again. (A 401 signs out through api.js.)
    } finally {
      polling = false;
    }
  }

  // ----- export -----
  async function exportAs(format, label, btn) {
    try {
      const res = await busy(btn, () => api('GET', `/desktops/${seg(id)}/steps/export?format=${format}`, undefined, { raw: true, signal }));
      const blob = await res.blob();
      const cd = res.headers.get('Content-Disposition') || '';
      const m = cd.match(/filename\*?=(?:UTF-8'')?"?([^";]+)"?/i);
      const name = m ? decodeURIComponent(m[1]) : `${desk()?.name || id}-steps-${format}.json`;
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: name });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 30000);
      let more = '';
      try {
        const doc = JSON.parse(await blob.text());
        if (doc?.next_after) more = ` It holds steps up to #${doc.next_after}; export the rest through the API with after=${doc.next_after}.`;
      } catch { /* not JSON: saved anyway */ }
      toast(`Downloaded ${name} (${label}, ${fmtBytes(blob.size)}).${more}`, 'success', more ? 12000 : undefined);
    } catch (e) {
      if (!disposed && e.name !== 'AbortError') toast(`Could not export the steps: ${describe(e)}`, 'error');
    }
  }

  load();
  loadRecordings();
  const unsub = subscribe((reason, changed) => {
    if (changed !== id) return;
    for (const b of list.querySelectorAll('.step-revert')) if (!b.classList.contains('is-busy')) revertState(b);
  });
  const timer = setInterval(poll, POLL_MS);
  const onVis = () => { if (document.visibilityState === 'visible') poll(); };
  document.addEventListener('visibilitychange', onVis);

  return () => {
    disposed = true;
    unsub();
    clearInterval(timer);
    document.removeEventListener('visibilitychange', onVis);
    observer?.disconnect();
    queue.length = 0;
    ctl.abort();
    for (const u of blobURLs) URL.revokeObjectURL(u);
    blobURLs.length = 0;
  };
}
