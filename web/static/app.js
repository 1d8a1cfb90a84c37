// bureau web console: sign-in, header, routing between the list and a desktop's page.
import { get, setToken, clearToken, onUnauthorized, describe, signedIn, cookieMode, resumeSession, loadSession, currentSession, authConfig, signOut, actAs } from './js/api.js';
import { store, subscribe, startLive, stopLive } from './js/store.js';
import { h, icon, clear, toast } from './js/ui.js';
import { listView } from './js/list.js';
import { detailsView } from './js/details.js';
import { dropAllShots } from './js/desktop.js';
import { hostsView, adminHosts, forgetHosts, hostIcon } from './js/hosts.js';
import { backupsView } from './js/backups.js';
import { auditView } from './js/audit.js';
import { tokensView } from './js/tokens.js';
import { teamsView, teamView, roleTag } from './js/teams.js';

const app = document.getElementById('app');
let info = null;
let ssoConfig = null; // GET /auth/config's answer, once asked
let current = null; // { key, cleanup, setTab }

// ---------- sign-in ----------
function loginView(message) {
  teardown();
  document.title = 'Sign in · bureau';
  const input = h('input#token', { type: 'password', autocomplete: 'current-password', required: true, placeholder: 'API token', spellcheck: false });
  const err = h('div.form-error', { role: 'alert', hidden: !message }, message || '');
  const btn = h('button.btn.btn-primary.btn-block', { type: 'submit' }, 'Sign in');
  const sso = h('div.login-sso', { hidden: true });
  const form = h('form.login-card', {
    novalidate: true,
    onsubmit: async (e) => {
      e.preventDefault();
      const t = input.value.trim();
      err.hidden = true;
      if (!t) { err.hidden = false; err.textContent = 'Paste your API token.'; input.focus(); return; }
      btn.disabled = true;
      btn.classList.add('is-busy');
      try {
        info = await get('/info', { token: t });
        setToken(t);
        start();
      } catch (ex) {
        err.hidden = false;
        err.textContent = ex.status === 401 ? 'That token was not accepted. Check it and try again.' : describe(ex);
        input.select();
      } finally {
        btn.disabled = false;
        btn.classList.remove('is-busy');
      }
    },
  },
  h('div.brand.brand-lg', logo(), 'bureau'),
  h('h1', 'Sign in to the console'),
  sso,
  h('p.muted', 'Use an API token (for example the admin token in ', h('code', '/var/lib/bureau/admin-token'), ').'),
  h('div.field', h('label', { for: 'token' }, 'API token'), input),
  err, btn);
  clear(app, h('main.login', form));
  input.focus();
  // Single sign-on, when the server offers it: a button above the token form.
  const showSSO = (c) => {
    if (!c?.oidc || !sso.isConnected) return;
    const back = `${location.pathname}${location.search}${location.hash}`;
    const href = `/auth/login?return_to=${encodeURIComponent(back.startsWith('/') && !back.startsWith('//') ? back : '/')}`;
    clear(sso,
      h('a.btn.btn-primary.btn-block.btn-sso#sso-signin', { href, dataset: { provider: c.provider || '' } },
        icon('login', 16), h('span', 'Sign in with single sign-on', c.provider ? h('span.btn-sso-provider', ` (${c.provider})`) : null)),
      h('div.login-or', h('span', 'or use an API token')));
    sso.hidden = false;
    btn.classList.remove('btn-primary');
  };
  if (ssoConfig) showSSO(ssoConfig);
  else authConfig().then((c) => { ssoConfig = c; showSSO(c); });
}

function logo() {
  return h('span.logo', { 'aria-hidden': 'true' }, h('span'), h('span'), h('span'), h('span'));
}

// ---------- signed-in shell ----------
let main;
let liveBadge;
let nav;
let who;

// Who is signed in, beside the sign-out button: the name (or owner), an
// admin badge, and for a team's session or token the team and the role.
// A sign-in session also gets the "Acting as" switcher (docs/teams.md).
function personName(s) {
  // A sign-in's token is named "signed in: <name or email>": the person's name is enough here.
  let n = (s.via === 'sign-in' ? (s.name || '').replace(/^signed in: /, '') : s.name) || s.member || s.owner || '';
  // A team's sign-in is named "… (<team>)": the team shows beside it.
  if (s.role && s.via === 'sign-in' && n.endsWith(` (${s.owner})`)) n = n.slice(0, -(s.owner.length + 3));
  return n;
}

function renderWho() {
  const s = currentSession();
  if (!who || !s) return;
  document.body.dataset.role = s.role || '';
  const name = personName(s);
  const title = [s.owner && s.owner !== name ? `owner ${s.owner}` : null, s.via === 'sign-in' ? 'signed in with single sign-on' : 'signed in with an API token',
    s.expires_at ? `until ${new Date(s.expires_at).toLocaleString()}` : null].filter(Boolean).join(' · ');
  const team = s.role ? s.owner : '';
  const nameEl = h('span.whoami-name#whoami-name', { title, dataset: { owner: s.owner || '', via: s.via || '', team, role: s.role || '' } }, name);
  const role = s.role ? roleTag(s.role, { id: 'whoami-role', title: s.role === 'viewer' ? `A viewer of ${team} only watches: changes are refused` : `Your role in ${team}` }) : null;
  const admin = s.admin ? h('span.tag.tag-strong.whoami-admin#whoami-admin', { title: 'This sign-in is an admin: it sees and manages every owner\'s desktops' }, 'admin') : null;
  if (s.via === 'sign-in' && cookieMode()) {
    // "Acting as: <the person> ▾", or "Acting as: <team> ▾ [role] <the person>".
    clear(who, teamSwitcher(s, name, team ? null : nameEl), role, team ? nameEl : null, admin);
  } else {
    clear(who, nameEl, team ? h('span.whoami-team#whoami-team', { title: `Acting for team ${team}` }, `for ${team}`) : null, role, admin);
  }
  who.hidden = !name;
}

// The teams a sign-in person may act for. Acting for a team, GET /teams
// answers that team only, so the person's own list is kept from when they
// acted for themselves (for this tab).
const TEAMS_KEY = 'bureau.myteams';
function rememberedTeams() {
  try { return JSON.parse(sessionStorage.getItem(TEAMS_KEY) || '[]'); } catch { return []; }
}
function rememberTeams(list) {
  try { sessionStorage.setItem(TEAMS_KEY, JSON.stringify(list)); } catch { /* private mode */ }
}

// "Acting as: <you or the team> ▾": a menu of the person and their teams;
// picking one switches the session (POST /auth/team) and reloads the app.
function teamSwitcher(s, name, nameEl) {
  const acting = s.role ? s.owner : '';
  const menu = h('div.switcher-menu#team-switch-menu', { role: 'menu' });
  const box = h('details.switcher#team-switch', { dataset: { acting } },
    h('summary.btn.btn-sm.switcher-btn', { title: 'Act as yourself or for one of your teams' },
      h('span.muted', 'Acting as:'), nameEl || h('strong.switcher-current#whoami-acting', acting), h('span.switcher-caret', { 'aria-hidden': 'true' }, '▾')),
    menu);
  const fill = (teams) => {
    const items = [{ name: '', label: `${name || 'Myself'} (yourself)`, role: '' },
      ...teams.map((t) => ({ name: t.name, label: t.name, role: t.role }))];
    if (acting && !items.some((i) => i.name === acting)) items.push({ name: acting, label: acting, role: s.role });
    clear(menu, items.map((i) => h('button.switcher-item', {
      type: 'button', role: 'menuitemradio', 'aria-checked': String(i.name === acting), dataset: { actAs: i.name },
      onclick: () => { box.open = false; if (i.name !== acting) switchTo(i.name); },
    }, h('span.switcher-check', i.name === acting ? '✓' : ''), h('span.switcher-label', i.label), i.role ? roleTag(i.role) : null)));
  };
  // GET /api/v1/session names the person's teams; an older answer does not: ask.
  if (Array.isArray(s.teams)) {
    fill(s.teams.slice().sort((a, b) => a.name.localeCompare(b.name)));
    return box;
  }
  fill(rememberedTeams());
  get('/teams').then((r) => {
    const teams = (r?.teams || []).map((t) => ({ name: t.name, role: t.role })).sort((a, b) => a.name.localeCompare(b.name));
    if (!acting) rememberTeams(teams);
    else {
      const keep = rememberedTeams().filter((t) => t.name !== acting);
      teams.push(...keep);
      teams.sort((a, b) => a.name.localeCompare(b.name));
    }
    fill(teams);
  }, () => { /* the remembered list stays */ });
  return box;
}

async function switchTo(team) {
  try {
    await actAs(team);
  } catch (e) {
    if (e.status === 401) return; // signed out
    toast(`Could not switch to ${team || 'yourself'}: ${describe(e)}`, 'error');
    return;
  }
  forgetHosts();
  toast(team ? `Acting for team ${team} now.` : 'Acting as yourself now.', 'success');
  // A desktop of the other owner is not this one's: back to the list.
  if (/^#\/desktops\//.test(location.hash)) location.hash = '#/';
  start();
}

function shell() {
  liveBadge = h('span.live');
  who = h('span.whoami#whoami', { hidden: true });
  const infoText = info ? [info.version ? (/^\d/.test(info.version) ? `v${info.version}` : info.version) : null, info.accelerator ? info.accelerator.toUpperCase() : null].filter(Boolean).join(' · ') : '';
  main = h('main.container');
  nav = h('nav.topnav', { 'aria-label': 'Sections', hidden: true });
  clear(app,
    h('header.topbar', h('div.container.topbar-inner',
      h('div.topbar-left', h('a.brand', { href: '#/' }, logo(), 'bureau'), nav),
      h('div.topbar-right',
        liveBadge,
        infoText ? h('span.muted.small', { title: info.accelerator_reason || '' }, infoText) : null,
        who,
        h('button.btn.btn-sm.btn-ghost#signout', { type: 'button', title: 'Sign out', onclick: logout }, icon('logout', 14), 'Sign out')))),
    main);
  renderLive();
  renderWho();
  if (!currentSession()) loadSession().then(renderWho, () => { /* a 401 signs out */ });
  // Hosts and backup targets are for admins: the nav shows once GET /hosts
  // answers (403 otherwise). An owner reaching #/backups sees their backups.
  const myNav = nav;
  // The audit log is everyone's (owners see their own entries).
  adminHosts().then((hosts) => {
    if (nav !== myNav) return;
    clear(nav,
      h('a.topnav-link', { href: '#/', dataset: { section: 'list' } }, 'Desktops'),
      hosts ? h('a.topnav-link', { href: '#/hosts', dataset: { section: 'hosts' } }, hostIcon(14), 'Hosts') : null,
      hosts ? h('a.topnav-link', { href: '#/backups', dataset: { section: 'backups' } }, icon('archive', 14), 'Backups') : null,
      h('a.topnav-link#nav-teams', { href: '#/teams', dataset: { section: 'teams' } }, icon('users', 14), 'Teams'),
      h('a.topnav-link', { href: '#/audit', dataset: { section: 'audit' } }, icon('clock', 14), 'Audit'),
      h('a.topnav-link#nav-tokens', { href: '#/tokens', dataset: { section: 'tokens' } }, icon('key', 14), 'API tokens'));
    nav.hidden = false;
    markNav();
  }, () => { /* unreachable now: the nav stays hidden */ });
}

function markNav() {
  const key = current?.key?.startsWith('t:') ? 'teams' : current?.key;
  const section = ['hosts', 'backups', 'audit', 'tokens', 'teams'].includes(key) ? key : 'list';
  nav?.querySelectorAll('.topnav-link').forEach((a) => {
    if (a.dataset.section === section) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  });
}

function renderLive() {
  if (!liveBadge) return;
  const labels = { live: 'Live', connecting: 'Connecting…', offline: 'Offline — polling' };
  liveBadge.className = `live live-${store.live}`;
  liveBadge.title = store.live === 'live' ? 'Receiving live updates' : 'Live updates unavailable; the list is refreshed every 10 s';
  clear(liveBadge, h('span.dot'), labels[store.live] || store.live);
}

function route() {
  if (!signedIn()) return;
  const hash = location.hash.replace(/^#/, '') || '/';
  // #/desktops/<id>[/<tab>][?<params of the tab>]
  const m = hash.match(/^\/desktops\/([^/?]+)(?:\/([a-z]+))?(?:\?(.*))?$/);
  const params = m?.[3] ? Object.fromEntries(new URLSearchParams(m[3])) : {};
  // #/teams/<name>
  const tm = !m && hash.match(/^\/teams\/([^/?]+)\/?$/);
  const key = m ? `d:${decodeURIComponent(m[1])}` : tm ? `t:${decodeURIComponent(tm[1])}`
    : ['/hosts', '/backups', '/audit', '/tokens', '/teams'].includes(hash) ? hash.slice(1) : 'list';
  if (current && current.key === key) {
    if (m && m[2]) current.setTab?.(m[2], params);
    return;
  }
  current?.cleanup?.();
  clear(main);
  window.scrollTo(0, 0);
  if (m) {
    const id = decodeURIComponent(m[1]);
    const v = detailsView(main, id, m[2], params);
    current = { key, ...v };
    const d = store.desktops.get(id);
    document.title = `${d ? d.name : 'Desktop'} · bureau`;
  } else if (key === 'hosts') {
    current = { key, cleanup: hostsView(main) };
    document.title = 'Hosts · bureau';
  } else if (key === 'backups') {
    current = { key, cleanup: backupsView(main) };
    document.title = 'Backups · bureau';
  } else if (key === 'audit') {
    current = { key, cleanup: auditView(main) };
    document.title = 'Audit · bureau';
  } else if (tm) {
    const name = decodeURIComponent(tm[1]);
    current = { key, cleanup: teamView(main, name) };
    document.title = `${name} · Teams · bureau`;
  } else if (key === 'teams') {
    current = { key, cleanup: teamsView(main) };
    document.title = 'Teams · bureau';
  } else if (key === 'tokens') {
    current = { key, cleanup: tokensView(main, { signedOut: () => signedOutView('You revoked the token this console was signed in with. Sign in again.') }) };
    document.title = 'API tokens · bureau';
  } else {
    current = { key, cleanup: listView(main) };
    document.title = 'Desktops · bureau';
  }
  markNav();
}

function teardown() {
  current?.cleanup?.();
  current = null;
  stopLive();
  dropAllShots();
  liveBadge = null;
  nav = null;
  who = null;
}

function start() {
  teardown();
  shell();
  startLive();
  route();
}

async function logout() {
  let message;
  try {
    await signOut();
  } catch (e) {
    message = `Signed out here, but the server did not end the sign-in: ${describe(e)}`;
  }
  signedOutView(message);
}

// Shows the sign-in page after the sign-in ended (signed out, revoked).
function signedOutView(message) {
  clearToken();
  delete document.body.dataset.role;
  try { sessionStorage.removeItem(TEAMS_KEY); } catch { /* ignore */ }
  forgetHosts();
  info = null;
  loginView(message);
}

subscribe((reason, id) => {
  if (reason === 'live') renderLive();
  if (id && current?.key === `d:${id}`) {
    const d = store.desktops.get(id);
    if (d) document.title = `${d.name} · bureau`;
  }
});

onUnauthorized(() => {
  if (!signedIn()) return;
  const wasCookie = cookieMode();
  signedOutView(wasCookie ? 'Your sign-in has ended (expired or revoked). Sign in again.' : 'Your token was rejected (expired or revoked). Sign in again.');
});

window.addEventListener('hashchange', route);
// An open "Acting as" menu closes on a click elsewhere, or Escape.
document.addEventListener('click', (e) => {
  document.querySelectorAll('details.switcher[open]').forEach((d) => { if (!d.contains(e.target)) d.open = false; });
});
document.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') document.querySelectorAll('details.switcher[open]').forEach((d) => { d.open = false; });
});

// Boot: validate a stored token, or find a single sign-on session, before
// showing anything else.
(async () => {
  clear(app, h('div.boot', h('span.spinner'), 'Loading…'));
  if (!signedIn()) {
    let s = null;
    try { s = await resumeSession(); } catch { /* unreachable: the sign-in page says so when used */ }
    if (!s) { loginView(); return; }
  }
  try {
    info = await get('/info');
    start();
  } catch (e) {
    if (e.status === 401) return; // onUnauthorized shows the sign-in page
    loginView(`Could not reach the server: ${describe(e)}`);
  }
})();
