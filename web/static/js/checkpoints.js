// The automatic checkpoint policy of a desktop, in its Steps tab: when bureau
// snapshots the desktop by itself just before a step, so reverting to before
// that step goes back exactly there.
import { api, get, seg, describe } from './api.js';
import { h, clear, toast, busy } from './ui.js';

const KINDS = [['computer', 'computer use'], ['exec', 'commands'], ['file_write', 'file writes'], ['file_delete', 'file deletes'], ['clipboard', 'clipboard writes']];

/** The policy in a few words. */
export function policyText(p) {
  if (!p || (!p.every_steps && !(p.before || []).length)) return 'off';
  const when = [];
  if (p.every_steps) when.push(`every ${p.every_steps} step${p.every_steps === 1 ? '' : 's'}`);
  if ((p.before || []).length) when.push(`before ${p.before.map((k) => (KINDS.find(([v]) => v === k) || [k, k])[1]).join(', ')}`);
  return `${when.join(' and ')}${p.memory ? ', with RAM' : ''}; newest ${p.keep} kept`;
}

/** A collapsed form that shows and sets desktop id's checkpoint policy. */
export function checkpointsBox(id, signal, canEdit = true) {
  const state = h('span.muted', '…');
  const every = h('input', { type: 'number', min: 0, max: 100000, step: 1, value: 0, 'aria-label': 'Every N steps (0: off)' });
  const keep = h('input', { type: 'number', min: 1, max: 50, step: 1, value: 5, 'aria-label': 'Automatic checkpoints kept' });
  const memory = h('input', { type: 'checkbox' });
  const kinds = KINDS.map(([v]) => h('input', { type: 'checkbox', value: v }));
  const save = h('button.btn.btn-sm.btn-primary', { type: 'submit', disabled: !canEdit }, 'Save');
  const show = (p) => {
    clear(state, policyText(p));
    every.value = p.every_steps; keep.value = p.keep; memory.checked = !!p.memory;
    kinds.forEach((k) => { k.checked = (p.before || []).includes(k.value); });
  };
  const form = h('form.steps-checkpoints-form', {
    onsubmit: async (ev) => {
      ev.preventDefault();
      const body = { every_steps: Number(every.value) || 0, before: kinds.filter((k) => k.checked).map((k) => k.value), memory: memory.checked, keep: Number(keep.value) || 5 };
      try {
        const p = await busy(save, () => api('PUT', `/desktops/${seg(id)}/checkpoints`, body, { signal }));
        show(p);
        toast(`Automatic checkpoints: ${policyText(p)}.`, 'success');
      } catch (e) {
        if (e.name !== 'AbortError') toast(`Could not set the checkpoint policy: ${describe(e)}`, 'error');
      }
    },
  },
  h('label', 'Every ', every, ' steps'),
  h('fieldset', h('legend', 'Always before'), KINDS.map(([v, label], i) => h('label', kinds[i], ` ${label}`))),
  h('label', memory, ' With RAM (running programs come back)'),
  h('label', 'Keep the newest ', keep),
  save);
  get(`/desktops/${seg(id)}/checkpoints`, { signal }).then(show, (e) => { if (e.name !== 'AbortError') clear(state, 'unavailable'); });
  return h('details.steps-checkpoints',
    h('summary', { title: 'Snapshots bureau takes by itself just before steps (auto-…), so reverting to before a step goes back exactly there; older ones are deleted, never your own snapshots' },
      'Automatic checkpoints: ', state),
    form);
}
