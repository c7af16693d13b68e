// The catalog view's script: list filter, arrow-key navigation, forwards clicks to the extension.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();
  const filter = document.getElementById('filter');
  const items = () => Array.from(document.querySelectorAll('nav .item')).filter((b) => !b.hidden);

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
      document.querySelectorAll('nav .item').forEach((b) => {
        b.hidden = q !== '' && !(b.textContent || '').toLowerCase().includes(q);
      });
      document.querySelectorAll('nav h4').forEach((h) => {
        let n = h.nextElementSibling, any = false;
        while (n && n.tagName !== 'H4') { if (!n.hidden) any = true; n = n.nextElementSibling; }
        h.hidden = !any;
      });
    });
  }

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (!m || m.type !== 'entry') return;
    const box = document.getElementById('entry');
    if (box) { box.innerHTML = m.html; box.scrollTop = 0; }
    document.querySelectorAll('nav .item').forEach((b) => {
      const on = b.dataset.id === m.id;
      b.setAttribute('aria-current', on ? 'true' : 'false');
      if (on) b.scrollIntoView({ block: 'nearest' });
    });
  });
})();
