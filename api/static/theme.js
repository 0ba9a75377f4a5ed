// tablequeue admin UI: the colour theme. Loaded in <head> without defer, so the page is never
// painted in the wrong theme. The choice (light, dark or system) is kept in localStorage;
// "system" follows prefers-color-scheme, also when it changes while the page is open.
// Every change of the theme in effect dispatches "tablequeue:themechange" on document (the
// charts redraw with the new colours).
"use strict";

(function () {
  var KEY = "tablequeue.theme";
  var system = window.matchMedia("(prefers-color-scheme: dark)");

  function choice() {
    try {
      var stored = window.localStorage.getItem(KEY);
      return stored === "light" || stored === "dark" ? stored : "system";
    } catch (unavailable) {
      return "system";
    }
  }

  function remember(value) {
    try {
      if (value === "system") window.localStorage.removeItem(KEY);
      else window.localStorage.setItem(KEY, value);
    } catch (unavailable) { /* the choice lasts for this page only */ }
  }

  function apply() {
    var chosen = choice();
    var theme = chosen === "system" ? (system.matches ? "dark" : "light") : chosen;
    if (document.documentElement.dataset.theme === theme) return;
    document.documentElement.dataset.theme = theme;
    document.dispatchEvent(new Event("tablequeue:themechange"));
  }

  apply();
  system.addEventListener("change", apply);
  document.addEventListener("DOMContentLoaded", function () {
    var select = document.getElementById("theme-choice");
    if (!select) return;
    select.value = choice();
    select.addEventListener("change", function () {
      remember(select.value);
      apply();
    });
  });
})();
