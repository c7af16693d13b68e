// The diagnosis view's only script: forwards clicks on [data-action] to the extension and
// receives the quick fixes once the extension has them. No remote content, no eval.
(function () {
  'use strict';
  const vscode = acquireVsCodeApi();

  document.addEventListener('click', (ev) => {
    const target = ev.target instanceof Element ? ev.target.closest('[data-action]') : null;
    if (!target || target.hasAttribute('disabled')) return;
    ev.preventDefault();
    const d = target.dataset;
    vscode.postMessage({ action: d.action, line: d.line, text: d.text, url: d.url, id: d.id, incident: d.incident, fix: d.fix });
    if (d.action === 'copy') {
      const old = target.textContent;
      target.textContent = 'Copied';
      setTimeout(() => { target.textContent = old; }, 1500);
    }
    if (d.action === 'fix') {
      target.textContent = 'Applying…';
      target.setAttribute('disabled', '');
    }
  });

  window.addEventListener('message', (ev) => {
    const m = ev.data;
    if (!m || typeof m !== 'object') return;
    if (m.type === 'fixes') {
      const box = document.getElementById('fixes-' + m.index);
      if (box) {
        const hadFocus = box.contains(document.activeElement);
        box.innerHTML = m.html;
        if (hadFocus) {
          const b = box.querySelector('button:not([disabled])');
          if (b) b.focus();
        }
      }
    }
  });
})();
