// The "New desktop" dialog.
import { get, post, describe } from './api.js';
import { upsert } from './store.js';
import { h, icon, modal, clear, fmtMiB, fmtBytes } from './ui.js';
import { statePill } from './desktop.js';

export const PRESETS = [
  { id: 'small', label: 'Small', vcpus: 2, memory_mib: 4096, data_disk_gib: 20 },
  { id: 'medium', label: 'Medium', vcpus: 4, memory_mib: 8192, data_disk_gib: 40 },
  { id: 'large', label: 'Large', vcpus: 4, memory_mib: 16384, data_disk_gib: 80 },
];

const NAME_RE = /^[a-z0-9-]{1,63}$/;

let imagesCache = null;
async function loadImages() {
  if (!imagesCache) {
    imagesCache = get('/images').then((b) => (Array.isArray(b) ? b : b?.images || [])).catch((e) => { imagesCache = null; throw e; });
  }
  return imagesCache;
}

function defaultImage(images) {
  return (images.find((i) => i.name === 'desktop') || images.find((i) => /desktop/.test(i.name)) || images[0])?.name || '';
}

export function openCreateDialog() {
  return modal((close) => {
    const nameInput = h('input#create-name', {
      type: 'text', required: true, autocomplete: 'off', spellcheck: false, maxlength: 63,
      placeholder: 'e.g. agent-1', pattern: '[a-z0-9\\-]{1,63}', 'aria-describedby': 'create-name-hint',
    });
    const nameHint = h('small.hint#create-name-hint', 'Lowercase letters, digits and “-”, up to 63 characters.');
    const imageSelect = h('select#create-image', { disabled: true }, h('option', { value: '' }, 'Loading images…'));
    const imageHint = h('small.hint');
    const presetInputs = PRESETS.map((p, i) => h('input', { type: 'radio', name: 'preset', value: p.id, checked: i === 0 }));
    const presets = h('div.presets', PRESETS.map((p, i) => h('label.preset',
      presetInputs[i],
      h('span.preset-body',
        h('span.preset-name', p.label),
        h('span.preset-spec', `${p.vcpus} vCPU · ${fmtMiB(p.memory_mib)} · ${p.data_disk_gib} GiB disk`)))));
    const errorBox = h('div.form-error', { role: 'alert', hidden: true });
    const submit = h('button.btn.btn-primary', { type: 'submit', form: 'create-form' }, icon('plus'), 'Create desktop');
    const cancel = h('button.btn', { type: 'button', onclick: () => close(null) }, 'Cancel');
    const actions = h('div.actions', cancel, submit);

    const fieldOf = { name: nameInput, image: imageSelect };
    const showError = (msg, field) => {
      errorBox.hidden = false;
      errorBox.textContent = msg;
      Object.values(fieldOf).forEach((el) => el.removeAttribute('aria-invalid'));
      const el = fieldOf[field];
      if (el) { el.setAttribute('aria-invalid', 'true'); el.focus(); }
    };

    loadImages().then((images) => {
      if (!images.length) {
        clear(imageSelect, h('option', { value: '' }, 'Server default'));
        imageHint.textContent = 'No images are registered; the server default is used.';
      } else {
        const def = defaultImage(images);
        clear(imageSelect, images.map((im) => h('option', { value: im.name, selected: im.name === def },
          im.name + (im.size_bytes ? `  (${fmtBytes(im.size_bytes)})` : ''))));
      }
      imageSelect.disabled = false;
    }).catch((e) => {
      clear(imageSelect, h('option', { value: '' }, 'Server default'));
      imageSelect.disabled = false;
      imageHint.textContent = `Could not list images: ${describe(e)}`;
    });

    const form = h('form#create-form.form', {
      novalidate: true,
      onsubmit: async (e) => {
        e.preventDefault();
        errorBox.hidden = true;
        const name = nameInput.value.trim();
        if (!NAME_RE.test(name)) {
          showError(name ? `“${name}” is not a valid name: use lowercase letters, digits and “-” (1–63).` : 'Give the desktop a name.', 'name');
          return;
        }
        const p = PRESETS.find((x) => x.id === presetInputs.find((r) => r.checked)?.value) || PRESETS[0];
        const body = { name, vcpus: p.vcpus, memory_mib: p.memory_mib, data_disk_gib: p.data_disk_gib };
        if (imageSelect.value) body.image = imageSelect.value;
        submit.disabled = true;
        submit.classList.add('is-busy');
        try {
          const d = await post('/desktops', body);
          upsert(d);
          showCreated(d);
        } catch (err) {
          showError(describe(err), err.field);
        } finally {
          submit.disabled = false;
          submit.classList.remove('is-busy');
        }
      },
    },
    h('div.field', h('label', { for: 'create-name' }, 'Name'), nameInput, nameHint),
    h('div.field', h('label', { for: 'create-image' }, 'Image'), imageSelect, imageHint),
    h('fieldset.field', h('legend', 'Size'), presets),
    errorBox);

    const bodyBox = h('div', form);

    function showCreated(d) {
      clear(bodyBox,
        h('div.created',
          h('div.created-head', h('strong', d.name), statePill(d.state, d)),
          h('p', 'The server accepted the request (202). The desktop is being created and will reach ',
            h('em', 'running'), ' on its own; under software emulation this takes a few minutes.'),
          h('dl.kv',
            h('dt', 'ID'), h('dd', h('code', d.id)),
            h('dt', 'Image'), h('dd', d.image || '—'),
            h('dt', 'Size'), h('dd', `${d.vcpus} vCPU · ${fmtMiB(d.memory_mib)} · ${d.data_disk_gib} GiB disk`),
            h('dt', 'Accelerator'), h('dd', d.accelerator || '—'))));
      clear(actions,
        h('button.btn', { type: 'button', onclick: () => close(d) }, 'Close'),
        h('a.btn.btn-primary', { href: `#/desktops/${encodeURIComponent(d.id)}`, onclick: () => close(d) }, 'Open details'));
    }

    return { title: 'New desktop', body: bodyBox, actions, onOpen: () => nameInput.focus() };
  });
}
