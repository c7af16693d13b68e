// The catalog view's script: shows the view the extension posts (the phase x family matrix, or an
// entry: its HTML comes rendered and escaped from the extension), filters the matrix, moves with
// the arrow keys, forwards clicks to the extension.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const root = document.getElementById('catalog');
  const matrix = document.getElementById('matrix');
  const entry = document.getElementById('entry');
  const filter = document.getElementById('filter');
  const back = document.getElementById('to-matrix');
  const items = () => Array.from(document.querySelectorAll('#matrix .item')).filter((b) => !b.hidden);

  /** Shows the matrix, or the entry of `id` (its HTML when it changes). */
  function show(view, id, html) {
    if (!root || !matrix || !entry) return;
    const was = root.dataset.id;
    root.dataset.view = view;
    if (view === 'entry') {
      if (html !== undefined) entry.innerHTML = html;
      root.dataset.id = id || '';
      matrix.hidden = true;
      entry.hidden = false;
      if (filter) filter.hidden = true;
      if (back) back.hidden = false;
      window.scrollTo(0, 0);
      const h = entry.querySelector('h1');
      if (h instanceof HTMLElement && html !== undefined) h.focus({ preventScroll: true });
    } else {
      entry.hidden = true;
      matrix.hidden = false;
      if (filter) filter.hidden = false;
      if (back) back.hidden = true;
      // back where the user left: the class they had open
      const cell = was ? Array.from(matrix.querySelectorAll('.item')).find((b) => b.dataset.id === was) : undefined;
      if (cell) {
        cell.scrollIntoView({ block: 'nearest', inline: 'nearest' });
        cell.focus({ preventScroll: true });
      }
    }
    document.querySelectorAll('#matrix .item').forEach((b) => {
      b.setAttribute('aria-current', view === 'entry' && b.dataset.id === id ? 'true' : 'false');
    });
  }

  document.addEventListener('click', (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest('[data-action]') : null;
    if (!target || target.hasAttribute('disabled')) return;
    ev.preventDefault();
    const d = target.dataset;
    vscode.postMessage({ action: d.action, text: d.text, url: d.url, id: d.id });
  });

  document.addEventListener('keydown', (ev) => {
    const el = document.activeElement;
    if (!(el instanceof HTMLElement)) return;
    if ((ev.key === 'ArrowDown' || ev.key === 'ArrowUp') && (el.classList.contains('item') || el === filter)) {
      const list = items();
      const i = list.indexOf(el);
      const next = ev.key === 'ArrowDown' ? list[i + 1] || list[0] : list[i - 1] || list[list.length - 1];
      if (next) { next.focus(); ev.preventDefault(); }
    }
  });

  if (filter) {
    filter.addEventListener('input', () => {
      const q = filter.value.toLowerCase();
      document.querySelectorAll('#matrix .item').forEach((b) => {
        b.hidden = q !== '' && !((b.textContent || '') + ' ' + (b.getAttribute('title') || '')).toLowerCase().includes(q);
      });
      document.querySelectorAll('#matrix td').forEach((td) => {
        td.classList.toggle('none', !td.querySelector('.item:not([hidden])'));
      });
    });
  }

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (!m) return;
    if (m.type === 'entry') show('entry', m.id, m.html);
    else if (m.type === 'matrix') show('matrix');
  });

  if (root) show(root.dataset.view === 'entry' ? 'entry' : 'matrix', root.dataset.id);
  vscode.postMessage({ action: 'ready', page: root ? root.dataset.page : undefined });
})();
