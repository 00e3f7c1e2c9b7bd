// svc dashboard enhancements. Every page works without this file; it only adds conveniences.
// Loaded as a file from this origin (the CSP allows no inline script).
(() => {
  // Buttons with data-copy="ELEMENT_ID" copy that element's text.
  document.addEventListener('click', (event) => {
    const button = event.target instanceof Element ? event.target.closest('[data-copy]') : null;
    if (!button) return;
    const source = document.getElementById(button.getAttribute('data-copy') || '');
    if (!source || !navigator.clipboard) return;
    navigator.clipboard.writeText(source.textContent.trim()).then(() => {
      const label = button.textContent;
      button.textContent = 'Copied';
      setTimeout(() => {
        button.textContent = label;
      }, 1500);
    });
  });

  // Forms with data-confirm="question" ask before submitting (revoke, disable).
  document.addEventListener('submit', (event) => {
    const form = event.target;
    if (!(form instanceof HTMLFormElement)) return;
    const question = form.getAttribute('data-confirm');
    if (question && !window.confirm(question)) event.preventDefault();
  });

  // Close the user menu with Escape, returning focus to its button.
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Escape') return;
    for (const menu of document.querySelectorAll('details.user-menu[open]')) {
      menu.removeAttribute('open');
      menu.querySelector('summary')?.focus();
    }
  });
})();
