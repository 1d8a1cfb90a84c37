// The API tokens page: the caller's tokens (GET /api/v1/tokens), minting
// one for an agent or a program (its secret shown once), and revoking.
// Tokens minted here belong to the signed-in owner and outlive the sign-in.
import { get, post, del, seg, describe, currentSession } from './api.js';
import { store, sortedDesktops, subscribe } from './store.js';
import { h, icon, clear, toast, confirmDialog, busy, timeEl, fmtTime } from './ui.js';
import { ROLES, roleTag } from './teams.js';

const EXPIRY = [
  ['86400', '1 day'],
  ['2592000', '30 days'],
  ['7776000', '90 days'],
  ['0', 'Never'],
];

const SCOPE_HINT = {
  owner: 'Everything you can do: all your desktops.',
  desktop: 'One desktop only: what an agent driving it needs.',
  admin: 'Everything, for every owner (you are an admin).',
};

function status(t) {
  if (t.revoked_at) return h('span.pill.pill-bad', { title: `Revoked ${fmtTime(t.revoked_at)}` }, 'revoked');
  if (t.expires_at && new Date(t.expires_at).getTime() <= Date.now()) return h('span.pill.pill-idle', { title: `Expired ${fmtTime(t.expires_at)}` }, 'expired');
  return h('span.pill.pill-ok', 'active');
}

const usable = (t) => !t.revoked_at && !(t.expires_at && new Date(t.expires_at).getTime() <= Date.now());

function kind(t) {
  if (t.kind) return t.kind;
  return t.scope === 'desktop' ? 'desktop' : 'api';
}

function desktopCell(t) {
  if (!t.desktop_id) return h('span.muted', '—');
  const d = store.desktops.get(t.desktop_id);
  return h('span', h('a', { href: `#/desktops/${encodeURIComponent(t.desktop_id)}` }, d?.name || t.desktop_id),
    t.computer_only ? h('span.tag.tokens-computer-only', { title: 'Screen, mouse and keyboard only' }, 'computer only') : null);
}

export function tokensView(root, { signedOut } = {}) {
  const count = h('span.count');
  const session = currentSession();
  const admin = !!session?.admin;

  // ---------- the create form ----------
  const name = h('input#token-name', { type: 'text', required: true, maxlength: 200, placeholder: 'e.g. my coding agent', spellcheck: false, autocomplete: 'off' });
  const scope = h('select#token-scope', { 'aria-label': 'Scope' },
    h('option', { value: 'owner' }, 'Owner — all my desktops'),
    h('option', { value: 'desktop' }, 'Desktop — one desktop'),
    admin ? h('option', { value: 'admin' }, 'Admin — everything') : null);
  const desktopPick = h('select#token-desktop', { 'aria-label': 'Desktop' });
  const computerOnly = h('input#token-computer-only', { type: 'checkbox' });
  const expiry = h('select#token-expiry', { 'aria-label': 'Expires' }, EXPIRY.map(([v, l]) => h('option', { value: v, selected: v === '2592000' }, l)));
  const scopeHint = h('small.muted.tokens-hint');
  // Acts for: the caller, or one of their teams (a team token, docs/teams.md)
  // at a role up to theirs in it.
  const actsFor = h('select#token-owner', { 'aria-label': 'Acts for' }, h('option', { value: '' }, `Myself (${session?.owner || 'you'})`));
  const role = h('select#token-role', { 'aria-label': 'Role in the team' });
  const roleHint = h('small.muted.tokens-hint');
  const roleField = h('div.field.tokens-role-field', { hidden: true }, h('label', { for: 'token-role' }, 'Role'), role, roleHint);
  const actsField = h('div.field.tokens-acts-field', { hidden: true }, h('label', { for: 'token-owner' }, 'Acts for'), actsFor,
    h('small.muted.tokens-hint', 'A team token sees the team\'s desktops, secrets and webhooks, nothing of yours.'));
  let teams = []; // GET /teams: {name, role}
  const formError = h('div.form-error#token-error', { role: 'alert', hidden: true });
  const createBtn = h('button.btn.btn-primary#token-create', { type: 'submit' }, icon('plus', 14), 'Create token');
  const desktopField = h('div.field.tokens-desktop-field', h('label', { for: 'token-desktop' }, 'Desktop'), desktopPick,
    h('label.tokens-check', computerOnly, h('span', 'Computer use only', h('small.muted', ' — screenshots, mouse and keyboard; no shell or files'))));
  const form = h('form.panel.tokens-form#token-form', { novalidate: true, onsubmit: (e) => { e.preventDefault(); create(); } },
    h('div.panel-head', h('h2', 'Create a token')),
    h('div.tokens-form-grid',
      h('div.field', h('label', { for: 'token-name' }, 'Name'), name),
      actsField,
      roleField,
      h('div.field', h('label', { for: 'token-scope' }, 'Scope'), scope, scopeHint),
      desktopField,
      h('div.field', h('label', { for: 'token-expiry' }, 'Expires'), expiry)),
    formError,
    h('div.tokens-form-foot', createBtn));

  // ---------- the secret, shown once ----------
  const reveal = h('section.panel.tokens-secret#token-secret', { hidden: true, 'aria-live': 'polite' });

  const tbody = h('tbody');
  const listStatus = h('div.tokens-status');
  root.append(
    h('div.page-head',
      h('div', h('h1', 'API tokens', count),
        h('p.muted', 'Tokens for your agents and programs, sent as ', h('code', 'Authorization: Bearer …'), '. They belong to ',
          h('strong', session?.owner || 'you'), ' and keep working after you sign out, until they expire or you revoke them.'))),
    reveal,
    form,
    h('div.table-wrap', h('table.tokens-table#tokens-table',
      h('thead', h('tr', ['Name', 'Kind', 'Scope', 'Acts for', 'Desktop', 'Created', 'Expires', 'Last used', 'Status', ''].map((x) => h('th', x)))), tbody)),
    listStatus);

  let gone = false;
  let tokens = [];

  function fillDesktops() {
    const keep = desktopPick.value;
    const list = sortedDesktops();
    clear(desktopPick, list.length ? list.map((d) => h('option', { value: d.id }, `${d.name} (${d.id})`))
      : h('option', { value: '' }, store.loaded ? 'You have no desktops' : 'Loading desktops…'));
    if (keep && list.some((d) => d.id === keep)) desktopPick.value = keep;
  }

  function syncScope() {
    const desk = scope.value === 'desktop';
    desktopField.hidden = !desk;
    if (!desk) computerOnly.checked = false;
    scopeHint.textContent = actsFor?.value && scope.value !== 'admin'
      ? (desk ? 'One of the team\'s desktops only.' : `Everything the role allows with team ${actsFor.value}'s desktops.`)
      : SCOPE_HINT[scope.value] || '';
  }
  scope.addEventListener('change', syncScope);

  // A team's role for the token: up to the caller's own role in it (any for a bureau admin).
  function syncTeam() {
    const t = teams.find((x) => x.name === actsFor.value);
    roleField.hidden = !t;
    if (!t) return;
    const max = admin ? ROLES.length - 1 : Math.max(0, ROLES.indexOf(t.role));
    const keep = role.value;
    clear(role, ROLES.slice(0, max + 1).map((r) => h('option', { value: r }, r)));
    role.value = ROLES.includes(t.role) && ROLES.indexOf(t.role) <= max ? t.role : ROLES[max];
    if (keep && ROLES.indexOf(keep) <= max && actsFor.dataset.last === actsFor.value) role.value = keep;
    actsFor.dataset.last = actsFor.value;
    roleHint.textContent = `Your role in ${t.name}: ${t.role || (admin ? 'none (you are a bureau admin)' : '—')}. The token may have it or less.`;
  }
  actsFor.addEventListener('change', () => { syncTeam(); syncScopeOptions(); syncScope(); });
  // Admin scope is the caller's own: not for a team's token.
  function syncScopeOptions() {
    const adminOpt = scope.querySelector('option[value="admin"]');
    if (adminOpt) adminOpt.disabled = !!actsFor.value;
    if (actsFor.value && scope.value === 'admin') { scope.value = 'owner'; syncScope(); }
  }
  // Only a person's own token (or sign-in) mints team tokens: not a team's.
  if (!session?.role) {
    get('/teams').then((r) => {
      if (gone) return;
      teams = (r?.teams || []).map((t) => ({ name: t.name, role: t.role || '' })).sort((a, b) => a.name.localeCompare(b.name));
      if (!teams.length) return;
      clear(actsFor, h('option', { value: '' }, `Myself (${session?.owner || 'you'})`),
        teams.map((t) => h('option', { value: t.name, dataset: { role: t.role } }, `Team ${t.name}${t.role ? ` (${t.role})` : ''}`)));
      actsField.hidden = false;
      syncTeam();
    }, () => { /* no teams here (an older server): the field stays hidden */ });
  }
  fillDesktops();
  syncScope();
  const unsub = subscribe((reason) => { if (reason !== 'live') fillDesktops(); });

  function showSecret(secret, info) {
    const value = h('code.tokens-secret-value#token-secret-value', { dataset: { tokenId: info?.id || '' } }, secret);
    const copyBtn = h('button.btn.btn-sm#token-copy', { type: 'button', onclick: async () => {
      try {
        await navigator.clipboard.writeText(secret);
        toast('Token copied.', 'success');
      } catch {
        // No clipboard (plain HTTP): select it for Ctrl+C.
        const r = document.createRange();
        r.selectNodeContents(value);
        const sel = getSelection();
        sel.removeAllRanges();
        sel.addRange(r);
        toast('Selected: press Ctrl+C to copy.', 'info');
      }
    } }, icon('copy', 14), 'Copy');
    clear(reveal,
      h('div.panel-head', h('h2', icon('check', 16), ` Token “${info?.name || ''}” created`),
        h('button.btn.btn-sm.btn-ghost#token-secret-done', { type: 'button', onclick: () => { reveal.hidden = true; clear(reveal); } }, 'Done')),
      h('p.tokens-warning', h('strong', 'Copy it now: you will not see it again.'), ' bureau keeps only a hash of it. Store it where your agent reads it, e.g. ',
        h('code', 'BUREAU_TOKEN'), '.'),
      h('div.tokens-secret-row', value, copyBtn));
    reveal.hidden = false;
    reveal.scrollIntoView({ block: 'nearest' });
  }

  async function create() {
    formError.hidden = true;
    name.removeAttribute('aria-invalid');
    const body = { name: name.value.trim(), scope: scope.value, ttl_seconds: Number(expiry.value) };
    if (!body.name) {
      formError.hidden = false;
      formError.textContent = 'Give the token a name (who or what uses it).';
      name.setAttribute('aria-invalid', 'true');
      name.focus();
      return;
    }
    if (actsFor.value) {
      body.owner = actsFor.value;
      body.role = role.value;
    }
    if (scope.value === 'desktop') {
      body.desktop_id = desktopPick.value;
      body.computer_only = computerOnly.checked;
    }
    try {
      const r = await busy(createBtn, () => post('/tokens', body));
      showSecret(r.token, r.info);
      name.value = '';
      load();
    } catch (e) {
      formError.hidden = false;
      formError.textContent = `Could not create the token: ${describe(e)}`;
      if (e.field === 'name') name.setAttribute('aria-invalid', 'true');
    }
  }

  async function revoke(t, btn) {
    const mine = session?.token_id && t.id === session.token_id;
    const ok = await confirmDialog({
      title: `Revoke “${t.name || t.id}”?`,
      message: [
        'Whatever uses it is refused from now on, and the tokens and console links it made stop working too. This cannot be undone.',
        mine ? 'This is the token this console is signed in with: revoking it signs you out.' : null,
      ].filter(Boolean),
      confirmLabel: 'Revoke token',
      danger: true,
    });
    if (!ok) return;
    try {
      await busy(btn, () => del(`/tokens/${seg(t.id)}`));
      toast(`Revoked “${t.name || t.id}”.`, 'success');
      if (mine) { signedOut?.(); return; }
    } catch (e) {
      toast(`Could not revoke “${t.name || t.id}”: ${describe(e)}`, 'error');
    }
    load();
  }

  function row(t) {
    const mine = session?.token_id && t.id === session.token_id;
    return h('tr', { dataset: { tokenId: t.id, tokenName: t.name || '', state: usable(t) ? 'active' : t.revoked_at ? 'revoked' : 'expired' } },
      h('td', h('strong', t.name || h('span.muted', '(no name)')), mine ? h('span.tag.tag-strong.tokens-this', { title: 'This console is signed in with it' }, 'this sign-in') : null,
        h('div.muted.small', h('code', t.id), session?.owner && t.owner && t.owner !== session.owner && !t.role ? ` · ${t.owner}` : null)),
      h('td', kind(t)),
      h('td', t.scope),
      h('td.tokens-acts-cell', { dataset: { owner: t.owner || '', role: t.role || '' } }, t.role
        ? h('span.tokens-acts', h('span', { title: `A token of team ${t.owner}` }, icon('users', 13), ' ', h('strong', t.owner)), roleTag(t.role),
          t.member && t.member !== session?.member && t.member !== session?.owner ? h('span.muted.small', `for ${t.member}`) : null)
        : h('span.muted', t.owner && session?.owner && t.owner !== session.owner ? t.owner : 'you')),
      h('td', desktopCell(t)),
      h('td.nowrap', timeEl(t.created_at)),
      h('td.nowrap', t.expires_at ? timeEl(t.expires_at) : h('span.muted', 'never')),
      h('td.nowrap', t.last_used_at ? timeEl(t.last_used_at) : h('span.muted', 'never')),
      h('td', status(t)),
      h('td.row-actions', usable(t)
        ? h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', title: 'Revoke this token', dataset: { revoke: t.id }, onclick: (e) => revoke(t, e.currentTarget) }, icon('trash', 14), 'Revoke')
        : null));
  }

  async function load() {
    if (!tokens.length) clear(listStatus, h('div.loading', h('span.spinner'), 'Loading tokens…'));
    try {
      const r = await get('/tokens');
      if (gone) return;
      tokens = (r?.tokens || []).slice().sort((a, b) => (usable(b) - usable(a)) || String(b.created_at).localeCompare(String(a.created_at)));
      clear(tbody, tokens.map(row));
      count.textContent = String(tokens.filter(usable).length || '');
      clear(listStatus, tokens.length ? null : h('p.muted.empty-sm', 'No tokens yet.'));
    } catch (e) {
      if (gone) return;
      clear(listStatus, h('div.form-error', { role: 'alert' }, `Could not load the tokens: ${describe(e)}`));
    }
  }

  load();
  return () => { gone = true; unsub(); };
}
