// The audit page: every state-changing call and console session — who,
// from where, what, to which desktop or object, how it ended. Owners see
// the entries where they acted or were acted on; admins every entry.
import { get, api, describe } from './api.js';
import { store } from './store.js';
import { h, icon, clear, toast, timeEl } from './ui.js';

const PAGE = 100;
const OUTCOMES = [['', 'Any outcome'], ['ok', 'Succeeded'], ['error', 'Failed']];

function who(e) {
  if (e.person) return h('span', h('strong', e.person), h('span.muted', ` (${e.owner}'s console link)`));
  if (!e.owner) return h('span.muted', 'not authenticated');
  return h('span', h('strong', e.owner), h('span.muted', `/${e.token_name || e.token_id}`));
}

function object(e) {
  const desk = e.desktop_id
    ? h('a', { href: `#/desktops/${encodeURIComponent(e.desktop_id)}` }, store.desktops.get(e.desktop_id)?.name || e.desktop_id)
    : null;
  if (!e.object_type || (e.object_type === 'desktop' && e.object_id === e.desktop_id)) return desk || h('span.muted', '—');
  return h('span', h('span.muted', `${e.object_type} `), h('code', e.object_id), desk ? [h('span.muted', ' of '), desk] : null);
}

function outcome(e) {
  const failed = e.status >= 400;
  return h(`span.pill.pill-${failed ? 'bad' : 'ok'}`, { title: `HTTP ${e.status}${e.error_code ? ` ${e.error_code}` : ''}` },
    failed ? `${e.status} ${e.error_code || 'error'}` : String(e.status));
}

function took(ms) {
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

function row(e) {
  return h('tr', { dataset: { id: e.id } },
    h('td.nowrap', timeEl(e.at, false)),
    h('td', who(e)),
    h('td', h('code', e.client_ip || '—')),
    h('td', h('code', e.action), e.detail ? h('div.muted.small', e.detail) : null),
    h('td', object(e)),
    h('td', outcome(e)),
    h('td.muted.small.nowrap', took(e.duration_ms)));
}

export function auditView(root) {
  const desktop = h('input.audit-filter', { type: 'text', placeholder: 'Desktop id', 'aria-label': 'Only this desktop (or object) id', spellcheck: false });
  const action = h('input.audit-filter', { type: 'text', placeholder: 'Action, e.g. desktop.', 'aria-label': 'Only actions starting with', spellcheck: false });
  const result = h('select.audit-filter', { 'aria-label': 'Outcome' }, OUTCOMES.map(([v, l]) => h('option', { value: v }, l)));
  const count = h('span.count');
  const tbody = h('tbody');
  const status = h('div.audit-status');
  const more = h('button.btn', { type: 'button', hidden: true, onclick: () => load(false) }, 'Load more');
  const exportBtn = h('button.btn', { type: 'button', title: 'Download every matching entry as NDJSON', onclick: () => exportAll(exportBtn) },
    icon('download', 14), 'Export NDJSON');
  const form = h('form.audit-filters', { onsubmit: (ev) => { ev.preventDefault(); load(true); } },
    desktop, action, result, h('button.btn.btn-primary', { type: 'submit' }, 'Filter'), exportBtn);
  root.append(
    h('div.page-head',
      h('div', h('h1', 'Audit log', count),
        h('p.muted', 'Every state-changing call and console session: who, from where, what, and how it ended. Newest first.'))),
    form,
    h('div.table-wrap', h('table.audit-table',
      h('thead', h('tr', ['When', 'Who', 'Client', 'Action', 'Object', 'Outcome', 'Took'].map((x) => h('th', x)))), tbody)),
    status, h('div.audit-more', more));

  let cursor = '';
  let shown = 0;
  let gone = false;
  let seq = 0;

  function query() {
    const q = new URLSearchParams();
    if (desktop.value.trim()) q.set('desktop', desktop.value.trim());
    if (action.value.trim()) q.set('action', action.value.trim());
    if (result.value) q.set('outcome', result.value);
    return q;
  }

  async function load(fresh) {
    const my = ++seq;
    const q = query();
    q.set('limit', String(PAGE));
    if (!fresh && cursor) q.set('cursor', cursor);
    if (fresh) { clear(tbody); shown = 0; cursor = ''; }
    clear(status, h('div.loading', h('span.spinner'), 'Loading…'));
    more.disabled = true;
    try {
      const page = await get(`/audit?${q}`);
      if (gone || my !== seq) return;
      tbody.append(...page.entries.map(row));
      shown += page.entries.length;
      cursor = page.next_cursor;
      count.textContent = ` ${shown}${cursor ? '+' : ''}`;
      clear(status, shown ? null : h('p.muted.empty', 'No entries match.'));
      more.hidden = !cursor;
    } catch (e) {
      if (gone || my !== seq) return;
      clear(status, h('div.form-error', { role: 'alert' }, describe(e)));
    } finally {
      more.disabled = false;
    }
  }

  // A link cannot send the token: fetch the export and hand it over as a file.
  async function exportAll(btn) {
    const q = query();
    q.set('format', 'ndjson');
    btn.disabled = true;
    try {
      const res = await api('GET', `/audit?${q}`, undefined, { raw: true });
      const url = URL.createObjectURL(await res.blob());
      const a = h('a', { href: url, download: 'bureau-audit.ndjson' });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10000);
    } catch (e) {
      toast(describe(e), 'error');
    } finally {
      btn.disabled = false;
    }
  }

  load(true);
  return () => { gone = true; };
}
