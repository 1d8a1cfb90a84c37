// Desktop store: the list, live updates (SSE with a polling fallback) and subscribers.
import { get, streamURL, ApiError } from './api.js';

export const store = {
  desktops: new Map(), // id -> desktop
  loaded: false,
  error: null,
  live: 'connecting', // connecting | live | offline
};

const listeners = new Set();
const eventListeners = new Set();

/** fn(reason, id?) is called after any change; returns an unsubscribe function. */
export function subscribe(fn) { listeners.add(fn); return () => listeners.delete(fn); }
/** fn(event) receives desktop history events from the live stream. */
export function onDesktopEvent(fn) { eventListeners.add(fn); return () => eventListeners.delete(fn); }

function emit(reason, id) { listeners.forEach((fn) => fn(reason, id)); }

export function upsert(d) {
  if (!d || !d.id) return;
  if (d.state === 'deleted' || d.deleted_at) {
    if (store.desktops.delete(d.id)) emit('remove', d.id);
    return;
  }
  // Every answer holds the whole record; fields it leaves out (the
  // operation once it ended, a cleared last error) are gone, not kept.
  store.desktops.set(d.id, d);
  emit('update', d.id);
}

export function remove(id) {
  if (store.desktops.delete(id)) emit('remove', id);
}

export function sortedDesktops() {
  return [...store.desktops.values()].sort((a, b) => a.name.localeCompare(b.name));
}

let refreshing = null;
export function refresh() {
  if (refreshing) return refreshing;
  refreshing = (async () => {
    try {
      const body = await get('/desktops');
      const list = Array.isArray(body) ? body : (body?.desktops || []);
      const seen = new Set();
      for (const d of list) {
        if (d.state === 'deleted' || d.deleted_at) continue;
        seen.add(d.id);
        store.desktops.set(d.id, d);
      }
      for (const id of [...store.desktops.keys()]) if (!seen.has(id)) store.desktops.delete(id);
      store.loaded = true;
      store.error = null;
      emit('list');
    } catch (e) {
      store.error = e;
      emit('error');
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

let es = null;
let pollTimer = null;
let retryTimer = null;
let retryDelay = 1000;
// Bumped by stopLive, so a stream token that arrives after it opens nothing.
let generation = 0;

function setLive(v) {
  if (store.live !== v) { store.live = v; emit('live'); }
}

function parse(data) {
  try { return JSON.parse(data); } catch { return null; }
}

/** Starts the live stream and the 10 s fallback poll of the list. */
export function startLive() {
  stopLive();
  refresh();
  openStream();
  pollTimer = setInterval(() => {
    if (document.visibilityState !== 'visible') return;
    if (!es && !retryTimer) openStream(); // e.g. the last token request failed
    refresh();
  }, 10000);
}

/** Opens the stream with a fresh stream token. */
async function openStream() {
  const gen = generation;
  clearTimeout(retryTimer);
  retryTimer = null;
  let url;
  try {
    url = await streamURL();
  } catch (e) {
    if (gen !== generation) return;
    setLive('offline');
    // A 401 signs out (api.js's listeners); anything else is worth another try.
    if (!(e instanceof ApiError && e.status === 401)) reconnectLater();
    return;
  }
  if (gen !== generation) return;
  es?.close();
  const mine = new EventSource(url);
  es = mine;
  mine.onopen = () => { retryDelay = 1000; setLive('live'); refresh(); };
  // The browser's own reconnect would reuse the spent stream token, so on any
  // error (and when the server ends the stream because the token was revoked or
  // expired) close it and reconnect with a new one.
  const lost = () => {
    mine.close();
    if (es !== mine) return;
    es = null;
    setLive('connecting');
    reconnectLater();
  };
  mine.onerror = lost;
  mine.addEventListener('unauthorized', lost);
  mine.addEventListener('desktop', (e) => { const d = parse(e.data); if (d) upsert(d); });
  mine.addEventListener('event', (e) => { const ev = parse(e.data); if (ev) eventListeners.forEach((fn) => fn(ev)); });
  mine.addEventListener('dropped', () => refresh());
}

/** Reconnects after a delay that doubles on each failure, up to 30 s. */
function reconnectLater() {
  if (retryTimer) return;
  const gen = generation;
  retryTimer = setTimeout(() => {
    retryTimer = null;
    if (gen === generation) openStream();
  }, retryDelay);
  retryDelay = Math.min(retryDelay * 2, 30000);
}

export function stopLive() {
  generation++;
  es?.close();
  es = null;
  clearTimeout(retryTimer);
  retryTimer = null;
  retryDelay = 1000;
  clearInterval(pollTimer);
  pollTimer = null;
  store.desktops.clear();
  store.loaded = false;
  store.error = null;
  store.live = 'connecting';
}
