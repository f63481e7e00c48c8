// Rule editor: shows only the fields the chosen "Applies to", "Tools" and
// "Effect" use (elements with data-when="name=value"). Without this script
// every field stays visible and the server reads the ones the choices name.
(function () {
  if (window.toolgatePolicies) return;
  window.toolgatePolicies = true;

  function sync(form) {
    form.querySelectorAll('[data-when]').forEach(function (el) {
      var rule = el.dataset.when.split('=');
      var control = form.querySelector('[name="' + rule[0] + '"]');
      if (control) el.hidden = control.value !== rule[1];
    });
    form.querySelectorAll('.no-js-only').forEach(function (el) { el.hidden = true; });
  }

  function init(root) {
    root.querySelectorAll('form.policy-form').forEach(function (form) {
      if (form.dataset.bound) return;
      form.dataset.bound = '1';
      form.addEventListener('change', function (e) {
        if (e.target.tagName === 'SELECT') sync(form);
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
