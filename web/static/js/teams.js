// The Teams page (docs/teams.md): the caller's teams (GET /api/v1/teams),
// making one, and a team's page with its members and their roles; the
// team's admins add members, change roles, remove members and delete the
// team, and any member may leave it. The API's refusals (422, 409, 403)
// are shown in the page.
import { get, post, put, del, seg, describe, currentSession } from './api.js';
import { h, icon, clear, toast, confirmDialog, busy, timeEl } from './ui.js';

export const ROLES = ['viewer', 'member', 'admin'];
const ROLE_HINT = {
  admin: 'Manages the team: its members, roles and webhooks; may delete it.',
  member: 'Creates, uses, stops and deletes the team\'s desktops; its secrets.',
  viewer: 'Watches only: reads everything of the team\'s, view-only consoles.',
};

/** A role as a small badge. */
export function roleTag(role, extra = {}) {
  if (!role) return h('span.muted', '—');
  return h(`span.tag.role-tag.role-${role}`, { title: ROLE_HINT[role] || '', dataset: { role }, ...extra }, role);
}

/** Who the caller is as a member (their owner name): a team token or session names its person. */
function me() {
  const s = currentSession();
  return s?.member || s?.person || (s?.role ? '' : s?.owner) || '';
}

/** #/teams: the caller's teams and a form to make one. */
export function teamsView(root) {
  const count = h('span.count');
  const name = h('input#team-name', { type: 'text', required: true, maxlength: 64, placeholder: 'e.g. ops', spellcheck: false, autocomplete: 'off', 'aria-label': 'Team name' });
  const createBtn = h('button.btn.btn-primary#team-create', { type: 'submit' }, icon('plus', 14), 'Create team');
  const formError = h('div.form-error#team-create-error', { role: 'alert', hidden: true });
  const form = h('form.panel.teams-form#team-form', { novalidate: true, onsubmit: (e) => { e.preventDefault(); create(); } },
    h('div.panel-head', h('h2', 'Create a team')),
    h('div.teams-form-row',
      h('div.field.teams-name-field', h('label', { for: 'team-name' }, 'Name'), name),
      createBtn),
    h('small.muted', 'You become its first admin. A team owns its desktops, secrets and webhooks; its members act for it with team tokens.'),
    formError);
  const tbody = h('tbody');
  const listStatus = h('div.teams-status');
  root.append(
    h('div.page-head',
      h('div', h('h1', 'Teams', count),
        h('p.muted', 'Teams share desktops, secrets and webhooks. Each member has a role: ', h('strong', 'admin'), ', ', h('strong', 'member'), ' or ', h('strong', 'viewer'), '.'))),
    form,
    h('div.table-wrap', h('table.teams-table#teams-table',
      h('thead', h('tr', ['Team', 'Your role', 'Members', 'Created', ''].map((x) => h('th', x)))), tbody)),
    listStatus);

  let gone = false;

  async function create() {
    formError.hidden = true;
    name.removeAttribute('aria-invalid');
    const n = name.value.trim();
    if (!n) {
      formError.hidden = false;
      formError.textContent = 'Give the team a name.';
      name.setAttribute('aria-invalid', 'true');
      name.focus();
      return;
    }
    try {
      await busy(createBtn, () => post('/teams', { name: n }));
      toast(`Team “${n}” created: you are its admin.`, 'success');
      name.value = '';
      location.hash = `#/teams/${encodeURIComponent(n)}`;
    } catch (e) {
      formError.hidden = false;
      formError.textContent = `Could not create the team: ${describe(e)}`;
      name.setAttribute('aria-invalid', 'true');
    }
  }

  function row(t) {
    const href = `#/teams/${encodeURIComponent(t.name)}`;
    return h('tr.clickable', { dataset: { team: t.name, role: t.role || '' }, onclick: (e) => { if (!e.target.closest('a,button')) location.hash = href; } },
      h('td', h('a.team-link', { href }, h('strong', t.name))),
      h('td', roleTag(t.role)),
      h('td.num.teams-count', String(t.members ?? '—')),
      h('td.nowrap', t.created_at ? timeEl(t.created_at) : '—', t.created_by ? h('span.muted.small', ` by ${t.created_by}`) : null),
      h('td.row-actions', h('a.btn.btn-sm', { href }, t.role === 'admin' ? 'Manage' : 'Open')));
  }

  async function load() {
    clear(listStatus, h('div.loading', h('span.spinner'), 'Loading teams…'));
    try {
      const r = await get('/teams');
      if (gone) return;
      const teams = (r?.teams || []).slice().sort((a, b) => a.name.localeCompare(b.name));
      clear(tbody, teams.map(row));
      count.textContent = teams.length ? String(teams.length) : '';
      clear(listStatus, teams.length ? null : h('p.muted.empty-sm.empty', 'You are in no team yet. Create one above, or ask a team\'s admin to add you.'));
    } catch (e) {
      if (gone) return;
      clear(listStatus, h('div.form-error', { role: 'alert' }, `Could not load the teams: ${describe(e)}`));
    }
  }

  load();
  name.focus();
  return () => { gone = true; };
}

/** #/teams/<name>: the team's members and roles; what the caller's role allows. */
export function teamView(root, teamName) {
  const title = h('h1', teamName);
  const sub = h('p.muted');
  const pageError = h('div.form-error#team-error', { role: 'alert', hidden: true });
  const body = h('div.team-body', h('div.loading', h('span.spinner'), 'Loading the team…'));
  const headActions = h('div.actions.team-head-actions');
  root.append(
    h('a.back', { href: '#/teams' }, icon('back', 14), 'Teams'),
    h('div.page-head', h('div', title, sub), headActions),
    pageError,
    body);

  let gone = false;
  let team = null;
  let myRole = '';
  const admin = !!currentSession()?.admin;

  const showError = (prefix, e) => {
    pageError.hidden = false;
    pageError.textContent = `${prefix}: ${describe(e)}`;
    pageError.scrollIntoView({ block: 'nearest' });
  };
  const hideError = () => { pageError.hidden = true; };

  function canManage() { return myRole === 'admin' || admin; }

  async function setRole(m, role, sel) {
    hideError();
    const was = m.role;
    try {
      await busy(sel, () => put(`/teams/${seg(teamName)}/members/${seg(m.member)}`, { role }));
      toast(`${m.member} is now ${role === 'admin' ? 'an' : 'a'} ${role} of ${teamName}.`, 'success');
      load();
    } catch (e) {
      sel.value = was;
      showError(`Could not make ${m.member} ${role === 'admin' ? 'an' : 'a'} ${role}`, e);
    }
  }

  async function removeMember(m, btn) {
    const self = m.member === me();
    const ok = await confirmDialog({
      title: self ? `Leave ${teamName}?` : `Remove ${m.member} from ${teamName}?`,
      message: self
        ? ['You no longer see the team\'s desktops, and the team tokens you minted stop working. An admin can add you again.']
        : [`${m.member} no longer sees the team's desktops, and the team tokens they minted stop working.`],
      confirmLabel: self ? 'Leave team' : 'Remove member',
      danger: true,
    });
    if (!ok) return;
    hideError();
    try {
      await busy(btn, () => del(`/teams/${seg(teamName)}/members/${seg(m.member)}`));
      toast(self ? `You left ${teamName}.` : `Removed ${m.member} from ${teamName}.`, 'success');
      if (self && !admin) { location.hash = '#/teams'; return; }
      load();
    } catch (e) {
      showError(self ? `Could not leave ${teamName}` : `Could not remove ${m.member}`, e);
    }
  }

  async function deleteTeam(btn) {
    const ok = await confirmDialog({
      title: `Delete team ${teamName}?`,
      message: ['Its members lose it and every team token stops working. A team that still owns desktops cannot be deleted: delete or move them first. This cannot be undone.'],
      confirmLabel: 'Delete team',
      danger: true,
    });
    if (!ok) return;
    hideError();
    try {
      await busy(btn, () => del(`/teams/${seg(teamName)}`));
      toast(`Deleted team ${teamName}.`, 'success');
      location.hash = '#/teams';
    } catch (e) {
      showError(`Could not delete ${teamName}`, e);
    }
  }

  function memberRow(m) {
    const self = m.member === me();
    let roleCell;
    if (canManage()) {
      const sel = h('select.member-role-select', { 'aria-label': `Role of ${m.member}`, dataset: { memberRole: m.member } },
        ROLES.map((r) => h('option', { value: r, selected: r === m.role }, r)));
      sel.addEventListener('change', () => setRole(m, sel.value, sel));
      roleCell = sel;
    } else {
      roleCell = roleTag(m.role);
    }
    let action = null;
    if (self) {
      action = h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', dataset: { leave: m.member }, title: 'Leave this team', onclick: (e) => removeMember(m, e.currentTarget) }, icon('logout', 14), 'Leave');
    } else if (canManage()) {
      action = h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', dataset: { remove: m.member }, title: `Remove ${m.member} from the team`, onclick: (e) => removeMember(m, e.currentTarget) }, icon('trash', 14), 'Remove');
    }
    return h('tr', { dataset: { member: m.member, role: m.role } },
      h('td', h('strong.member-name', m.member), self ? h('span.tag.tag-strong.member-you', 'you') : null),
      h('td.member-role', roleCell),
      h('td.nowrap', m.added_at ? timeEl(m.added_at) : '—'),
      h('td.muted', m.added_by || '—'),
      h('td.row-actions', action));
  }

  function addForm() {
    const member = h('input#member-name', { type: 'text', required: true, maxlength: 320, placeholder: 'owner name, e.g. an email', spellcheck: false, autocomplete: 'off' });
    const role = h('select#member-role', { 'aria-label': 'Role' }, ROLES.map((r) => h('option', { value: r, selected: r === 'member' }, r)));
    const hint = h('small.muted.teams-role-hint', ROLE_HINT.member);
    role.addEventListener('change', () => { hint.textContent = ROLE_HINT[role.value] || ''; });
    const err = h('div.form-error#member-error', { role: 'alert', hidden: true });
    const btn = h('button.btn.btn-primary#member-add', { type: 'submit' }, icon('plus', 14), 'Add member');
    const form = h('form.panel.teams-form#member-form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        member.removeAttribute('aria-invalid');
        const who = member.value.trim();
        if (!who) {
          err.hidden = false;
          err.textContent = 'Name the person to add (their owner name: the email they sign in with, or the owner of their API tokens).';
          member.setAttribute('aria-invalid', 'true');
          member.focus();
          return;
        }
        try {
          await busy(btn, () => put(`/teams/${seg(teamName)}/members/${seg(who)}`, { role: role.value }));
          toast(`Added ${who} to ${teamName} as ${role.value === 'admin' ? 'an' : 'a'} ${role.value}.`, 'success');
          member.value = '';
          load();
        } catch (ex) {
          err.hidden = false;
          err.textContent = `Could not add ${who}: ${describe(ex)}`;
          if (ex.field === 'member') member.setAttribute('aria-invalid', 'true');
        }
      },
    },
    h('div.panel-head', h('h2', 'Add a member')),
    h('div.teams-form-row',
      h('div.field.teams-name-field', h('label', { for: 'member-name' }, 'Member'), member),
      h('div.field', h('label', { for: 'member-role' }, 'Role'), role),
      btn),
    hint,
    err);
    return form;
  }

  function render() {
    const members = (team.members || []).slice().sort((a, b) => ROLES.indexOf(b.role) - ROLES.indexOf(a.role) || a.member.localeCompare(b.member));
    myRole = members.find((m) => m.member === me())?.role || currentSession()?.role || '';
    clear(title, teamName, myRole ? roleTag(myRole, { id: 'team-my-role' }) : null);
    clear(sub, `${members.length} ${members.length === 1 ? 'member' : 'members'}`,
      team.created_at ? [' · created ', timeEl(team.created_at)] : null, team.created_by ? ` by ${team.created_by}` : null);
    const inTeam = members.some((m) => m.member === me());
    clear(headActions,
      inTeam ? h('button.btn#team-leave', { type: 'button', onclick: (e) => removeMember(members.find((m) => m.member === me()), e.currentTarget) }, icon('logout', 14), 'Leave team') : null,
      canManage() ? h('button.btn.btn-danger-ghost#team-delete', { type: 'button', onclick: (e) => deleteTeam(e.currentTarget) }, icon('trash', 14), 'Delete team') : null);
    clear(body,
      canManage() ? addForm() : null,
      h('section.panel.team-members-panel',
        h('div.panel-head', h('h2', 'Members'),
          canManage() ? null : h('span.muted.small', 'Only the team\'s admins change members and roles.')),
        h('div.table-wrap', h('table.team-members#team-members',
          h('thead', h('tr', ['Member', 'Role', 'Added', 'Added by', ''].map((x) => h('th', x)))),
          h('tbody', members.map(memberRow))))),
      h('p.muted.small.team-foot', 'To act for the team, mint a team token on the ', h('a', { href: '#/tokens' }, 'API tokens'), ' page',
        currentSession()?.via === 'sign-in' ? ', or switch to it with “Acting as” in the top bar.' : '.'));
  }

  async function load() {
    try {
      const t = await get(`/teams/${seg(teamName)}`);
      if (gone) return;
      team = t;
      render();
    } catch (e) {
      if (gone) return;
      clear(body, h('div.empty.empty-error', h('h2', e.status === 404 ? 'No such team' : 'Could not load the team'),
        h('p', e.status === 404 ? `There is no team ${teamName}, or you are not in it.` : describe(e)),
        h('a.btn', { href: '#/teams' }, icon('back', 14), 'All teams')));
    }
  }

  load();
  return () => { gone = true; };
}
