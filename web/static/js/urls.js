// Live URLs of a desktop, shown in its Services tab: each service port
// and each port made public or shared, with Open (signs this browser in
// to that URL only, through a one-time link), share links and the public
// switch, which is shown loudly.
import { get, post, del, api, seg, describe } from './api.js';
import { h, clear, toast, confirmDialog, modal, busy, fmtTime } from './ui.js';

export function urlsSection(id) {
  const list = h('div');
  const shares = h('div');
  const portIn = h('input', { type: 'number', min: 1, max: 65535, placeholder: 'port', 'aria-label': 'Port' });
  const el = h('section#live-urls.live-urls',
    h('div.tab-head', h('h3', 'Live URLs'),
      h('form.inline-form.url-port-form', {
        onsubmit: (ev) => {
          ev.preventDefault();
          const p = Number(portIn.value);
          if (!Number.isInteger(p) || p < 1 || p > 65535) { toast('A port is 1 to 65535.', 'error'); return; }
          open(p);
        },
      }, portIn, ' ', h('button.btn.btn-sm', { type: 'submit' }, 'Open another port'))),
    h('p.muted', 'Private unless you share them: Open signs this browser in to one URL (for 12 hours). A request to a sleeping desktop wakes it.'),
    list, h('h4', 'Share links'), shares);

  // Open: a window first (so no popup blocker stops it), then the
  // one-time sign-in link.
  async function open(port) {
    const win = window.open('about:blank', '_blank');
    try {
      const r = await post(`/desktops/${seg(id)}/urls/${port}/open`);
      if (win) win.location.href = r.url; else window.location.href = r.url;
    } catch (e) {
      win?.close();
      toast(describe(e), 'error');
    }
  }

  async function setPublic(u, btn) {
    if (!u.public && !(await confirmDialog({
      title: `Make port ${u.port} public?`, danger: true, confirmLabel: 'Make public',
      message: 'Anyone who has the URL can open it, without signing in, until you make it private again.',
    }))) return;
    await busy(btn, async () => {
      try {
        await api('PUT', `/desktops/${seg(id)}/urls/${u.port}`, { public: !u.public });
        toast(`Port ${u.port} is ${u.public ? 'private' : 'public'} now`);
        load();
      } catch (e) { toast(describe(e), 'error'); }
    });
  }

  async function share(u) {
    const hours = h('input', { type: 'number', min: 1, max: 720, value: 24 });
    const ro = h('input', { type: 'checkbox' });
    const ok = await modal((close) => ({
      title: `Share port ${u.port}`,
      body: [h('p', 'Whoever has the link can open this URL until it expires or you revoke it.'),
        h('label', 'Valid for ', hours, ' hours'), h('label.check', ro, h('span', 'Read-only (GET and HEAD only)'))],
      actions: [h('button.btn', { type: 'button', onclick: () => close(false) }, 'Cancel'),
        h('button.btn.btn-primary', { type: 'button', onclick: () => close(true) }, 'Make link')],
    }));
    if (!ok) return;
    try {
      const r = await post(`/desktops/${seg(id)}/shares`, { port: u.port, ttl_s: Math.round(Number(hours.value) * 3600), read_only: ro.checked });
      const link = h('input#share-link-once', { type: 'text', readonly: true, value: r.url || r.path_url });
      modal((close) => ({
        title: 'Share link',
        body: [link, h('p.muted', 'Copy it now: it is not shown again.')],
        actions: [h('button.btn', { type: 'button', onclick: () => { navigator.clipboard?.writeText(link.value); toast('Copied'); } }, 'Copy'),
          h('button.btn.btn-primary', { type: 'button', onclick: () => close(true) }, 'Done')],
        onOpen: () => link.select(),
      }));
      load();
    } catch (e) { toast(describe(e), 'error'); }
  }

  function renderURLs(urls) {
    if (!urls.length) { clear(list, h('p.muted', 'No URLs yet: give a service a port, or open any port above.')); return; }
    clear(list, h('div.table-wrap', h('table.urls', h('thead', h('tr', ['Port', 'Service', 'Access', 'URL', ''].map((x) => h('th', x)))),
      h('tbody', urls.map((u) => h('tr.url-row', { dataset: { port: String(u.port) } },
        h('td', String(u.port)),
        h('td', u.service || '—'),
        h('td', u.public ? h('span.pill.pill-bad', { title: 'Anyone with the URL can open it' }, 'PUBLIC') : h('span.pill.pill-idle', 'private'),
          u.shares ? h('div.muted.small', `${u.shares} share link${u.shares > 1 ? 's' : ''}`) : null),
        h('td.wrap', h('code', u.url || u.path_url)),
        h('td.nowrap',
          h('button.btn.btn-sm.url-open', { type: 'button', onclick: () => open(u.port) }, 'Open'), ' ',
          h('button.btn.btn-sm.url-share', { type: 'button', onclick: () => share(u) }, 'Share link'), ' ',
          h(`button.btn.btn-sm.url-public${u.public ? '' : '.btn-danger'}`, { type: 'button', onclick: (ev) => setPublic(u, ev.currentTarget) },
            u.public ? 'Make private' : 'Make public'))))))));
  }

  function renderShares(links) {
    const now = Date.now();
    const active = links.filter((l) => !l.revoked_at && new Date(l.expires_at).getTime() > now);
    if (!active.length) { clear(shares, h('p.muted', 'None active.')); return; }
    clear(shares, h('div.table-wrap', h('table.shares', h('thead', h('tr', ['Port', 'Access', 'Expires', 'Made by', ''].map((x) => h('th', x)))),
      h('tbody', active.map((l) => h('tr.share-row', { dataset: { share: l.id } },
        h('td', String(l.port)),
        h('td', l.read_only ? 'read-only' : 'full'),
        h('td.nowrap', fmtTime(l.expires_at)),
        h('td', l.created_by || '—'),
        h('td', h('button.btn.btn-sm.btn-danger.share-revoke', {
          type: 'button',
          onclick: (ev) => busy(ev.currentTarget, async () => {
            try {
              await del(`/desktops/${seg(id)}/shares/${seg(l.id)}`);
              toast('Share link revoked');
              load();
            } catch (e) { toast(describe(e), 'error'); }
          }),
        }, 'Revoke'))))))));
  }

  async function load() {
    try {
      const [u, s] = await Promise.all([get(`/desktops/${seg(id)}/urls`), get(`/desktops/${seg(id)}/shares`)]);
      renderURLs(u?.urls || []);
      renderShares(s?.shares || []);
    } catch (e) { clear(list, h('div.empty.empty-error.empty-sm', h('p', describe(e)))); }
  }

  return { el, load };
}
