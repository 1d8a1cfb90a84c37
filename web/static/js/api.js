// API client: how the console is signed in (a pasted API token, or a
// single sign-on session cookie), JSON calls and readable errors.
//
// Token mode: every call sends Authorization: Bearer <token>.
// Cookie mode (signed in with single sign-on): calls send no Authorization
// header, the HttpOnly bureau_session cookie authenticates them, and every
// call that could change something sends X-CSRF-Token with the session's
// CSRF token (GET /api/v1/session gives it).

const TOKEN_KEY = 'bureau.token';
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

let csrfToken = ''; // set in cookie mode only
let session = null; // GET /api/v1/session's answer, once known

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
  csrfToken = '';
  session = null;
}

/** Whether the console is signed in with single sign-on (the session cookie). */
export const cookieMode = () => !!csrfToken && !token();

/** Whether the console is signed in at all (a token, or a sign-in session). */
export const signedIn = () => !!token() || !!csrfToken;

/** A key that changes with whoever is signed in (for caches of per-caller answers). */
export const signedInKey = () => token() || (csrfToken ? `session:${csrfToken}` : '');

/** Who is signed in ({owner, name, admin, via, token_id, expires_at}), or null when not known. */
export const currentSession = () => session;

/**
 * Looks for a single sign-on session: with no stored token, GET /api/v1/session with
 * the browser's cookies only. A sign-in's answer switches to cookie mode and is
 * returned; anything else returns null (and leaves the console signed out).
 */
export async function resumeSession() {
  if (token()) return null;
  let res;
  try {
    res = await fetch('/api/v1/session', { credentials: 'same-origin', cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network', 'Cannot reach the bureau server. Check your connection and try again.');
  }
  if (!res.ok) return null;
  let body = null;
  try { body = await res.json(); } catch { return null; }
  if (!body || body.via !== 'sign-in' || !body.csrf_token) return null;
  csrfToken = body.csrf_token;
  session = body;
  return body;
}

/**
 * Who the signed-in caller is (GET /api/v1/session), kept for currentSession().
 * null when the server does not say (an older server).
 */
export async function loadSession() {
  try {
    const s = await get('/session');
    if (s && signedIn()) {
      session = s;
      if (s.csrf_token && !token()) csrfToken = s.csrf_token;
    }
    return session;
  } catch (e) {
    if (e.status === 401) throw e;
    return null;
  }
}

/** The caller's role in the team it acts for ("admin", "member", "viewer"), or "" when it acts for itself. */
export const currentRole = () => session?.role || '';

/** Whether the caller only watches (a team's viewer): the API refuses its changes with 403. */
export const readOnly = () => currentRole() === 'viewer';

/**
 * Switches a sign-in session to act for a team ("" for the person themselves):
 * POST /auth/team with the session cookie and the CSRF token. The server
 * replaces the session (same expiry); the new session's CSRF token is read
 * back with GET /api/v1/session. Returns the new session. Throws ApiError.
 */
export async function actAs(team) {
  if (!cookieMode()) throw new ApiError(0, 'not_signed_in', 'Switching teams needs a sign-in session (single sign-on).');
  let res;
  try {
    res = await fetch('/auth/team', {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': csrfToken },
      body: JSON.stringify({ team: team || '' }),
    });
  } catch {
    throw new ApiError(0, 'network', 'Cannot reach the bureau server. Check your connection and try again.');
  }
  if (!res.ok) throw await errorFrom(res);
  let body = null;
  try { body = await res.json(); } catch { /* 204 or not JSON: ask below */ }
  if (body?.csrf_token) csrfToken = body.csrf_token;
  const s = await get('/session');
  session = s;
  if (s?.csrf_token) csrfToken = s.csrf_token;
  return s;
}

/** Whether this server offers single sign-on: GET /auth/config ({oidc, provider}); {oidc:false} when it cannot say. */
export async function authConfig() {
  try {
    const res = await fetch('/auth/config', { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) return { oidc: false };
    const c = await res.json();
    return c && typeof c === 'object' ? c : { oidc: false };
  } catch {
    return { oidc: false };
  }
}

/**
 * Signs out. Cookie mode: POST /auth/logout (which revokes the session) with the CSRF
 * token; token mode: forgets the token. Either way the console is signed out after
 * (a failed logout call is thrown after forgetting, so the caller can say so).
 */
export async function signOut() {
  const wasCookie = cookieMode();
  const csrf = csrfToken;
  clearToken();
  if (!wasCookie) return;
  let res;
  try {
    res = await fetch('/auth/logout', { method: 'POST', credentials: 'same-origin', headers: { 'X-CSRF-Token': csrf }, cache: 'no-store' });
  } catch {
    throw new ApiError(0, 'network', 'Could not reach the server to end the sign-in; it ends at its expiry.');
  }
  if (!res.ok && res.status !== 401) throw await errorFrom(res);
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
  const headers = {};
  const bearer = opts.token ?? token();
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  else if (csrfToken && !SAFE_METHODS.has(method.toUpperCase())) headers['X-CSRF-Token'] = csrfToken;
  const init = { method, headers, signal: opts.signal, cache: 'no-store', credentials: 'same-origin' };
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
