// Live URLs of a desktop, shown in its Services tab: each service port
// and each port made public or shared, with Open (signs this browser in
// to that URL only, through a one-time link), share links and the public
// switch, which is shown loudly.
import { get, post, del, api, seg, describe } from './api.js';
import { h, clear, toast, confirmDialog, modal, infoDialog, busy, timeEl } from './ui.js';

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

  // Open: a window first, in the click itself (so no popup blocker stops
  // it), then the one-time sign-in link. The app gets no handle on this
  // page (opener). Blocked anyway, the link is offered to click.
  async function open(port) {
    const win = window.open('about:blank', '_blank');
    if (win) win.opener = null;
    try {
      const r = await post(`/desktops/${seg(id)}/urls/${port}/open`);
      if (win) win.location.href = r.url;
      else {
        infoDialog(`Open port ${port}`, [h('p', 'The browser blocked the new tab. This link signs you in to the URL; it works once, within a minute.'),
          h('p', h('a', { href: r.url, target: '_blank', rel: 'noopener noreferrer' }, `Open port ${port}`))]);
      }
    } catch (e) {
      win?.close();
      toast(describe(e), 'error');
    }
  }

  // copy puts text on the clipboard; without the Clipboard API (a page not
  // served over HTTPS or from localhost) it selects the field and copies.
  async function copy(field) {
    field.select();
    try {
      if (navigator.clipboard) await navigator.clipboard.writeText(field.value);
      else if (!document.execCommand('copy')) throw new Error('copy refused');
      toast('Copied');
    } catch { toast('Could not copy: the link is selected, copy it with Ctrl+C.', 'error'); }
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
    const hours = h('input.share-hours', { type: 'number', min: 1, max: 720, step: 1, value: 24, required: true });
    const ro = h('input.share-readonly', { type: 'checkbox' });
    const ok = await modal((close) => {
      const make = h('button.btn.btn-primary.share-make', {
        type: 'button',
        onclick: () => {
          const n = Number(hours.value);
          if (!Number.isInteger(n) || n < 1 || n > 720) { toast('Valid for 1 to 720 hours (30 days).', 'error'); hours.focus(); return; }
          close(true);
        },
      }, 'Make link');
      return {
        title: `Share port ${u.port}`,
        body: [h('p', 'Whoever has the link can open this URL, without signing in, until it expires or you revoke it.'),
          h('label', 'Valid for ', hours, ' hours'), h('label.check', ro, h('span', 'Read-only (GET and HEAD only)'))],
        actions: [h('button.btn', { type: 'button', onclick: () => close(false) }, 'Cancel'), make],
        onOpen: () => hours.select(),
      };
    });
    if (!ok) return;
    try {
      const r = await post(`/desktops/${seg(id)}/shares`, { port: u.port, ttl_s: Number(hours.value) * 3600, read_only: ro.checked });
      const link = h('input#share-link-once', { type: 'text', readonly: true, value: r.url || r.path_url, 'aria-label': 'Share link' });
      modal((close) => ({
        title: `Share link for port ${u.port}`,
        body: [link, h('p.warn-note', h('strong', 'Copy it now: it will not be shown again. '),
          `Anyone with it can open port ${u.port}${r.share?.read_only ? ' (read-only)' : ''} until ${new Date(r.share?.expires_at).toLocaleString()} or until you revoke it.`)],
        actions: [h('button.btn.share-copy', { type: 'button', onclick: () => copy(link) }, 'Copy'),
          h('button.btn.btn-primary', { type: 'button', onclick: () => close(true) }, 'Done')],
        onOpen: () => link.select(),
      }), { wide: true });
      load();
    } catch (e) { toast(describe(e), 'error'); }
  }

  function renderURLs(urls) {
    if (!urls.length) { clear(list, h('p.muted', 'No URLs yet: give a service a port, or open any port above.')); return; }
    clear(list, h('div.table-wrap', h('table.urls', h('thead', h('tr', ['Port', 'Service', 'Access', 'Share links', 'URL', ''].map((x) => h('th', x)))),
      h('tbody', urls.map((u) => h('tr.url-row', { dataset: { port: String(u.port) } },
        h('td', String(u.port)),
        h('td', u.service || '—'),
        h('td', u.public ? h('span.pill.pill-public', { title: 'Anyone with the URL can open it, without signing in' }, 'PUBLIC')
          : h('span.pill.pill-idle', { title: 'Only you (signed in), and whoever has a share link' }, 'private')),
        h('td.url-shares', { title: 'Active share links' }, String(u.shares || 0)),
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
      h('tbody', active.map((l) => h('tr.share-row', { dataset: { share: l.id, port: String(l.port) } },
        h('td', String(l.port)),
        h('td', l.read_only ? 'read-only' : 'full'),
        h('td.nowrap', timeEl(l.expires_at)),
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

  // load shows both lists; each shows its own error.
  async function load() {
    const [u, s] = await Promise.allSettled([get(`/desktops/${seg(id)}/urls`), get(`/desktops/${seg(id)}/shares`)]);
    const failed = (box, e) => clear(box, h('div.empty.empty-error.empty-sm', h('p', describe(e))));
    if (u.status === 'fulfilled') renderURLs(u.value?.urls || []); else failed(list, u.reason);
    if (s.status === 'fulfilled') renderShares(s.value?.shares || []); else failed(shares, s.reason);
  }

  return { el, load };
}
