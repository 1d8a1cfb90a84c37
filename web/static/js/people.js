// People in the loop (docs/people.md) in the web console: badges on a
// desktop (it needs help, approvals wait, a person holds its input) and the
// Requests section of a desktop's page, where its pending questions are
// answered and its pending approvals decided with the console's API token.
import { api, get, post, seg, describe } from './api.js';
import { upsert, onDesktopEvent, subscribe, store } from './store.js';
import { h, clear, toast, busy, timeEl } from './ui.js';

const POLL_MS = 5000;
const LOOP_EVENTS = ['help_requested', 'help_answered', 'help_expired', 'approval_requested', 'approved', 'denied', 'control_taken', 'control_returned'];

/**
 * What a desktop's record says about people in the loop, as small tags
 * ("needs help", "2 approvals", "Dana has control"); null when nothing.
 * With release, a person's control gets a button that gives it back to the agent.
 */
export function loopBadges(d, { release = false } = {}) {
  if (!d) return null;
  const tags = [];
  if (d.needs_help) {
    tags.push(h('span.tag.tag-warn.loop-help', { title: 'The agent asked a question and waits for an answer' }, 'needs help'));
  }
  const n = Number(d.pending_approvals) || 0;
  if (n > 0) {
    tags.push(h('span.tag.tag-danger.loop-approvals', { title: 'Actions of the agent wait for a person to approve or deny them' },
      `${n} approval${n === 1 ? '' : 's'}`));
  }
  const c = d.control;
  if (c && c.holder === 'person') {
    const who = c.person || 'A person';
    tags.push(h('span.tag.tag-strong.loop-control', {
      title: `${who} holds the mouse and keyboard${c.since ? ` since ${new Date(c.since).toLocaleTimeString()}` : ''}; the agent's input is refused until it is handed back`,
    }, `${who} has control`));
    if (release) {
      const btn = h('button.btn.btn-sm', {
        type: 'button', title: 'Give the mouse and keyboard back to the agent',
        onclick: async () => {
          try {
            await busy(btn, () => post(`/desktops/${seg(d.id)}/control/release`));
            toast(`${d.name}: the agent has control again.`, 'success');
            get(`/desktops/${seg(d.id)}`).then(upsert, () => {});
          } catch (e) { toast(`Could not hand back: ${describe(e)}`, 'error'); }
        },
      }, 'Hand back to the agent');
      tags.push(btn);
    }
  }
  return tags.length ? h('div.loop-badges', tags) : null;
}

/**
 * The Requests section of desktop id's page: its pending help and approval
 * requests with Answer / Approve / Deny. Hidden while there are none.
 * Returns {el, cleanup}.
 */
export function requestsSection(id) {
  const count = h('span.count');
  const list = h('ul.loop-requests');
  const err = h('div.form-error', { hidden: true });
  const el = h('section.panel.panel-requests', { hidden: true, id: 'desktop-requests' },
    h('div.panel-head', h('h2', 'Requests', count), h('span.muted.small', 'The agent waits for these.')),
    err, list);
  const items = new Map(); // request id -> {li, shotURL}
  let timer = null;
  let loading = null;
  let stopped = false;

  async function load() {
    if (stopped) return;
    if (loading) return loading;
    loading = (async () => {
      try {
        const b = await get(`/desktops/${seg(id)}/requests?status=pending`);
        show(Array.isArray(b) ? b : b?.requests || []);
        err.hidden = true;
      } catch (e) {
        // A bureau without these routes, or a desktop that is gone: nothing to show.
        if (e.status === 404) { show([]); return; }
        err.hidden = false;
        err.textContent = `Could not load the requests: ${describe(e)}`;
        el.hidden = false;
      } finally {
        loading = null;
      }
    })();
    return loading;
  }

  function drop(rid) {
    const it = items.get(rid);
    if (!it) return;
    it.li.remove();
    if (it.shotURL) URL.revokeObjectURL(it.shotURL);
    items.delete(rid);
  }

  function show(reqs) {
    const pending = reqs.filter((r) => !r.status || r.status === 'pending');
    const ids = new Set(pending.map((r) => r.id));
    for (const rid of [...items.keys()]) if (!ids.has(rid)) drop(rid);
    pending.forEach((r, i) => {
      let it = items.get(r.id);
      if (!it) { it = item(r); items.set(r.id, it); }
      if (list.children[i] !== it.li) list.insertBefore(it.li, list.children[i] || null);
    });
    count.textContent = pending.length ? String(pending.length) : '';
    el.hidden = pending.length === 0 && err.hidden;
  }

  function item(r) {
    const it = { li: null, shotURL: '' };
    const approval = r.kind === 'approval';
    const rowErr = h('div.form-error', { hidden: true });
    const buttons = [];
    const act = async (what, body, btn) => {
      rowErr.hidden = true;
      buttons.forEach((b) => { b.disabled = true; });
      try {
        await busy(btn, () => post(`/desktops/${seg(id)}/requests/${seg(r.id)}/${what}`, body));
        toast(what === 'answer' ? 'Answered.' : what === 'approve' ? 'Approved.' : 'Denied.', 'success');
        drop(r.id);
        show([...items.values()].map((x) => x.req));
        get(`/desktops/${seg(id)}`).then(upsert, () => {}); // its badges
      } catch (e) {
        rowErr.hidden = false;
        rowErr.textContent = describe(e);
        buttons.forEach((b) => { b.disabled = false; });
        if (e.status === 404 || e.status === 409) load();
      }
    };
    const text = approval ? (r.action?.summary || r.question) : r.question;
    const controls = h('div.loop-actions');
    if (approval) {
      const reason = h('input', { type: 'text', placeholder: 'Reason (optional)', maxlength: 500, 'aria-label': 'Reason', dataset: { field: 'reason' } });
      const yes = h('button.btn.btn-sm.btn-primary', { type: 'button', dataset: { act: 'approve' }, onclick: () => act('approve', { reason: reason.value.trim() }, yes) }, 'Approve');
      const no = h('button.btn.btn-sm.btn-danger-ghost', { type: 'button', dataset: { act: 'deny' }, onclick: () => act('deny', { reason: reason.value.trim() }, no) }, 'Deny');
      buttons.push(yes, no);
      controls.append(reason, yes, no);
    } else if (r.choices?.length) {
      for (const c of r.choices) {
        const b = h('button.btn.btn-sm', { type: 'button', dataset: { choice: c }, onclick: () => act('answer', { choice: c }, b) }, c);
        buttons.push(b);
        controls.append(b);
      }
    } else {
      const answer = h('input', { type: 'text', placeholder: 'Your answer', maxlength: 2000, 'aria-label': 'Answer', dataset: { field: 'answer' } });
      const send = h('button.btn.btn-sm.btn-primary', { type: 'button', dataset: { act: 'answer' } }, 'Answer');
      const go = () => {
        const t = answer.value.trim();
        if (!t) { answer.focus(); return; }
        act('answer', { answer: t }, send);
      };
      send.addEventListener('click', go);
      answer.addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); go(); } });
      buttons.push(send);
      controls.append(answer, send);
    }
    const shot = r.screenshot ? h('a.loop-shot', { target: '_blank', rel: 'noopener', title: 'The screen when it asked' }, 'loading screenshot…') : null;
    it.req = r;
    it.li = h('li.loop-request', { dataset: { requestId: r.id, kind: r.kind } },
      h('div.loop-head',
        h(`span.tag.${approval ? 'tag-danger' : 'tag-warn'}`, approval ? 'approval' : 'question'),
        r.asked_at ? h('span.muted.small', 'asked ', timeEl(r.asked_at)) : null,
        approval && r.action?.rule ? h('span.muted.small', 'rule ', h('code', r.action.rule)) : null,
        r.expires_at ? h('span.muted.small', approval ? 'denied by itself ' : 'closes ', timeEl(r.expires_at), approval ? ' unless decided' : ' unless answered') : null),
      h(approval ? 'pre.code.loop-text' : 'p.loop-text', text || ''),
      shot, controls, rowErr);
    if (shot) {
      api('GET', `/desktops/${seg(id)}/requests/${seg(r.id)}/screenshot`, undefined, { raw: true })
        .then((res) => res.blob())
        .then((blob) => {
          if (!items.has(r.id)) return;
          it.shotURL = URL.createObjectURL(blob);
          shot.href = it.shotURL;
          clear(shot, h('img', { src: it.shotURL, alt: 'The screen when the agent asked' }));
        })
        .catch(() => { clear(shot, 'no screenshot'); shot.removeAttribute('href'); });
    }
    return it;
  }

  // Now, every 5 s while the page is visible, and when the desktop's record
  // or its history says something changed.
  let lastSig = '';
  const sigOf = () => {
    const d = store.desktops.get(id);
    return d ? `${!!d.needs_help}:${d.pending_approvals || 0}` : '';
  };
  const unsubs = [
    subscribe((reason, changed) => {
      if (changed !== id) return;
      const s = sigOf();
      if (s !== lastSig) { lastSig = s; load(); }
    }),
    onDesktopEvent((ev) => { if (ev.desktop_id === id && LOOP_EVENTS.includes(ev.type)) load(); }),
  ];
  timer = setInterval(() => { if (document.visibilityState === 'visible') load(); }, POLL_MS);
  lastSig = sigOf();
  load();

  return {
    el,
    cleanup: () => {
      stopped = true;
      clearInterval(timer);
      unsubs.forEach((u) => u());
      for (const rid of [...items.keys()]) drop(rid);
    },
  };
}
