// The Recordings tab of a desktop: recordings of its screen as WebM video,
// made from the hypervisor's side. Start one (frames a second to choose),
// watch it under way (elapsed time, frames) and stop it; the list, newest
// first; a finished one plays here (fetched with the token into a blob URL),
// downloads or is deleted. Second t of a video is the recording's started_at
// + t, so a step of the Steps tab opens here at its time:
// #/desktops/<id>/recordings?rid=<rid>&t=<seconds>[&step=<seq>].
// While the tab is open and the page visible, the list is asked for every 3 s.
import { api, get, post, del, seg, describe } from './api.js';
import { subscribe } from './store.js';
import { h, icon, clear, toast, confirmDialog, busy, fmtBytes, fmtTime, fmtAgo } from './ui.js';

const POLL_MS = 3000;
const FPS_CHOICES = [1, 2, 5];
const DEFAULT_FPS = 2;
const AUTO_OPEN_MAX = 64 << 20; // a just-stopped recording opens by itself up to this size
const LEAD_S = 1; // a step opens this long before its time

// ---------- helpers shared with the Steps tab ----------
/** Seconds as m:ss (h:mm:ss from an hour). */
export function fmtClock(secs) {
  const s = Math.max(0, Math.floor(Number(secs) || 0));
  const hh = Math.floor(s / 3600);
  const mm = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, '0');
  return hh ? `${hh}:${String(mm).padStart(2, '0')}:${ss}` : `${mm}:${ss}`;
}

/** A recording whose video can be fetched. */
export const playable = (r) => !!r && r.state !== 'recording' && !!r.video_url;

/**
 * The recording that shows the moment `at`: a finished one (with a video)
 * with started_at ≤ at ≤ ended_at, the newest if several; else the one under
 * way if it began before `at` ({live: true}); else null. t is the second of
 * its video that is `at`.
 */
export function recordingAt(recs, at) {
  const when = Date.parse(at);
  if (!Array.isArray(recs) || Number.isNaN(when)) return null;
  let found = null;
  for (const r of recs) {
    const from = Date.parse(r.started_at);
    if (Number.isNaN(from) || when < from) continue;
    if (r.state === 'recording') { found = { rec: r, t: (when - from) / 1000, live: true }; continue; }
    const to = Date.parse(r.ended_at);
    if (!playable(r) || Number.isNaN(to) || when > to) continue;
    if (!found || found.live || Date.parse(found.rec.started_at) < from) found = { rec: r, t: (when - from) / 1000, live: false };
  }
  return found;
}

/** The console's address of a recording opened at second t (of step seq). */
export function recordingHref(desktopID, rid, t, seq) {
  const q = new URLSearchParams({ rid });
  if (t != null) q.set('t', (Math.round(t * 10) / 10).toString());
  if (seq != null) q.set('step', String(seq));
  return `#/desktops/${encodeURIComponent(desktopID)}/recordings?${q}`;
}

/** The clock time of ts; with the date when it is not today. */
function clock(ts) {
  const d = new Date(ts);
  if (Number.isNaN(d.getTime())) return String(ts || '—');
  const t = d.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });
  if (d.toDateString() === new Date().toDateString()) return t;
  return `${d.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${t}`;
}

const STATE_PILL = { recording: 'pill-rec', done: 'pill-ok', failed: 'pill-bad' };

function statePill(r) {
  return h(`span.pill.${STATE_PILL[r.state] || 'pill-idle'}`, h('span.dot'), r.state);
}

/** A file name for a recording's video, as the server names it. */
function fileName(deskName, r) {
  const d = new Date(r.started_at);
  const p = (n) => String(n).padStart(2, '0');
  const stamp = Number.isNaN(d.getTime()) ? r.id
    : `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
  return `${deskName || 'desktop'}-${stamp}.webm`;
}

// ---------- the tab ----------
export function recordingsTab(box, id, desk, params = {}) {
  const ctl = new AbortController();
  const { signal } = ctl;
  let disposed = false;
  const base = `#/desktops/${encodeURIComponent(id)}/recordings`;

  let recs = []; // oldest first, as the server lists them
  let loaded = false;
  let listError = null;
  let lastJSON = '';
  let fetchedAt = 0; // performance.now() of the last list: elapsed times tick from it
  let underWay = null; // the recording under way
  let stopping = ''; // the id being stopped from here
  let starting = false;
  let unavailable = ''; // why the server cannot record (503)
  const deleting = new Set();
  let pending = params.rid ? { rid: params.rid, t: params.t != null && params.t !== '' ? Number(params.t) : null, step: params.step || null, autoplay: params.t != null } : null;

  // ----- the tools: fps and Start -----
  const fpsSel = h('select.rec-fps', { 'aria-label': 'Frames a second', title: 'How often the screen is looked at (only frames that changed are encoded)' },
    FPS_CHOICES.map((f) => h('option', { value: String(f), selected: f === DEFAULT_FPS }, `${f} fps`)));
  const startBtn = h('button.btn.btn-primary.btn-sm.rec-start', { type: 'button', onclick: () => start() }, h('span.rec-dot.rec-dot-idle'), 'Start recording');
  const toolsHint = h('span.muted.small.rec-hint');
  const banner = h('div.banner.banner-error.rec-banner', { hidden: true, role: 'alert' });
  const liveBox = h('div.rec-live', { hidden: true, 'aria-live': 'polite' });
  const playerBox = h('section.rec-player', { hidden: true, 'aria-label': 'Recording player' });
  const body = h('div.rec-list', h('div.loading', h('span.spinner'), 'Loading recordings…'));

  box.append(
    h('div.tab-head.rec-head',
      h('p.muted', 'Recordings of the screen as video, made from the hypervisor’s side (boot, login screen, any window manager). Only frames that changed are kept; second t of a video is its start time + t, so a step of the Steps tab is found in it.'),
      h('div.rec-tools', toolsHint, fpsSel, startBtn)),
    banner, liveBox, playerBox, body);

  function renderTools() {
    const d = desk();
    const running = d?.state === 'running';
    let why = '';
    if (underWay) why = 'A recording is under way: stop it to start another.';
    else if (!d) why = 'Loading the desktop…';
    else if (!running) why = `Recordings are made while the desktop is running (it is ${d.state}).`;
    startBtn.disabled = !running || !!underWay || starting;
    startBtn.title = why || 'Record the screen until you stop it (or the desktop stops running)';
    fpsSel.disabled = startBtn.disabled;
    toolsHint.textContent = !underWay && d && !running ? why : '';
    banner.hidden = !unavailable;
    clear(banner, unavailable ? [h('strong', 'Recording is not available: '), unavailable] : null);
  }

  // ----- the recording under way -----
  const elapsedMs = (r) => (r.duration_ms || 0) + (r === underWay && fetchedAt ? performance.now() - fetchedAt : 0);

  function renderLive() {
    liveBox.hidden = !underWay;
    if (!underWay) { clear(liveBox); return; }
    const r = underWay;
    const stopBtn = h('button.btn.btn-sm.btn-danger.rec-stop', { type: 'button', onclick: () => stop(r, stopBtn) }, icon('stop', 14), 'Stop');
    if (stopping === r.id) { stopBtn.disabled = true; stopBtn.classList.add('is-busy'); }
    clear(liveBox,
      h('span.rec-dot', { 'aria-hidden': 'true' }),
      h('strong.rec-live-label', stopping === r.id ? 'Finishing the video…' : 'Recording'),
      h('span.rec-elapsed', { title: `Since ${fmtTime(r.started_at)}` }, fmtClock(elapsedMs(r) / 1000)),
      h('span.rec-live-meta',
        h('span', { title: 'Screens that changed, encoded so far' }, `${Number(r.frames || 0).toLocaleString()} frame${r.frames === 1 ? '' : 's'}`),
        h('span', `${r.fps} fps`),
        r.width && r.height ? h('span', `${r.width}×${r.height}`) : null,
        h('span.rec-actor', { title: 'Who started it' }, `by ${r.actor || '—'}`),
        r.max_seconds ? h('span.rec-left', { title: `It ends by itself after ${fmtClock(r.max_seconds)}` }, `ends in ${fmtClock(r.max_seconds - elapsedMs(r) / 1000)}`) : null),
      stopBtn);
  }

  // Elapsed times tick between the polls.
  function tick() {
    if (!underWay) return;
    const ms = elapsedMs(underWay);
    for (const el of box.querySelectorAll('.rec-elapsed, .rec-dur-live')) el.textContent = fmtClock(ms / 1000);
    const left = liveBox.querySelector('.rec-left');
    if (left) left.textContent = `ends in ${fmtClock(underWay.max_seconds - ms / 1000)}`;
  }

  // ----- the list -----
  function renderList() {
    if (listError && !loaded) {
      clear(body, h('div.empty.empty-error.empty-sm', h('p', describe(listError)),
        h('button.btn.btn-sm', { type: 'button', onclick: load }, icon('refresh', 14), 'Try again')));
      return;
    }
    if (!loaded) return;
    if (!recs.length) {
      clear(body, h('div.empty.empty-sm.rec-empty',
        h('p', h('strong', 'No recordings yet.')),
        h('p.muted', 'Start one above, or ask for one with a computer-use call (record=true). Recordings are kept until deleted, the desktop is deleted, or newer ones need the room — unless marked Kept: those stay until you delete them.')));
      return;
    }
    const newest = [...recs].reverse();
    clear(body, h('div.table-wrap', h('table.rec-table',
      h('thead', h('tr', ['Started', 'Duration', 'Size', 'Frames', 'State', 'By', 'How it ended', ''].map((x, i) => h(`th${i >= 1 && i <= 3 ? '.num' : ''}`, x)))),
      h('tbody', newest.map(row)))),
    listError ? h('p.muted.small', `Could not refresh the list: ${describe(listError)}`) : null);
  }

  function row(r) {
    const can = playable(r);
    const sel = current?.rid === r.id;
    const live = r.state === 'recording';
    const stopBtn = live ? h('button.btn.btn-sm.btn-danger-ghost', {
      type: 'button', title: 'Stop this recording', onclick: (e) => { e.stopPropagation(); stop(r, stopBtn); },
    }, icon('stop', 14), 'Stop') : null;
    if (stopBtn && stopping === r.id) { stopBtn.disabled = true; stopBtn.classList.add('is-busy'); }
    const rm = h('button.btn.btn-sm.btn-danger-ghost.rec-delete', {
      type: 'button', title: live ? 'Stop and delete this recording' : 'Delete this recording', 'aria-label': 'Delete',
      onclick: (e) => { e.stopPropagation(); remove(r, rm); },
    }, icon('trash', 14));
    if (deleting.has(r.id)) { rm.disabled = true; rm.classList.add('is-busy'); }
    const keepBtn = h(`button.btn.btn-sm.rec-keep${r.kept ? '.btn-primary' : ''}`, {
      type: 'button', 'aria-pressed': String(!!r.kept),
      title: r.kept ? 'Kept: it stays when the desktop is deleted and is never removed for room. Click to let it go with the desktop.'
        : 'Keep it: it stays when the desktop is deleted and is never removed for room',
      onclick: (e) => { e.stopPropagation(); keep(r, keepBtn); },
    }, r.kept ? 'Kept' : 'Keep');
    const ended = r.error
      ? h('span.rec-error', { title: r.error }, r.error)
      : live ? h('span.muted', 'under way') : (r.ended_why || '—');
    return h(`tr${can ? '.clickable' : ''}${sel ? '.selected' : ''}`, {
      dataset: { rid: r.id, state: r.state, started: r.started_at || '' },
      title: can ? 'Play this recording' : '',
      onclick: can ? () => open(r.id, { autoplay: true, user: true }) : null,
    },
    h('td.nowrap', h('time', { datetime: r.started_at, title: fmtTime(r.started_at) }, clock(r.started_at)),
      h('div.muted.small', fmtAgo(r.started_at))),
    h(`td.nowrap.num${live ? '.rec-dur-live' : ''}`, fmtClock((live ? elapsedMs(r) : r.duration_ms) / 1000)),
    h('td.nowrap.num', live || (!r.size_bytes && !r.video_url) ? '—' : fmtBytes(r.size_bytes)),
    h('td.nowrap.num', { title: `${r.fps} frame${r.fps === 1 ? '' : 's'} a second looked at; only changed ones are encoded` },
      Number(r.frames || 0).toLocaleString(), h('span.muted.small', ` · ${r.fps} fps`)),
    h('td', statePill(r)),
    h('td.rec-actor', { title: r.actor || '' }, r.actor || '—'),
    h('td.rec-why', ended),
    h('td.row-actions',
      can ? h('button.btn.btn-sm.rec-play', { type: 'button', title: 'Play', onclick: (e) => { e.stopPropagation(); open(r.id, { autoplay: true, user: true }); } }, icon('play', 14), 'Play') : null,
      can ? (() => { const b = h('button.btn.btn-sm', { type: 'button', title: 'Download the WebM file', 'aria-label': 'Download', onclick: (e) => { e.stopPropagation(); download(r, b); } }, icon('download', 14)); return b; })() : null,
      stopBtn, keepBtn, rm));
  }

  // ----- loading and polling -----
  let asked = 0; // lists asked for
  let applied = 0; // the newest list shown: an older answer arriving late is dropped
  async function load() {
    const my = ++asked;
    try {
      const b = await get(`/desktops/${seg(id)}/recordings`, { signal });
      if (disposed || my < applied) return;
      applied = my;
      const list = Array.isArray(b) ? b : b?.recordings || [];
      const was = underWay;
      fetchedAt = performance.now();
      listError = null;
      recs = list;
      underWay = list.find((r) => r.state === 'recording') || null;
      loaded = true;
      if (was && (!underWay || underWay.id !== was.id) && stopping !== was.id) {
        const end = list.find((r) => r.id === was.id);
        if (end?.state === 'failed') toast(`The recording failed: ${end.error || 'no reason given'}`, 'error');
        else if (end) toast(`The recording ended: ${end.ended_why || 'done'} (${fmtClock(end.duration_ms / 1000)}).`, 'info', 7000);
      }
      // Re-render only what changed, so buttons under the pointer stay put.
      const json = JSON.stringify(list);
      if (json !== lastJSON) { lastJSON = json; renderList(); renderLive(); renderPlayerInfo(); }
      if (current && !list.some((r) => r.id === current.rid) && !deleting.has(current.rid)) {
        closePlayer(true);
        toast('The recording that was playing was deleted.', 'info');
      }
      renderTools();
      if (pending) { const p = pending; pending = null; open(p.rid, p); }
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      listError = e;
      renderList();
    }
  }

  let polling = false;
  async function poll() {
    if (polling || disposed || document.visibilityState !== 'visible' || !box.isConnected) return;
    polling = true;
    try { await load(); } finally { polling = false; }
  }

  // ----- start, stop, delete, download -----
  async function start() {
    if (starting) return;
    starting = true;
    const fps = Number(fpsSel.value) || DEFAULT_FPS;
    try {
      const r = await busy(startBtn, () => post(`/desktops/${seg(id)}/recordings`, { fps }, { signal }));
      unavailable = '';
      toast(`Recording the screen (${r?.fps || fps} fps). Stop it when you are done.`, 'success');
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      if (e.status === 503) unavailable = describe(e);
      else if (e.status === 409) toast(`A recording is already under way: ${describe(e)}`, 'error');
      else toast(`Could not start recording: ${describe(e)}`, 'error');
    } finally {
      starting = false;
    }
    if (!disposed) { renderTools(); load(); }
  }

  async function stop(r, btn) {
    if (stopping) return;
    stopping = r.id;
    renderLive();
    renderList();
    try {
      const done = await busy(btn, () => post(`/desktops/${seg(id)}/recordings/${seg(r.id)}/stop`, undefined, { signal }));
      if (disposed) return;
      toast(done?.state === 'failed'
        ? `The recording failed: ${done.error || 'no reason given'}`
        : `Recording stopped: ${fmtClock((done?.duration_ms || 0) / 1000)}, ${fmtBytes(done?.size_bytes || 0)}.`, done?.state === 'failed' ? 'error' : 'success');
      await load();
      stopping = '';
      renderTools();
      if (playable(done) && done.size_bytes <= AUTO_OPEN_MAX && !current) open(done.id, { autoplay: false, user: true });
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      toast(`Could not stop the recording: ${describe(e)}`, 'error');
      stopping = '';
      load();
    }
  }

  async function keep(r, btn) {
    try {
      await busy(btn, () => api('PATCH', `/desktops/${seg(id)}/recordings/${seg(r.id)}`, { kept: !r.kept }, { signal }));
      toast(r.kept ? 'The recording goes with the desktop again.' : 'Recording kept: it stays when the desktop is deleted.', 'success');
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      toast(`Could not change the recording: ${describe(e)}`, 'error');
    }
    if (!disposed) load();
  }

  async function remove(r, btn) {
    const live = r.state === 'recording';
    const ok = await confirmDialog({
      title: 'Delete this recording?',
      message: [
        `The recording started ${fmtTime(r.started_at)}${live ? ' (still under way: it is stopped first)' : ` (${fmtClock(r.duration_ms / 1000)}, ${fmtBytes(r.size_bytes)})`} is deleted from the server.`,
        h('p', h('strong', 'This cannot be undone.')),
      ],
      confirmLabel: 'Delete recording', danger: true,
    });
    if (!ok || disposed) return;
    deleting.add(r.id);
    try {
      await busy(btn, () => del(`/desktops/${seg(id)}/recordings/${seg(r.id)}`, { signal }));
      if (current?.rid === r.id) closePlayer(true);
      toast('Recording deleted.', 'success');
    } catch (e) {
      if (disposed || e.name === 'AbortError') return;
      toast(`Could not delete the recording: ${describe(e)}`, 'error');
    } finally {
      deleting.delete(r.id);
    }
    if (!disposed) { lastJSON = ''; load(); }
  }

  async function download(r, btn) {
    const name = fileName(desk()?.name, r);
    try {
      let blob = blobs.get(r.id)?.blob;
      let file = name;
      if (!blob) {
        const res = await busy(btn, () => api('GET', `/desktops/${seg(id)}/recordings/${seg(r.id)}/video?download=true`, undefined, { raw: true, signal }));
        const cd = res.headers.get('Content-Disposition') || '';
        const m = cd.match(/filename\*?=(?:UTF-8'')?"?([^";]+)"?/i);
        if (m) file = decodeURIComponent(m[1]);
        blob = await res.blob();
      }
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: file });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 30000);
      toast(`Downloaded ${file} (${fmtBytes(blob.size)}).`, 'success');
    } catch (e) {
      if (!disposed && e.name !== 'AbortError') toast(`Could not download the recording: ${describe(e)}`, 'error');
    }
  }

  // ----- the player -----
  // Videos fetched with the token; the last few are kept for replay and download.
  const blobs = new Map(); // rid -> {blob, url}
  function keepBlob(rid, blob) {
    const url = URL.createObjectURL(blob);
    blobs.set(rid, { blob, url });
    while (blobs.size > 3) {
      const [old, v] = blobs.entries().next().value;
      if (old === current?.rid) { blobs.delete(old); blobs.set(old, v); continue; }
      URL.revokeObjectURL(v.url);
      blobs.delete(old);
    }
    return url;
  }

  let current = null; // {rid, t, step, video, ctl}
  const playerInfo = h('div.rec-player-info');
  const playerActions = h('div.actions');
  const stage = h('div.rec-stage');
  const jumpNote = h('div.rec-jump', { hidden: true });
  playerBox.append(h('div.rec-player-head', playerInfo, playerActions), jumpNote, stage);

  const fetchVideo = async (rid, onProgress, sig) => {
    const res = await api('GET', `/desktops/${seg(id)}/recordings/${seg(rid)}/video`, undefined, { raw: true, signal: sig });
    const total = Number(res.headers.get('Content-Length')) || 0;
    if (!res.body?.getReader) return res.blob();
    const reader = res.body.getReader();
    const parts = [];
    let n = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      parts.push(value);
      n += value.length;
      onProgress(n, total);
    }
    return new Blob(parts, { type: res.headers.get('Content-Type') || 'video/webm' });
  };

  let shownInfo = '';
  function renderPlayerInfo() {
    if (!current) return;
    const r = recs.find((x) => x.id === current.rid);
    if (!r) return;
    const key = `${current.rid}:${JSON.stringify(r)}`;
    if (key === shownInfo) return; // unchanged: keep its buttons as they are
    shownInfo = key;
    clear(playerInfo,
      h('h3', 'Recording of ', h('time', { datetime: r.started_at, title: fmtTime(r.started_at) }, clock(r.started_at)), ' ', statePill(r)),
      h('div.rec-player-meta.muted.small',
        [fmtClock(r.duration_ms / 1000), r.size_bytes ? fmtBytes(r.size_bytes) : '', `${Number(r.frames || 0).toLocaleString()} frames at ${r.fps} fps`,
          r.width && r.height ? `${r.width}×${r.height}` : '', `by ${r.actor || '—'}`, r.ended_why || ''].filter(Boolean).join(' · '),
        r.error ? h('span.rec-error', ` · ${r.error}`) : null));
    const dl = h('button.btn.btn-sm', { type: 'button', disabled: !playable(r), onclick: () => download(r, dl) }, icon('download', 14), 'Download');
    const rm = h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', onclick: () => remove(r, rm) }, icon('trash', 14), 'Delete');
    clear(playerActions, dl, rm,
      h('button.icon-btn', { type: 'button', title: 'Close the player', 'aria-label': 'Close the player', onclick: () => closePlayer(true) }, icon('x', 16)));
  }

  function closePlayer(user = false) {
    current?.ctl.abort();
    current?.video?.pause();
    current = null;
    shownInfo = '';
    playerBox.hidden = true;
    clear(stage);
    jumpNote.hidden = true;
    if (user && location.hash.startsWith(`${base}?`)) history.replaceState(null, '', base);
    renderList();
  }

  /** Opens recording rid in the player: at second t (less LEAD_S) when given, playing when autoplay. */
  async function open(rid, { t = null, step = null, autoplay = false, user = false } = {}) {
    const r = recs.find((x) => x.id === rid);
    if (!r) { toast(`There is no recording ${rid} (any more).`, 'error'); return; }
    if (current?.rid === rid && current.video && t == null) { // already open: play it again from where it is
      if (autoplay) current.video.play().catch(() => {});
      playerBox.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
      return;
    }
    current?.ctl.abort();
    current?.video?.pause();
    const me = { rid, t, step, video: null, ctl: new AbortController() };
    current = me;
    if (user) history.replaceState(null, '', `${base}?${new URLSearchParams({ rid })}`);
    playerBox.hidden = false;
    renderPlayerInfo();
    renderList();
    renderJump();
    playerBox.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    if (!playable(r)) {
      clear(stage, h('div.rec-stage-note', r.state === 'recording'
        ? 'This recording is still under way: it can be played once it is stopped.'
        : `This recording has no video${r.error ? `: ${r.error}` : '.'}`));
      return;
    }
    let url = blobs.get(rid)?.url;
    if (!url) {
      const bar = h('progress', { max: 1, value: 0 });
      const text = h('span', 'Loading the video…');
      clear(stage, h('div.rec-stage-note.rec-loading', h('span.spinner'), text, bar));
      try {
        const blob = await fetchVideo(rid, (n, total) => {
          total ||= r.size_bytes;
          text.textContent = `Loading the video… ${fmtBytes(n)}${total ? ` of ${fmtBytes(total)}` : ''}`;
          if (total) bar.value = Math.min(1, n / total); else bar.removeAttribute('value');
        }, AbortSignal.any ? AbortSignal.any([signal, me.ctl.signal]) : me.ctl.signal);
        if (disposed || current !== me) return;
        url = keepBlob(rid, blob);
      } catch (e) {
        if (disposed || current !== me || e.name === 'AbortError') return;
        clear(stage, h('div.rec-stage-note.rec-stage-error', `Could not load the video: ${describe(e)}`,
          h('button.btn.btn-sm', { type: 'button', onclick: () => { current = null; open(rid, { t, step, autoplay, user }); } }, icon('refresh', 14), 'Try again')));
        return;
      }
    }
    const video = h('video.rec-video', { controls: true, playsInline: true, preload: 'auto', muted: true, dataset: { rid } });
    if (r.width && r.height) { video.width = r.width; video.height = r.height; video.style.aspectRatio = `${r.width} / ${r.height}`; }
    video.addEventListener('loadedmetadata', () => {
      if (t != null && Number.isFinite(t)) {
        const d = video.duration;
        let at = Math.max(0, t - LEAD_S);
        if (Number.isFinite(d) && at > d) at = Math.max(0, d - 0.1);
        video.currentTime = at;
      }
      if (autoplay) video.play().catch(() => { /* the user presses play */ });
    }, { once: true });
    video.addEventListener('error', () => {
      const err = video.error;
      clear(stage, h('div.rec-stage-note.rec-stage-error', `This browser cannot play the video${err?.message ? `: ${err.message}` : ''} (it is VP8 in WebM). Download it to watch it elsewhere.`));
    });
    me.video = video;
    video.src = url;
    clear(stage, video);
  }

  function renderJump() {
    const c = current;
    if (!c || c.t == null || !Number.isFinite(c.t)) { jumpNote.hidden = true; return; }
    const at = Math.max(0, c.t - LEAD_S);
    jumpNote.hidden = false;
    clear(jumpNote,
      icon('play', 14),
      h('span', c.step ? ['Step ', h('strong', `#${c.step}`), ` is at ${fmtClock(c.t)} of this video; it opened a second before.`]
        : [`Opened at ${fmtClock(c.t)}.`]),
      h('button.btn.btn-sm', { type: 'button', onclick: () => { if (c.video) { c.video.currentTime = at; c.video.play().catch(() => {}); } } }, `Replay from ${fmtClock(at)}`),
      c.step ? h('a.btn.btn-sm.btn-ghost', { href: `#/desktops/${encodeURIComponent(id)}/steps?seq=${encodeURIComponent(c.step)}` }, icon('back', 14), `Back to step #${c.step}`) : null);
  }

  // ----- go -----
  renderTools();
  load();
  const timer = setInterval(poll, POLL_MS);
  const ticker = setInterval(tick, 500);
  const onVis = () => { if (document.visibilityState === 'visible') poll(); };
  document.addEventListener('visibilitychange', onVis);
  const unsub = subscribe((reason, changed) => {
    if (changed && changed !== id) return;
    renderTools();
  });

  return () => {
    disposed = true;
    clearInterval(timer);
    clearInterval(ticker);
    document.removeEventListener('visibilitychange', onVis);
    unsub();
    current?.video?.pause();
    ctl.abort();
    current?.ctl.abort();
    for (const v of blobs.values()) URL.revokeObjectURL(v.url);
    blobs.clear();
  };
}
