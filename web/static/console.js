// bureau console page: /console/{id}?token=<console token>.
//
// Connects noVNC to /api/v1/desktops/{id}/vnc over a WebSocket (subprotocol
// "binary"). The token is the only credential; it goes in the query string of
// the session endpoint and of the WebSocket URL.
//
// Flow (see notes/console-contract.md):
//   - GET …/console/session first. 401 → the session is over (no reconnect).
//     running → connect. hibernated/paused → connect and show "resuming…"
//     (the server wakes the desktop before it pipes RFB). Other states →
//     show the state and poll the session every 3 s until running.
//   - After any disconnect, ask the session endpoint again: 401 → ended;
//     running → reconnect with back-off 1 s, 2 s, 4 s … 30 s; other state →
//     poll every 3 s and reconnect when running.
//
// For tests: document.body.dataset.state is one of
// connecting|resuming|connected|disconnected|ended, and window.bureauRFB is
// the current RFB object. The control bar and the requests panel
// (console-people.js) say what they expose for tests there.

import RFB from '/static/novnc/core/rfb.js';
import { setupTerminal } from '/static/terminal.js';
import { setupPeople } from '/static/console-people.js';

const $ = (id) => document.getElementById(id);

const ui = {
  name: $('desktop-name'),
  label: $('state-label'),
  detail: $('state-detail'),
  badge: $('view-only-badge'),
  expires: $('expires'),
  screen: $('screen'),
  overlay: $('overlay'),
  overlayText: $('overlay-text'),
  reconnect: $('btn-reconnect'),
  cad: $('btn-cad'),
  clipboard: $('btn-clipboard'),
  fullscreen: $('btn-fullscreen'),
  panel: $('clipboard-panel'),
  panelClose: $('btn-clipboard-close'),
  clipOut: $('clip-out'),
  clipSend: $('btn-clip-send'),
  clipSent: $('clip-sent'),
  clipIn: $('clip-in'),
  clipImg: $('clip-img'),
  clipCopy: $('btn-clip-copy'),
  clipCopied: $('clip-copied'),
};

const m = location.pathname.match(/\/console\/([^/]+)\/?$/);
const desktopID = m ? decodeURIComponent(m[1]) : '';
const token = new URLSearchParams(location.search).get('token') || '';

const sessionURL = `/api/v1/desktops/${encodeURIComponent(desktopID)}/console/session?token=${encodeURIComponent(token)}`;
const vncURL = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}` +
  `/api/v1/desktops/${encodeURIComponent(desktopID)}/vnc?token=${encodeURIComponent(token)}`;

const clipboardURL = `/api/v1/desktops/${encodeURIComponent(desktopID)}/console/clipboard?token=${encodeURIComponent(token)}`;

// The Terminal tab replaces the screen while it is shown (not offered to
// a view-only console).
const terminal = setupTerminal({
  desktopID, token, button: $('terminal-tab'), container: $('terminal'),
  onShow: (on) => {
    ui.screen.hidden = on;
    ui.overlay.classList.toggle('behind-terminal', on);
    if (!on && rfb && !viewOnly) rfb.focus();
  },
});

// Who holds input, who watches and the agent's pending requests
// (console-people.js). The screen gets the keyboard back after an action.
const people = setupPeople({
  desktopID, token,
  focusScreen: () => { if (rfb && !viewOnly && ui.screen.hidden === false) rfb.focus(); },
});

const POLL_MS = 3000;
const CLIP_POLL_MS = 2000; // the desktop's clipboard, while the panel is open
const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30000;
const STABLE_MS = 10000; // a connection that lasted this long resets the back-off

// Close codes the server ends a session with.
const CLOSE_REASONS = {
  4001: 'token expired',
  4002: 'token revoked',
  4003: 'desktop stopped',
  1011: 'VNC server error',
};

const STATE_LABELS = {
  connecting: 'connecting…',
  resuming: 'resuming…',
  connected: 'connected',
  disconnected: 'disconnected',
  ended: 'session ended',
};

let rfb = null;
let viewOnly = false;
let everConnected = false;
let connectedAt = 0;
let backoff = BACKOFF_MIN_MS;
let timer = null;
let countdown = null;
let leaving = false;
let lastClose = null; // {code, reason} of the last WebSocket close

// ---- state display ----

function setState(state, detail = '') {
  document.body.dataset.state = state;
  ui.label.textContent = STATE_LABELS[state] || state;
  ui.detail.textContent = detail;
  ui.detail.title = detail;
  const busy = state === 'connecting' || state === 'resuming';
  ui.overlay.hidden = state === 'connected';
  ui.overlay.classList.toggle('busy', busy);
  ui.overlayText.textContent = detail ? `${STATE_LABELS[state]}${busy ? ' ' : ': '}${detail}` : STATE_LABELS[state];
  ui.reconnect.hidden = state !== 'disconnected';
  const live = state === 'connected' && !viewOnly;
  ui.cad.disabled = !live;
  ui.clipSend.disabled = !live;
  if (state === 'connected' && !ui.panel.hidden) pollClipboard();
}

function clearTimers() {
  clearTimeout(timer);
  clearInterval(countdown);
  timer = null;
  countdown = null;
}

// Shows "disconnected: <reason> — retrying in Ns" with a live countdown,
// then runs fn.
function retryIn(ms, reason, fn) {
  clearTimers();
  const due = Date.now() + ms;
  const tick = () => {
    const s = Math.max(0, Math.ceil((due - Date.now()) / 1000));
    setState('disconnected', `${reason} — retrying in ${s} s`);
  };
  tick();
  countdown = setInterval(tick, 250);
  timer = setTimeout(() => { clearTimers(); fn(); }, ms);
}

function showSessionInfo(s) {
  if (s.name) {
    ui.name.textContent = s.name;
    ui.name.title = s.desktop_id || desktopID;
    people.setTitle(`${s.name} — bureau console`);
  }
  viewOnly = !!s.view_only;
  people.setViewOnly(viewOnly);
  terminal.setEnabled(!viewOnly);
  ui.badge.hidden = !viewOnly;
  document.body.classList.toggle('view-only', viewOnly);
  ui.clipOut.disabled = viewOnly;
  // A screen-only console (made by a computer-only token) has no clipboard.
  ui.clipboard.hidden = !!s.screen_only;
  if (rfb) rfb.viewOnly = viewOnly;
  if (s.expires_at) {
    const t = new Date(s.expires_at);
    if (!isNaN(t)) {
      ui.expires.textContent = `expires ${t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' })}`;
      ui.expires.title = t.toString();
    }
  }
}

// ---- session endpoint ----

// Returns {kind: 'ok', session} | {kind: 'ended', reason} | {kind: 'error', reason}.
async function fetchSession() {
  let resp;
  try {
    resp = await fetch(sessionURL, { cache: 'no-store', credentials: 'omit' });
  } catch (e) {
    return { kind: 'error', reason: 'server unreachable' };
  }
  let body = null;
  try { body = await resp.json(); } catch (e) { /* not JSON */ }
  if (resp.ok && body) return { kind: 'ok', session: body };
  const msg = body && body.error && body.error.message;
  if (resp.status === 401 || resp.status === 403 || resp.status === 404) {
    return { kind: 'ended', reason: msg || (resp.status === 404 ? 'desktop not found' : 'token is not valid') };
  }
  return { kind: 'error', reason: msg || `server error ${resp.status}` };
}

function endSession(reason) {
  clearTimers();
  disposeRFB();
  setState('ended', reason);
}

// Decides what to do from the session endpoint. initial: no connection has
// been made yet on this page (or the user asked to reconnect), so a
// hibernated or paused desktop is woken by connecting.
async function checkAndConnect({ initial = false, reason = '' } = {}) {
  clearTimers();
  const r = await fetchSession();
  if (leaving) return;
  if (r.kind === 'ended') {
    // A close code names the cause better than a generic 401 message.
    const code = lastClose && lastClose.code;
    endSession(code === 4001 || code === 4002 ? CLOSE_REASONS[code] : r.reason);
    return;
  }
  if (r.kind === 'error') {
    const delay = nextBackoff();
    retryIn(delay, reason || r.reason, () => checkAndConnect({ initial, reason }));
    return;
  }
  const s = r.session;
  showSessionInfo(s);
  if (s.state === 'running') {
    if (initial || !reason) {
      connect('connecting');
    } else {
      // Reconnect after a drop: back off.
      retryIn(nextBackoff(), reason, () => connect('connecting'));
    }
    return;
  }
  if (wakes(s.state, initial)) {
    connect('resuming');
    return;
  }
  // Any other state: show it and poll until the desktop runs again.
  clearTimers();
  const why = `desktop is ${s.state}`;
  setState('disconnected', reason && reason !== why ? `${reason}; ${why}` : why);
  timer = setTimeout(() => pollUntilRunning(initial), POLL_MS);
}

// wakes says whether connecting should wake a desktop in state st: one in
// an idle tier always (use wakes it), a paused or hibernated one only when
// the page was just opened (a reconnect must not undo a deliberate pause).
function wakes(st, initial) {
  return st === 'napping' || st === 'sleeping' || (initial && (st === 'hibernated' || st === 'paused'));
}

async function pollUntilRunning(initial) {
  const r = await fetchSession();
  if (leaving) return;
  if (r.kind === 'ended') { endSession(r.reason); return; }
  if (r.kind === 'ok') {
    showSessionInfo(r.session);
    const st = r.session.state;
    if (st === 'running') { backoff = BACKOFF_MIN_MS; connect('connecting'); return; }
    if (wakes(st, initial)) { connect('resuming'); return; }
    setState('disconnected', `desktop is ${st}`);
  } else {
    setState('disconnected', r.reason);
  }
  clearTimers();
  timer = setTimeout(() => pollUntilRunning(initial), POLL_MS);
}

function nextBackoff() {
  const d = backoff;
  backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
  return d;
}

// ---- RFB ----

function disposeRFB() {
  if (!rfb) return;
  const old = rfb;
  rfb = null;
  old._bureauDisposed = true;
  try { old.disconnect(); } catch (e) { /* already gone */ }
}

function connect(mode) {
  clearTimers();
  disposeRFB();
  lastClose = null;
  setState(mode, mode === 'resuming' ? 'waking the desktop, this takes up to 30 s' : '');

  // The WebSocket is made here (not by noVNC from a URL) so the page sees
  // the close code the server ends the session with.
  let ws;
  try {
    ws = new WebSocket(vncURL, ['binary']);
  } catch (e) {
    retryIn(nextBackoff(), 'cannot open WebSocket', () => checkAndConnect({ reason: 'cannot open WebSocket' }));
    return;
  }
  ws.addEventListener('close', (ev) => { lastClose = { code: ev.code, reason: ev.reason }; });

  const r = new RFB(ui.screen, ws, { shared: true, wsProtocols: ['binary'] });
  r.scaleViewport = true;
  r.resizeSession = false;
  r.clipViewport = false;
  r.focusOnClick = true;
  r.background = '#0d0f12';
  r.qualityLevel = 6;
  r.compressionLevel = 2;
  r.viewOnly = viewOnly;
  rfb = r;
  window.bureauRFB = r;

  r.addEventListener('connect', () => {
    if (r !== rfb) return;
    everConnected = true;
    connectedAt = Date.now();
    setState('connected');
    if (!viewOnly) r.focus();
  });

  r.addEventListener('disconnect', (ev) => {
    if (r._bureauDisposed || leaving) return;
    if (r === rfb) rfb = null;
    const wasUp = connectedAt && Date.now() - connectedAt >= STABLE_MS;
    connectedAt = 0;
    if (wasUp) backoff = BACKOFF_MIN_MS;
    // The close event may land just after noVNC's disconnect; give it a tick.
    setTimeout(() => {
      const reason = disconnectReason(ev.detail && ev.detail.clean);
      setState('disconnected', reason);
      checkAndConnect({ initial: false, reason });
    }, 50);
  });

  r.addEventListener('securityfailure', (ev) => {
    const d = ev.detail || {};
    lastClose = { code: 0, reason: d.reason || `security failure (${d.status})` };
  });

  r.addEventListener('credentialsrequired', () => {
    // QEMU's VNC has no password here; a credentials request means the
    // socket reached something else. Give up on this connection.
    lastClose = { code: 0, reason: 'the VNC server asked for credentials' };
    r.disconnect();
  });

  r.addEventListener('clipboard', (ev) => {
    const text = (ev.detail && ev.detail.text) || '';
    ui.clipIn.value = text;
    ui.clipboard.classList.add('flash');
    setTimeout(() => ui.clipboard.classList.remove('flash'), 800);
  });
}

function disconnectReason(clean) {
  if (lastClose) {
    if (CLOSE_REASONS[lastClose.code]) return CLOSE_REASONS[lastClose.code];
    if (lastClose.reason) return lastClose.reason;
    if (lastClose.code === 1006) return everConnected ? 'connection lost' : 'could not connect';
  }
  return clean ? 'connection closed' : (everConnected ? 'connection lost' : 'could not connect');
}

// ---- toolbar ----

ui.reconnect.addEventListener('click', () => {
  backoff = BACKOFF_MIN_MS;
  checkAndConnect({ initial: true });
});

ui.cad.addEventListener('click', () => {
  if (rfb && !viewOnly) { rfb.sendCtrlAltDel(); rfb.focus(); }
});

function toggleFullscreen() {
  if (document.fullscreenElement) {
    document.exitFullscreen().catch(() => {});
  } else if (document.documentElement.requestFullscreen) {
    document.documentElement.requestFullscreen().catch(() => {});
  }
}
ui.fullscreen.addEventListener('click', toggleFullscreen);
document.addEventListener('fullscreenchange', () => {
  const fs = !!document.fullscreenElement;
  ui.fullscreen.textContent = fs ? 'Exit full screen' : 'Full screen';
  document.body.classList.toggle('fullscreen', fs);
});
if (!document.fullscreenEnabled) ui.fullscreen.hidden = true;

function setPanel(open) {
  ui.panel.hidden = !open;
  ui.clipboard.setAttribute('aria-expanded', String(open));
  ui.clipboard.classList.toggle('active', open);
  if (open && !viewOnly) ui.clipOut.focus();
  else if (!open && rfb && !viewOnly) rfb.focus();
  if (open) pollClipboard();
}

// ---- the desktop's clipboard (through bureau's guest agent) ----

let clipTimer = null;
let clipSeen = ''; // what the panel last showed, to flash on a change
let clipImgURL = '';

function showFromDesktop(text, imageBlob) {
  const key = imageBlob ? `image:${imageBlob.size}:${text}` : `text:${text}`;
  if (key === clipSeen) return;
  const first = clipSeen === '';
  clipSeen = key;
  ui.clipIn.value = text;
  if (clipImgURL) { URL.revokeObjectURL(clipImgURL); clipImgURL = ''; }
  if (imageBlob) clipImgURL = URL.createObjectURL(imageBlob);
  ui.clipImg.hidden = !imageBlob;
  if (imageBlob) ui.clipImg.src = clipImgURL;
  if (!first) {
    ui.clipboard.classList.add('flash');
    setTimeout(() => ui.clipboard.classList.remove('flash'), 800);
  }
}

// pollClipboard reads the desktop's clipboard now and every CLIP_POLL_MS
// while the panel is open and the console connected.
async function pollClipboard() {
  clearTimeout(clipTimer);
  if (ui.panel.hidden || document.body.dataset.state !== 'connected') return;
  try {
    const resp = await fetch(clipboardURL, { cache: 'no-store', credentials: 'omit' });
    if (resp.ok) {
      const cb = await resp.json();
      let image = null;
      const type = (cb.types || []).find((t) => t === 'image/png' || t === 'image/jpeg');
      if (type && !cb.text) {
        const r = await fetch(`${clipboardURL}&type=${encodeURIComponent(type)}`, { cache: 'no-store', credentials: 'omit' });
        if (r.ok) image = await r.blob();
      }
      showFromDesktop(cb.text || '', image);
    }
  } catch (e) {
    // the next poll tries again
  }
  if (!ui.panel.hidden) clipTimer = setTimeout(pollClipboard, CLIP_POLL_MS);
}

// sendClipboard puts text or an image on the desktop's clipboard.
async function sendClipboard(body, contentType, what) {
  try {
    const resp = await fetch(clipboardURL, { method: 'PUT', body, headers: { 'Content-Type': contentType }, credentials: 'omit' });
    if (!resp.ok) {
      const e = await resp.json().catch(() => ({}));
      ui.clipSent.textContent = `not sent: ${(e.error && e.error.message) || resp.status}`;
      return;
    }
    ui.clipSent.textContent = `${what} sent — paste with Ctrl+V on the desktop`;
  } catch (e) {
    ui.clipSent.textContent = 'not sent: the server did not answer';
  }
  setTimeout(() => { ui.clipSent.textContent = ''; }, 3000);
}
ui.clipboard.addEventListener('click', () => setPanel(ui.panel.hidden));
ui.panelClose.addEventListener('click', () => setPanel(false));

ui.clipSend.addEventListener('click', () => {
  if (!rfb || viewOnly) return;
  sendClipboard(JSON.stringify({ text: ui.clipOut.value }), 'application/json', 'text');
});
ui.clipOut.addEventListener('paste', (ev) => {
  if (viewOnly) return;
  const item = [...(ev.clipboardData ? ev.clipboardData.items : [])].find((i) => i.type === 'image/png' || i.type === 'image/jpeg');
  if (!item) return;
  ev.preventDefault();
  sendClipboard(item.getAsFile(), item.type, 'image');
});
ui.clipOut.addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) { ev.preventDefault(); ui.clipSend.click(); }
});

ui.clipCopy.addEventListener('click', async () => {
  try {
    await navigator.clipboard.writeText(ui.clipIn.value);
    ui.clipCopied.textContent = 'copied';
  } catch (e) {
    ui.clipIn.select();
    ui.clipCopied.textContent = 'selected — press Ctrl+C';
  }
  setTimeout(() => { ui.clipCopied.textContent = ''; }, 3000);
});

window.addEventListener('pagehide', () => { leaving = true; clearTimers(); disposeRFB(); });

// ---- start ----

setState('connecting');
if (!desktopID || !token) {
  endSession('no desktop or token in the URL');
} else {
  checkAndConnect({ initial: true });
}
