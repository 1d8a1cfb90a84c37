// API client: bearer token storage, JSON calls and readable errors.

const TOKEN_KEY = 'bureau.token';

export function getToken() {
  try { return localStorage.getItem(TOKEN_KEY) || ''; } catch { return ''; }
}

export function setToken(t) {
  try { localStorage.setItem(TOKEN_KEY, t); } catch { /* private mode: token lives for the page only */ }
  memToken = t;
}

export function clearToken() {
  try { localStorage.removeItem(TOKEN_KEY); } catch { /* ignore */ }
  memToken = '';
}

let memToken = getToken();
const token = () => memToken || getToken();

/** An error answered by the API ({"error":{"code","message"}}) or by the network. */
export class ApiError extends Error {
  constructor(status, code, message, field, state) {
    super(message || code || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
    this.field = field || '';
    this.state = state || '';
  }
}

const STATUS_TEXT = {
  400: 'Bad request', 401: 'Not signed in', 403: 'Forbidden', 404: 'Not found',
  409: 'Conflict', 422: 'Invalid', 429: 'Too many requests', 500: 'Server error',
  502: 'Bad gateway', 503: 'Unavailable', 504: 'Gateway timeout', 507: 'Insufficient capacity',
};

/** Listeners called when the server rejects the token (401). */
const unauthorizedListeners = new Set();
export function onUnauthorized(fn) { unauthorizedListeners.add(fn); }

async function errorFrom(res) {
  let code = '', message = '', field = '', state = '';
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text);
      if (body && body.error) ({ code = '', message = '', field = '', state = '' } = body.error);
    } catch {
      message = text.trim().slice(0, 300);
    }
  } catch { /* body unreadable */ }
  if (!message) message = `${STATUS_TEXT[res.status] || 'Error'} (HTTP ${res.status})`;
  return new ApiError(res.status, code, message, field, state);
}

/**
 * Calls the bureau API. path is relative to /api/v1. Returns parsed JSON (null for 204),
 * or the Response itself with {raw: true}. Throws ApiError.
 */
export async function api(method, path, body, opts = {}) {
  const headers = { Authorization: `Bearer ${opts.token ?? token()}` };
  const init = { method, headers, signal: opts.signal, cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(`/api/v1${path}`, init);
  } catch (e) {
    if (e.name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'Cannot reach the bureau server. Check your connection and try again.');
  }
  if (!res.ok) {
    const err = await errorFrom(res);
    if (res.status === 401 && !opts.token) unauthorizedListeners.forEach((fn) => fn(err));
    throw err;
  }
  if (opts.raw) return res;
  if (res.status === 204) return null;
  const text = await res.text();
  if (!text) return null;
  try { return JSON.parse(text); } catch { throw new ApiError(res.status, 'bad_response', 'The server sent a response that is not JSON.'); }
}

export const get = (path, opts) => api('GET', path, undefined, opts);
export const post = (path, body, opts) => api('POST', path, body ?? {}, opts);
export const del = (path, opts) => api('DELETE', path, undefined, opts);
export const put = (path, body, opts) => api('PUT', path, body ?? {}, opts);

/** Path segment escaping for ids and names. */
export const seg = (s) => encodeURIComponent(s);

/**
 * Asks for a stream token and returns the URL of the live event stream it opens.
 * EventSource cannot send headers, and the API token never goes in a URL (the server
 * refuses it there): a stream token opens one stream, once, within a minute, so every
 * (re)connect needs a new one. Throws ApiError.
 */
export async function streamURL() {
  const r = await post('/events/stream-token');
  return r.url;
}

/** Describes an error for people: message plus the API's code when useful. */
export function describe(err) {
  if (!err) return 'Unknown error';
  if (err instanceof ApiError) {
    return err.code && err.code !== 'network' ? `${err.message} (${err.code})` : err.message;
  }
  return err.message || String(err);
}
