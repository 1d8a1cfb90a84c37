// Moving a desktop to another host (admins, when bureau has more than one):
// the "Move to host…" dialog and, while a move runs, "Cancel move".
import { post, del, seg, describe } from './api.js';
import { upsert } from './store.js';
import { h, icon, clear, toast, modal, busy } from './ui.js';
import { adminHosts, knownHosts, hostPill, hostIcon, mib } from './hosts.js';

// Which states a move may start from (mirrors internal/desktop/state.go, OpMigrate).
const MOVABLE = ['running', 'paused', 'napping', 'sleeping', 'hibernated', 'stopped'];

const moving = (d) => d.state === 'migrating' || d.operation === 'migrate';
const hostOf = (d) => d.host || 'local';

/**
 * Asks for the hosts once (admins only) and calls onReady when known, so the
 * page can show the move buttons. Errors leave them hidden.
 */
export function loadMoveHosts(onReady) {
  adminHosts().then(() => onReady(), () => {});
}

/** The "Move to host…" or "Cancel move" button; null for non-admins or a single host. */
export function moveActions(d) {
  const hosts = knownHosts();
  if (!d || !hosts || hosts.length < 2) return null;
  if (moving(d)) {
    const btn = h('button.btn.btn-danger-ghost.move-cancel', {
      type: 'button', title: 'Stop the move: the desktop stays where it was',
      onclick: () => cancelMove(d, btn),
    }, icon('x', 14), h('span', 'Cancel move'));
    return h('div.actions', btn);
  }
  const ok = MOVABLE.includes(d.state);
  return h('div.actions', h('button.btn.move-open', {
    type: 'button', disabled: !ok,
    title: ok ? `Move it, with its disks, from host ${hostOf(d)} to another` : `Cannot move while ${d.state}`,
    onclick: () => openMoveDialog(d),
  }, hostIcon(14), h('span', 'Move to host…')));
}

async function cancelMove(d, btn) {
  try {
    await busy(btn, () => del(`/desktops/${seg(d.id)}/migrate`));
    toast(`Cancelling the move of ${d.name}…`, 'success');
  } catch (e) {
    toast(`Could not cancel the move of ${d.name}: ${describe(e)}`, 'error');
  }
}

// Why a host cannot take the desktop ('' when it can).
function refusal(host) {
  if (host.state !== 'up') return host.state === 'unreachable' ? 'unreachable' : `${host.state || 'not checked'} yet`;
  if (host.draining) return 'draining';
  if (host.ready === false) return 'not ready';
  return '';
}

// How a desktop in d's state moves (docs/hosts.md, "Moving desktops").
function howItMoves(d) {
  if (d.state === 'running') return 'It moves live: it keeps running while its disks and memory are copied, then runs on the new host with a new address (one with snapshots is hibernated, moved cold and woken there).';
  if (d.state === 'stopped' || d.state === 'hibernated') return `It moves cold: its files are copied and it stays ${d.state} on the new host.`;
  return 'It is hibernated, then moved cold, and stays hibernated on the new host.';
}

/** Opens the dialog: pick a host, then POST …/migrate. */
export function openMoveDialog(d) {
  return modal((close) => {
    const list = h('div.host-options', h('div.loading', h('span.spinner'), 'Loading hosts…'));
    const err = h('div.form-error', { role: 'alert', hidden: true });
    const submit = h('button.btn.btn-primary', { type: 'submit', form: 'move-form', disabled: true }, 'Move');
    let picked = '';

    function pick(name) {
      picked = name;
      submit.disabled = !name;
      submit.textContent = name ? `Move to ${name}` : 'Move';
    }

    function fill(hosts) {
      const others = hosts.filter((x) => x.name !== hostOf(d));
      if (!others.length) { clear(list, h('p.muted', 'There is no other host to move it to.')); return; }
      const usable = others.filter((x) => !refusal(x));
      clear(list, others.map((x) => {
        const why = refusal(x);
        const radio = h('input', { type: 'radio', name: 'move-host', value: x.name, disabled: !!why, checked: usable.length === 1 && !why, onchange: () => pick(x.name) });
        return h(`label.host-option${why ? '.is-disabled' : ''}`, { dataset: { host: x.name } },
          radio,
          h('span.host-option-body',
            h('span.host-option-title', h('strong', x.name), hostPill(x.state),
              x.draining ? h('span.pill.pill-busy', h('span.dot'), 'draining') : null),
            h('span.host-option-meta',
              h('span', h('strong', mib(x.free_memory_mib)), ' memory free'),
              h('span', h('strong', mib(x.free_disk_mib)), ' disk free'),
              h('span', h('strong', String(x.desktops ?? 0)), x.desktops === 1 ? ' desktop' : ' desktops')),
            why ? h('span.host-option-why', `Cannot take desktops: ${why}`) : null));
      }));
      if (usable.length === 1) pick(usable[0].name);
    }

    adminHosts(true).then((hosts) => {
      if (!hosts) throw Object.assign(new Error('Moving desktops needs an admin token.'), { status: 403 });
      fill(hosts);
    }).catch((e) => clear(list, h('div.form-error', `Could not load the hosts: ${describe(e)}`)));

    const form = h('form#move-form.form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        if (!picked) return;
        err.hidden = true;
        try {
          const res = await busy(submit, () => post(`/desktops/${seg(d.id)}/migrate`, { host: picked }));
          if (res?.id) upsert(res);
          toast(`Moving ${d.name} to ${picked}…`, 'success');
          close(true);
        } catch (ex) {
          err.hidden = false;
          clear(err, h('strong', `Could not move it to ${picked}: `), describe(ex));
        }
      },
    },
    h('p', `${d.name} is on host `, h('strong', hostOf(d)), '. ', howItMoves(d)),
    h('fieldset.field', h('legend', 'Move to'), list),
    err);

    return {
      title: `Move ${d.name} to another host`,
      body: form,
      actions: [h('button.btn', { type: 'button', onclick: () => close(false) }, 'Cancel'), submit],
    };
  }, { wide: true });
}
