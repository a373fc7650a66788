// Search as you type: the results section is fetched from the server (already escaped HTML of
// this origin) and swapped in; without JavaScript the form submits as usual.
(function () {
  "use strict";
  var form = document.getElementById("search-form");
  var box = document.getElementById("q");
  var results = document.getElementById("results");
  if (!form || !box || !results || !window.fetch) { return; }
  var DEFAULTS = { mode: "hybrid", k: "10" };  // app.py's FORM_DEFAULTS
  var timer = null;
  var asked = 0;
  function run() {
    var params = new URLSearchParams();
    // as the server's redirect does: no empty field, no default in the address
    new FormData(form).forEach(function (value, key) {
      if (value !== "" && DEFAULTS[key] !== value) { params.append(key, value); }
    });
    if (!box.value.trim()) { return; }
    params.set("partial", "1");
    var n = ++asked;
    fetch("/?" + params.toString(), { credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null || n !== asked) { return; }
        results.innerHTML = html;
        params.delete("partial");
        history.replaceState(null, "", "/?" + params.toString());
      })
      .catch(function () {});
  }
  box.addEventListener("input", function () {
    clearTimeout(timer);
    timer = setTimeout(run, 250);
  });
})();
