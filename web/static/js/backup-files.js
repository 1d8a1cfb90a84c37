// The files in a backup, read without restoring it (docs/backups.md, "Files
// in a backup"): a browser of the backup's /home in a dialog — folders to
// walk, files and folders (as a tar) to download, and either put back into
// a running desktop of the caller's.
import { api, post, seg, describe } from './api.js';
import { sortedDesktops } from './store.js';
import { h, icon, clear, toast, modal, busy, fmtBytes, fmtTime, timeEl } from './ui.js';

const ROOT = '/home';

const TYPE_ICON = { dir: 'folder', file: 'file', symlink: 'link' };
const TYPE_LABEL = { dir: 'folder', file: 'file', symlink: 'symlink', other: 'other' };

const parentOf = (p) => (p === ROOT ? ROOT : p.replace(/\/[^/]+$/, '') || ROOT);
const baseOf = (p) => p.split('/').pop() || p;

// Downloads path of backup b (a file's bytes, a folder as a tar) with the
// caller's credentials and hands it to the browser as a file.
async function download(b, entry, btn) {
  try {
    const res = await busy(btn, () => api('GET', `/backups/${seg(b.id)}/files/content?path=${encodeURIComponent(entry.path)}`, undefined, { raw: true }));
    const cd = res.headers.get('Content-Disposition') || '';
    const name = cd.match(/filename="?([^";]+)"?/)?.[1] || `${baseOf(entry.path)}${entry.type === 'dir' ? '.tar' : ''}`;
    const blob = await res.blob();
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: name, hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 30000);
    toast(`Downloaded ${name} (${fmtBytes(blob.size)}) from the backup.`, 'success');
  } catch (e) {
    toast(`Could not download ${entry.path}: ${describe(e)}`, 'error');
  }
}

/** Opens the browser of backup b's files (a complete backup). */
export function backupFilesDialog(b) {
  return modal((close) => {
    let path = ROOT;
    let seq = 0; // the newest load; older answers are dropped
    const crumbs = h('nav.crumbs.bf-crumbs', { 'aria-label': 'Path in the backup' });
    const refreshBtn = h('button.btn.btn-sm', { type: 'button', title: 'Read the folder again', onclick: () => load(path) }, icon('refresh', 14));
    const folderDl = h('button.btn.btn-sm.bf-folder-download', { type: 'button', title: 'Download this folder as a tar' }, icon('download', 14), h('span', 'Download (.tar)'));
    const folderRestore = h('button.btn.btn-sm.bf-folder-restore', { type: 'button', title: 'Put this folder back into a running desktop' }, icon('undo', 14), h('span', 'Restore into…'));
    const listing = h('div.bf-listing', h('div.loading', h('span.spinner'), 'Opening the backup…'));
    const restoreBox = h('div.bf-restore-box');
    let current = null; // the folder shown: its listing

    function renderCrumbs(p) {
      const parts = p.split('/').filter(Boolean); // ['home', 'agent', …]
      const items = [];
      parts.forEach((part, i) => {
        const to = `/${parts.slice(0, i + 1).join('/')}`;
        items.push(h('span.crumb-sep', '/'));
        items.push(i === parts.length - 1
          ? h('strong', { 'aria-current': 'location' }, part)
          : h('a', { href: '#', dataset: { path: to }, onclick: (e) => { e.preventDefault(); load(to); } }, part));
      });
      clear(crumbs, items);
    }

    async function load(p) {
      const mine = ++seq;
      renderCrumbs(p);
      folderDl.disabled = true;
      folderRestore.disabled = true;
      if (current) listing.classList.add('is-loading');
      else clear(listing, h('div.loading', h('span.spinner'), `Opening the backup and reading ${p}…`));
      try {
        const st = await api('GET', `/backups/${seg(b.id)}/files?path=${encodeURIComponent(p)}`);
        if (mine !== seq) return;
        if (st.type !== 'dir') { // a link to a file: offer it alone
          current = null;
          path = parentOf(st.path || p);
          renderCrumbs(st.path || p);
          clear(listing, table([row(st)]));
          return;
        }
        current = st;
        path = st.path || p;
        renderCrumbs(path);
        folderDl.disabled = false;
        folderRestore.disabled = false;
        render();
      } catch (e) {
        if (mine !== seq) return;
        current = null;
        clear(listing, h('div.empty.empty-error.empty-sm.bf-error', { role: 'alert' },
          h('p', `Could not read ${p}: ${describe(e)}`),
          h('button.btn.btn-sm', { type: 'button', onclick: () => load(p) }, icon('refresh', 14), 'Try again'),
          p !== ROOT ? h('button.btn.btn-sm', { type: 'button', onclick: () => load(ROOT) }, `Back to ${ROOT}`) : null));
      } finally {
        if (mine === seq) listing.classList.remove('is-loading');
      }
    }

    function row(en) {
      const isDir = en.type === 'dir';
      const readable = isDir || en.type === 'file'; // symlinks and devices: ask for the target
      const dl = readable ? h('button.btn.btn-sm.bf-download', {
        type: 'button', title: isDir ? `Download ${en.name || baseOf(en.path)} as a tar` : `Download ${en.name || baseOf(en.path)}`, 'aria-label': 'Download',
        onclick: (e) => { e.stopPropagation(); download(b, en, dl); },
      }, icon('download', 14)) : null;
      const rs = readable ? h('button.btn.btn-sm.bf-restore', {
        type: 'button', title: 'Put it back into a running desktop',
        onclick: (e) => { e.stopPropagation(); restoreForm(en); },
      }, icon('undo', 14), h('span', 'Restore into…')) : null;
      return h(`tr.bf-row${isDir ? '.clickable' : ''}`, {
        dataset: { name: en.name || baseOf(en.path), type: en.type, path: en.path },
        onclick: isDir ? () => load(en.path) : null,
        title: isDir ? `Open ${en.path}` : null,
      },
      h('td.bf-name', h('span.file-name', icon(TYPE_ICON[en.type] || 'file', 16),
        isDir ? h('a', { href: '#', onclick: (e) => { e.preventDefault(); e.stopPropagation(); load(en.path); } }, en.name) : h('span', en.name || baseOf(en.path)),
        en.type === 'symlink' && en.link_target ? h('span.muted.small.bf-link', `→ ${en.link_target}`) : null)),
      h('td.nowrap', h(`span.tag.bf-type.bf-type-${en.type}`, TYPE_LABEL[en.type] || en.type)),
      h('td.nowrap.num.bf-size', isDir ? '—' : fmtBytes(en.size)),
      h('td.nowrap.bf-modified', en.modified ? timeEl(en.modified) : '—'),
      h('td.row-actions', dl, rs));
    }

    function table(rows) {
      return h('div.table-wrap', h('table.bf-table',
        h('thead', h('tr', ['Name', 'Type', 'Size', 'Modified', ''].map((x) => h('th', x)))),
        h('tbody', rows)));
    }

    function render() {
      const st = current;
      const rows = [];
      if (st.path !== ROOT) {
        rows.push(h('tr.clickable.bf-up', { onclick: () => load(parentOf(st.path)), title: `Up to ${parentOf(st.path)}` },
          h('td', { colSpan: 5 }, h('span.file-name', icon('back', 16), '..'))));
      }
      const entries = st.entries || [];
      entries.forEach((en) => rows.push(row(en)));
      clear(listing, table(rows),
        entries.length ? null : h('div.empty.empty-sm.bf-empty', h('p', 'This folder is empty.')),
        st.truncated ? h('p.muted.small.bf-truncated', `Only the first ${entries.length} entries by name are listed.`) : null);
    }

    // The form that puts entry back into a desktop: which one, where, and
    // whether to write over what is there.
    function restoreForm(en) {
      const desks = sortedDesktops();
      const own = desks.find((d) => d.id === b.desktop_id);
      const pick = (own && own.state === 'running' ? own : desks.find((d) => d.state === 'running')) || own || desks[0];
      const select = h('select#bf-desktop', { required: true },
        desks.length ? desks.map((d) => h('option', { value: d.id, selected: d === pick },
          `${d.name}${d.id === b.desktop_id ? ' (backed up)' : ''}${d.state === 'running' ? '' : ` — ${d.state}`}`))
          : h('option', { value: '' }, 'No desktops'));
      const to = h('input#bf-to', { type: 'text', autocomplete: 'off', spellcheck: false, value: en.path, 'aria-describedby': 'bf-to-hint' });
      const overwrite = h('input#bf-overwrite', { type: 'checkbox' });
      const err = h('div.form-error.bf-restore-error', { role: 'alert', hidden: true });
      const done = h('div.bk-note.bk-note-ok.bf-restore-done', { role: 'status', hidden: true });
      const submit = h('button.btn.btn-primary.bf-restore-submit', { type: 'submit' }, icon('undo', 14), 'Restore');
      const cancel = h('button.btn', { type: 'button', onclick: () => clear(restoreBox) }, 'Close');
      const isDir = en.type === 'dir';
      const form = h('form.form.bf-restore-form', {
        novalidate: true,
        onsubmit: async (e) => {
          e.preventDefault();
          err.hidden = true;
          done.hidden = true;
          to.removeAttribute('aria-invalid');
          const where = to.value.trim() || en.path;
          if (!select.value) {
            err.hidden = false;
            err.textContent = 'There is no desktop to restore into.';
            return;
          }
          try {
            const r = await busy(submit, () => post(`/backups/${seg(b.id)}/files/restore`,
              { path: en.path, desktop: select.value, to: where, overwrite: overwrite.checked }));
            const name = desks.find((d) => d.id === (r?.desktop_id || select.value))?.name || select.value;
            const what = `${r?.files ?? 0} ${r?.files === 1 ? 'file' : 'files'} (${fmtBytes(r?.bytes ?? 0)})`;
            clear(done, icon('check', 14), h('span', h('strong', 'Restored: '), `${what} into ${name} at `, h('code', r?.to || where), '.'));
            done.hidden = false;
            toast(`Restored ${en.path} into ${name} at ${r?.to || where}.`, 'success');
          } catch (ex) {
            err.hidden = false;
            err.textContent = ex.code === 'exists'
              ? `${describe(ex)} — tick “Write over what is there” to replace it, or give another path.`
              : describe(ex);
            if (ex.code === 'invalid_path' || ex.code === 'exists') { to.setAttribute('aria-invalid', 'true'); to.focus(); }
          }
        },
      },
      h('h3', 'Restore ', h('code', en.path), isDir ? ' (a folder)' : ''),
      h('div.bf-restore-grid',
        h('div.field', h('label', { for: 'bf-desktop' }, 'Into desktop'), select,
          h('small.hint', 'It must be running; the files are written as its user.')),
        h('div.field', h('label', { for: 'bf-to' }, 'At'), to,
          h('small.hint#bf-to-hint', 'An absolute path under /home; missing folders are made.'))),
      h('label.check.check-danger.bf-overwrite', overwrite,
        h('span', h('strong', 'Write over what is there'),
          h('small', isDir ? 'Files of the same name are replaced; nothing else in the folder is removed.' : 'Without it, a file already at that path is left alone and nothing is written.'))),
      err, done,
      h('div.actions', submit, cancel));
      clear(restoreBox, form);
      form.scrollIntoView?.({ block: 'nearest' });
      select.focus();
    }

    folderDl.addEventListener('click', () => current && download(b, current, folderDl));
    folderRestore.addEventListener('click', () => current && restoreForm(current));

    const body = h('div.bf',
      h('p.muted.small.bf-about', `The data disk (/home) of ${b.desktop_name || 'the desktop'} as backed up ${fmtTime(b.started_at)}. Reading it restores nothing.`),
      h('div.bf-bar', crumbs, h('div.bf-bar-actions', folderDl, folderRestore, refreshBtn)),
      listing, restoreBox);
    load(ROOT);
    return {
      title: `Files in ${b.desktop_name || 'a desktop'}’s backup`,
      body,
      actions: [h('button.btn', { type: 'button', onclick: () => close() }, 'Close')],
      onOpen: (dlg) => dlg.classList.add('bf-dialog'),
    };
  }, { wide: true });
}
