// Shows only the fieldset of the chosen source type. Without this script
// every fieldset stays visible and the server ignores the others.
(function () {
  function sync(form) {
    var type = form.querySelector('[name=type]');
    if (!type) return;
    form.querySelectorAll('fieldset.typed').forEach(function (fs) {
      fs.hidden = fs.dataset.type !== type.value;
    });
    form.querySelectorAll('.no-js-only').forEach(function (el) { el.hidden = true; });
    var transport = form.querySelector('[name=transport]');
    if (transport) {
      var stdio = transport.value === 'stdio';
      ['command', 'args', 'env', 'cwd'].forEach(function (n) {
        var f = form.querySelector('[name=' + n + ']');
        if (f) f.closest('.field').hidden = !stdio;
      });
      ['url', 'headers'].forEach(function (n) {
        var f = form.querySelector('[name=' + n + ']');
        if (f) f.closest('.field').hidden = stdio;
      });
    }
  }
  function init(root) {
    root.querySelectorAll('form[data-testid=source-form]').forEach(function (form) {
      if (form.dataset.bound) return;
      form.dataset.bound = '1';
      form.addEventListener('change', function (e) {
        if (e.target.name === 'type' || e.target.name === 'transport') sync(form);
      });
      sync(form);
    });
  }
  document.addEventListener('DOMContentLoaded', function () { init(document); });
  document.addEventListener('htmx:afterSettle', function (e) { init(e.target.ownerDocument || document); });
})();
