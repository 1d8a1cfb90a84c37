// The console page's people-in-the-loop bar (docs/people.md): who holds the
// desktop's mouse and keyboard (the agent or a person) with Take over /
// Hand back, who is watching, and the agent's pending requests (questions
// to answer, actions to approve or deny) in a panel.
//
// It polls GET /api/v1/desktops/{id}/console/state?token=… every 2 s and
// right after each action, and POSTs …/console/control/take|release and
// …/console/requests/{rid}/answer|approve|deny with the console token.
//
// For tests: #control-bar[data-holder] is "agent", "you" or "person" once
// the first state arrived; #control-status is its text; #viewers,
// #requests-badge (the count), #requests holds [data-request-id][data-kind]
// items with button[data-act=answer|approve|deny], button[data-choice],
// input[data-field=answer|reason] and .req-error. window.bureauPeople has
// refresh() (a promise) and state (the last answer).

const POLL_MS = 2000;
const $ = (id) => document.getElementById(id);

// el('button.primary', {dataset: {act: 'approve'}, onclick}, 'Approve')
function el(sel, attrs, ...children) {
  const [tag, ...classes] = sel.split('.');
  const n = document.createElement(tag || 'div');
  if (classes.length) n.className = classes.join(' ');
  if (attrs != null && (typeof attrs !== 'object' || attrs instanceof Node)) { children.unshift(attrs); attrs = null; }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === 'dataset') Object.assign(n.dataset, v);
    else if (k.startsWith('on')) n.addEventListener(k.slice(2), v);
    else if (k in n && typeof v !== 'string') n[k] = v;
    else n.setAttribute(k, v === true ? '' : v);
  }
  for (const c of children.flat()) if (c != null && c !== false) n.append(c instanceof Node ? c : String(c));
  return n;
}

// "10 min", "45 s", "2 h"
function fmtSpan(s) {
  if (!s || s < 0) return '';
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  const h = s / 3600;
  return `${Number.isInteger(h) ? h : h.toFixed(1)} h`;
}

function fmtClock(iso) {
  const t = new Date(iso);
  return isNaN(t) ? '' : t.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function setupPeople({ desktopID, token, focusScreen = () => {} }) {
  const ui = {
    bar: $('control-bar'),
    status: $('control-status'),
    until: $('control-until'),
    take: $('take-over'),
    handBack: $('hand-back'),
    viewers: $('viewers'),
    error: $('control-error'),
    toggle: $('requests-toggle'),
    badge: $('requests-badge'),
    panel: $('requests'),
    close: $('requests-close'),
    list: $('requests-list'),
    empty: $('requests-empty'),
    notify: $('notify-me'),
  };
  const base = `/api/v1/desktops/${encodeURIComponent(desktopID)}/console`;
  const q = `token=${encodeURIComponent(token)}`;
  const url = (path) => `${base}${path}?${q}`;

  let titleBase = document.title;
  let viewOnly = false;
  let timer = null;
  let inflight = null;
  let next = null; // a read queued behind the one in flight
  let stopped = false;
  let first = true;
  let last = null;
  const seen = new Set(); // request ids shown once (for notifications)
  const items = new Map(); // request id -> its <li>
  let errTimer = null;

  // ---- API ----

  async function call(method, path, body) {
    let resp;
    try {
      resp = await fetch(url(path), {
        method, cache: 'no-store', credentials: 'omit',
        headers: body !== undefined ? { 'Content-Type': 'application/json' } : undefined,
        body: body !== undefined ? JSON.stringify(body) : undefined,
      });
    } catch (e) {
      const err = new Error('the server did not answer');
      err.status = 0;
      throw err;
    }
    let b = null;
    try { b = await resp.json(); } catch (e) { /* not JSON */ }
    if (!resp.ok) {
      const e = (b && b.error) || {};
      const err = new Error(e.message || `server error ${resp.status}`);
      err.status = resp.status;
      err.code = e.code || '';
      throw err;
    }
    return b;
  }

  const describe = (e) => (e.code && !String(e.message).includes(e.code) ? `${e.message} (${e.code})` : e.message);

  // ---- polling ----

  // refresh reads the state now (one read at a time: a call during one
  // runs another right after it) and resolves when it is shown.
  function refresh() {
    if (stopped) return Promise.resolve(last);
    if (inflight) {
      if (!next) next = inflight.then(() => { next = null; return refresh(); });
      return next;
    }
    clearTimeout(timer);
    let delay = POLL_MS;
    inflight = (async () => {
      try {
        show(await call('GET', '/state'));
      } catch (e) {
        if (e.status === 401) { stop(); return; } // the session is over
        if (e.status === 404 && !last) {
          ui.bar.hidden = true; // a bureau without these routes: ask now and then
          delay = 30000;
        } else {
          showError(`state: ${describe(e)}`);
        }
      } finally {
        inflight = null;
        clearTimeout(timer);
        if (!stopped && !next) timer = setTimeout(refresh, delay);
      }
    })().then(() => last);
    return inflight;
  }

  function stop() {
    stopped = true;
    clearTimeout(timer);
    ui.bar.hidden = true;
    setPanel(false);
    setTitle(titleBase);
  }

  // ---- showing the state ----

  function show(st) {
    last = st;
    if (pub) pub.state = st;
    const control = st.control || { holder: 'agent' };
    const you = st.you || {};
    const vo = viewOnly || !!you.view_only;
    const mine = control.holder === 'person' &&
      (!!you.holds_input || (!!you.session && control.by === `console/${you.session}`));
    const holder = control.holder !== 'person' ? 'agent' : mine ? 'you' : 'person';
    const who = control.person || 'Someone';

    ui.bar.hidden = false;
    ui.bar.dataset.holder = holder;
    ui.status.textContent = holder === 'agent' ? 'The agent has control'
      : holder === 'you' ? 'You have control' : `${who} has control`;
    ui.status.title = holder === 'agent'
      ? 'The agent drives the mouse and keyboard. Take over to drive them yourself; the agent waits until you hand back.'
      : holder === 'you'
        ? 'Only your keyboard and mouse reach the desktop; the agent waits.'
        : `Only ${who}'s keyboard and mouse reach the desktop${vo ? '' : '; yours are not sent until you take over'}.`;
    if (holder === 'you' && control.idle_timeout_s) {
      ui.until.textContent = `hands back after ${fmtSpan(control.idle_timeout_s)} without input`;
      ui.until.title = control.until ? `If you are idle, the agent gets control back at ${fmtClock(control.until)}` : '';
    } else {
      ui.until.textContent = '';
      ui.until.title = '';
    }
    ui.take.hidden = vo || holder === 'you';
    ui.take.title = holder === 'person' ? `Take control from ${who}` : 'Take the mouse and keyboard from the agent';
    ui.handBack.hidden = vo || holder !== 'you';

    const viewers = st.viewers || [];
    const names = viewers.map((v) => {
      const n = v.name || 'someone';
      const notes = [];
      if (you.session && v.session === you.session) notes.push('you');
      if (v.view_only) notes.push('view only');
      return notes.length ? `${n} (${notes.join(', ')})` : n;
    });
    ui.viewers.textContent = names.length ? `Watching: ${names.join(', ')}` : '';
    ui.viewers.title = ui.viewers.textContent;

    showRequests(st.requests || [], vo);
  }

  function showRequests(list, vo) {
    const pending = list.filter((r) => !r.status || r.status === 'pending');
    const ids = new Set(pending.map((r) => r.id));
    for (const [id, li] of items) {
      if (!ids.has(id)) { li.remove(); items.delete(id); }
    }
    const fresh = [];
    pending.forEach((r, i) => {
      let li = items.get(r.id);
      if (!li) {
        li = requestItem(r);
        items.set(r.id, li);
      }
      li.classList.toggle('view-only', vo);
      if (ui.list.children[i] !== li) ui.list.insertBefore(li, ui.list.children[i] || null);
      if (!seen.has(r.id)) { seen.add(r.id); fresh.push(r); }
    });
    const n = pending.length;
    ui.badge.textContent = String(n);
    ui.badge.hidden = n === 0;
    ui.toggle.classList.toggle('has-requests', n > 0);
    ui.empty.hidden = n > 0;
    setTitle(titleBase);
    if (fresh.length) {
      setPanel(true);
      if (!first) notify(fresh);
    }
    first = false;
  }

  function requestItem(r) {
    const isApproval = r.kind === 'approval';
    const err = el('div.req-error', { role: 'alert' });
    const buttons = [];
    const act = async (path, body, btn) => {
      err.textContent = '';
      buttons.forEach((b) => { b.disabled = true; });
      btn.classList.add('busy');
      try {
        await call('POST', `/requests/${encodeURIComponent(r.id)}/${path}`, body);
        li.remove();
        items.delete(r.id);
        const n = items.size;
        ui.badge.textContent = String(n);
        ui.badge.hidden = n === 0;
        ui.empty.hidden = n > 0;
        setTitle(titleBase);
        if (n === 0) focusScreen();
      } catch (e) {
        err.textContent = describe(e);
        buttons.forEach((b) => { b.disabled = false; });
      } finally {
        btn.classList.remove('busy');
        refresh();
      }
    };
    const text = isApproval ? ((r.action && r.action.summary) || r.question) : r.question;
    const meta = [];
    if (isApproval && r.action && r.action.rule) meta.push(`rule ${r.action.rule}`);
    if (r.expires_at) meta.push(isApproval ? `denied by itself at ${fmtClock(r.expires_at)} unless decided` : `closes at ${fmtClock(r.expires_at)} unless answered`);

    const li = el('li.request', { dataset: { requestId: r.id, kind: r.kind } },
      el('div.req-head',
        el(`span.req-kind.${isApproval ? 'approval' : 'help'}`, {}, isApproval ? 'Approve?' : 'Question'),
        r.asked_at ? el('span.hint', { title: new Date(r.asked_at).toString() }, fmtClock(r.asked_at)) : null),
      el('div.req-text', {}, text || ''),
      meta.length ? el('div.hint.req-meta', {}, meta.join(' · ')) : null);

    if (r.screenshot) {
      const src = url(`/requests/${encodeURIComponent(r.id)}/screenshot`);
      li.append(el('a.req-shot', { href: src, target: '_blank', rel: 'noopener noreferrer', title: 'The screen when it asked (opens full size)' },
        el('img', { src, alt: 'screenshot', loading: 'lazy' })));
    }

    const form = el('div.req-actions');
    if (isApproval) {
      const reason = el('input', { type: 'text', placeholder: 'Reason (optional)', maxlength: '500', dataset: { field: 'reason' }, 'aria-label': 'Reason' });
      const approve = el('button.primary', { type: 'button', dataset: { act: 'approve' } }, 'Approve');
      const deny = el('button.danger', { type: 'button', dataset: { act: 'deny' } }, 'Deny');
      approve.addEventListener('click', () => act('approve', { reason: reason.value.trim() }, approve));
      deny.addEventListener('click', () => act('deny', { reason: reason.value.trim() }, deny));
      buttons.push(approve, deny);
      form.append(reason, el('div.req-buttons', {}, approve, deny));
    } else if (r.choices && r.choices.length) {
      const row = el('div.req-buttons.choices');
      for (const c of r.choices) {
        const b = el('button', { type: 'button', dataset: { choice: c } }, c);
        b.addEventListener('click', () => act('answer', { choice: c }, b));
        buttons.push(b);
        row.append(b);
      }
      form.append(row);
    } else {
      const answer = el('input', { type: 'text', placeholder: 'Your answer', maxlength: '2000', dataset: { field: 'answer' }, 'aria-label': 'Answer' });
      const send = el('button.primary', { type: 'button', dataset: { act: 'answer' } }, 'Answer');
      const go = () => {
        const t = answer.value.trim();
        if (!t) { err.textContent = 'Type an answer first.'; answer.focus(); return; }
        act('answer', { answer: t }, send);
      };
      send.addEventListener('click', go);
      answer.addEventListener('keydown', (ev) => { if (ev.key === 'Enter') { ev.preventDefault(); go(); } });
      buttons.push(send);
      form.append(el('div.req-buttons', {}, answer, send));
    }
    li.append(form, el('div.hint.req-viewonly', {}, 'A view-only link cannot answer.'), err);
    return li;
  }

  // ---- title, notifications ----

  function setTitle(t) {
    titleBase = t;
    const n = items.size;
    document.title = n ? `(${n}) ${t}` : t;
  }

  const canNotify = () => typeof Notification !== 'undefined';

  function showNotifyLink() {
    ui.notify.hidden = !canNotify() || Notification.permission !== 'default';
  }

  function notify(fresh) {
    if (!canNotify() || Notification.permission !== 'granted') return;
    const name = titleBase.replace(/ — bureau console$/, '');
    for (const r of fresh.slice(0, 3)) {
      const approval = r.kind === 'approval';
      try {
        const n = new Notification(approval ? `${name}: approve?` : `${name}: the agent asks`, {
          body: (approval && r.action && r.action.summary) || r.question || '',
          tag: `bureau-${r.id}`,
        });
        n.onclick = () => { window.focus(); setPanel(true); n.close(); };
      } catch (e) { /* e.g. a browser that wants a service worker for notifications */ }
    }
  }

  ui.notify.addEventListener('click', (ev) => {
    ev.preventDefault();
    if (!canNotify()) return;
    Promise.resolve(Notification.requestPermission()).then(showNotifyLink, showNotifyLink);
  });

  // ---- panel and buttons ----

  function setPanel(open) {
    ui.panel.hidden = !open;
    ui.toggle.setAttribute('aria-expanded', String(open));
    ui.toggle.classList.toggle('active', open);
    document.body.classList.toggle('requests-open', open);
    if (open) showNotifyLink();
  }

  ui.toggle.addEventListener('click', () => {
    setPanel(ui.panel.hidden);
    if (ui.panel.hidden) focusScreen();
  });
  ui.close.addEventListener('click', () => { setPanel(false); focusScreen(); });

  function showError(msg) {
    ui.error.textContent = msg;
    ui.error.title = msg;
    clearTimeout(errTimer);
    errTimer = setTimeout(() => { ui.error.textContent = ''; ui.error.title = ''; }, 8000);
  }

  async function control(path, btn) {
    btn.disabled = true;
    ui.error.textContent = '';
    try {
      const body = await call('POST', `/control/${path}`, {});
      // The answer is the control: show it before the next poll.
      if (last && body && body.holder) show({ ...last, control: body, you: { ...(last.you || {}), holds_input: path === 'take' } });
      if (path === 'take') focusScreen();
    } catch (e) {
      showError(`${path === 'take' ? 'Take over' : 'Hand back'}: ${describe(e)}`);
    } finally {
      btn.disabled = false;
      refresh();
    }
  }
  ui.take.addEventListener('click', () => control('take', ui.take));
  ui.handBack.addEventListener('click', () => control('release', ui.handBack));

  const pub = {
    state: null,
    refresh,
    // The page's title without the count ("agent-1 — bureau console").
    setTitle,
    setViewOnly(v) { viewOnly = !!v; document.body.classList.toggle('people-view-only', viewOnly); if (last) show(last); },
    stop,
  };
  window.bureauPeople = pub;
  if (desktopID && token) refresh();
  else ui.bar.hidden = true;
  return pub;
}
