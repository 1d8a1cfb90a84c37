// Desktop store: the list, live updates (SSE with a polling fallback) and subscribers.
import { get, streamURL } from './api.js';

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
  store.desktops.set(d.id, { ...store.desktops.get(d.id), ...d });
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
    if (es && es.readyState === EventSource.CLOSED) {
      // The browser gave up reconnecting (e.g. the server was restarted): try again.
      es.close();
      openStream();
    }
    refresh();
  }, 10000);
}

function openStream() {
  es = new EventSource(streamURL());
  es.onopen = () => { setLive('live'); refresh(); };
  es.onerror = () => setLive(es && es.readyState === EventSource.CLOSED ? 'offline' : 'connecting');
  es.addEventListener('desktop', (e) => { const d = parse(e.data); if (d) upsert(d); });
  es.addEventListener('event', (e) => { const ev = parse(e.data); if (ev) eventListeners.forEach((fn) => fn(ev)); });
  es.addEventListener('dropped', () => refresh());
}

export function stopLive() {
  es?.close();
  es = null;
  clearInterval(pollTimer);
  pollTimer = null;
  store.desktops.clear();
  store.loaded = false;
  store.error = null;
  store.live = 'connecting';
}
