// Credential forms: shows only the fieldset of the chosen authentication
// type and adds rows of custom headers. Without this script every fieldset
// stays visible, the server reads only the chosen type's fields, and the
// form offers three header rows and a "Fill in from this source" button.
(function () {
  if (window.toolgateCredentials) return;
  window.toolgateCredentials = true;

  function sync(form) {
    var type = form.querySelector('[name=type]');
    if (!type) return;
    form.querySelectorAll('fieldset.typed').forEach(function (fs) {
      fs.hidden = fs.dataset.type !== type.value;
    });
    form.querySelectorAll('.no-js-only').forEach(function (el) { el.hidden = true; });
    form.querySelectorAll('.js-only').forEach(function (el) { el.hidden = false; });
  }

  function addRow(form) {
    var rows = form.querySelector('.header-rows');
    var last = rows && rows.lastElementChild;
    if (!last || last.classList.contains('head')) return;
    var copy = last.cloneNode(true);
    var n = rows.querySelectorAll('.header-row:not(.head)').length;
    copy.querySelectorAll('input').forEach(function (input) {
      input.value = '';
      input.readOnly = false;
      input.id = input.id.replace(/-\d+$/, '-' + n);
      input.setAttribute('aria-label', input.getAttribute('aria-label').replace(/\d+$/, String(n + 1)));
    });
    rows.appendChild(copy);
    copy.querySelector('input').focus();
  }

  function init(root) {
    root.querySelectorAll('form.credential-form').forEach(function (form) {
      if (form.dataset.bound) return;
      form.dataset.bound = '1';
      form.addEventListener('change', function (e) {
        if (e.target.name === 'type') sync(form);
      });
      form.addEventListener('click', function (e) {
        if (e.target.closest('[data-add-row]')) {
          e.preventDefault();
          addRow(form);
        }
      });
      sync(form);
    });
  }

  if (document.readyState === 'loading') {
    document.addEventListener('DOMContentLoaded', function () { init(document); });
  } else {
    init(document);
  }
  document.addEventListener('htmx:afterSettle', function () { init(document); });
})();
