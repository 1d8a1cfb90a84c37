// The Services tab of a desktop: what bureau-agent keeps running in it,
// with state, restarts, a URL for services that listen on a port, and a
// log view that can follow the service's output live.
import { api, get, post, del, seg, describe } from './api.js';
import { h, icon, clear, toast, confirmDialog, busy } from './ui.js';
import { urlsSection } from './urls.js';

const STATE_KIND = { running: 'ok', starting: 'busy', backoff: 'bad', waiting: 'sleep', exited: 'idle', stopped: 'idle' };

function uptime(s) {
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function servicesTab(box, id, desk) {
  let stopFollow = null;
  let timer = null;
  const body = h('div');
  const logBox = h('div.svc-log', { hidden: true });
  const urls = urlsSection(id);
  box.append(h('div.tab-head', h('p.muted', 'Commands bureau keeps running in this desktop: restarted when they fail, started again at every boot, kept through hibernation. ',
    'Create one with ', h('code', 'bureau service create'), ', the API or the ', h('code', 'create_service'), ' MCP tool.'),
  h('button.btn.btn-sm', { type: 'button', onclick: () => load() }, icon('refresh', 14), 'Refresh')), body, logBox, urls.el);

  async function load() {
    urls.load();
    const d = desk();
    if (d && d.state !== 'running') {
      clear(body, h('div.empty.empty-sm', h('p', `Services run while the desktop runs (it is ${d.state}).`)));
      return;
    }
    try {
      const r = await get(`/desktops/${seg(id)}/services`);
      render(r?.services || []);
    } catch (e) { clear(body, h('div.empty.empty-error.empty-sm', h('p', describe(e)))); }
  }

  function render(list) {
    if (!list.length) { clear(body, h('div.empty.empty-sm', h('p', 'No services yet.'))); return; }
    clear(body, h('div.table-wrap', h('table.services', h('thead', h('tr', ['Name', 'State', 'Restarts', 'Uptime', 'URL', 'Command', ''].map((x) => h('th', x)))),
      h('tbody', list.map((s) => h('tr', { dataset: { service: s.name } },
        h('td', h('strong', s.name)),
        h('td', h(`span.pill.pill-${STATE_KIND[s.state] || 'idle'}`, s.state), s.reason && s.state !== 'running' ? h('div.muted.small', s.reason) : null),
        h('td', String(s.restarts)),
        h('td.nowrap', s.state === 'running' ? uptime(s.uptime_s || 0) : '—'),
        h('td', s.live_url ? h('code', { title: 'Its live URL: see Live URLs below to open or share it' }, s.live_url) : '—'),
        h('td.wrap', h('code', (s.command || []).join(' '))),
        h('td.nowrap', actions(s))))))));
  }

  function actions(s) {
    const act = (label, method, path, confirmText) => h('button.btn.btn-sm', {
      type: 'button',
      onclick: async (ev) => {
        if (confirmText && !(await confirmDialog({ title: `${label} ${s.name}?`, message: confirmText, confirmLabel: label, danger: true }))) return;
        await busy(ev.currentTarget, async () => {
          try {
            await (method === 'DELETE' ? del(path) : post(path));
            toast(`${s.name}: ${label.toLowerCase()} done`);
            load();
          } catch (e) { toast(describe(e), 'error'); }
        });
      },
    }, label);
    const base = `/desktops/${seg(id)}/services/${seg(s.name)}`;
    return [
      h('button.btn.btn-sm', { type: 'button', onclick: () => showLog(s.name) }, 'Log'), ' ',
      s.state === 'stopped' || s.state === 'exited' ? act('Start', 'POST', `${base}/start`) : act('Stop', 'POST', `${base}/stop`), ' ',
      act('Restart', 'POST', `${base}/restart`), ' ',
      act('Delete', 'DELETE', base, 'The service is stopped and forgotten; its log goes with it.'),
    ];
  }

  // The log: the last 64 KiB, then (Follow) what it writes, live.
  function showLog(name) {
    stopFollow?.();
    const pre = h('pre.log', { 'aria-live': 'polite' });
    const follow = h('button.btn.btn-sm', { type: 'button' }, 'Follow');
    logBox.hidden = false;
    clear(logBox, h('div.tab-head', h('h3', `Log of ${name}`), h('span', follow, ' ',
      h('button.btn.btn-sm', { type: 'button', onclick: () => { stopFollow?.(); logBox.hidden = true; } }, 'Close'))), pre);
    const path = `/desktops/${seg(id)}/services/${seg(name)}/logs`;
    api('GET', `${path}?tail=65536`, undefined, { raw: true }).then((r) => r.text()).then((t) => {
      pre.textContent = t || '(nothing written yet)';
      pre.scrollTop = pre.scrollHeight;
    }).catch((e) => { pre.textContent = describe(e); });
    follow.onclick = () => {
      if (stopFollow) { stopFollow(); return; }
      const ctl = new AbortController();
      stopFollow = () => { ctl.abort(); stopFollow = null; follow.textContent = 'Follow'; };
      follow.textContent = 'Stop following';
      pre.textContent = '';
      streamLog(`${path}?follow=true&tail=16384`, ctl.signal, (text) => {
        pre.textContent += text;
        pre.scrollTop = pre.scrollHeight;
      }).catch((e) => { if (e.name !== 'AbortError') pre.textContent += `\n[${describe(e)}]`; }).finally(() => stopFollow?.());
    };
  }

  load();
  timer = setInterval(() => { if (document.visibilityState === 'visible') load(); }, 5000);
  return () => { clearInterval(timer); stopFollow?.(); };
}

// streamLog reads server-sent "log" events and hands their text to out.
async function streamLog(path, signal, out) {
  const res = await api('GET', path, undefined, { raw: true, signal });
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const data = ev.split('\n').find((l) => l.startsWith('data: '));
      if (!data) continue;
      try {
        const v = JSON.parse(data.slice(6));
        out(v.encoding === 'base64' ? new TextDecoder().decode(Uint8Array.from(atob(v.data), (c) => c.charCodeAt(0))) : v.data);
      } catch { /* a keepalive or a partial event */ }
    }
  }
}
