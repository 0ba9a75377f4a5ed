// tablequeue admin UI: live refresh. Every few seconds the page fetches its own URL again and
// swaps in the parts marked data-live (matched by id) that changed, so lists, counts, workers
// and a message's state follow the database without a reload. Nothing with a form in it is
// marked: what a person types is never replaced. Ticked boxes (input[data-select]) stay ticked
// when their row is still there. The toggle in the header pauses it; the choice is kept in
// localStorage. body[data-live-ticks] counts the timer's ticks, paused or not.
"use strict";

(function () {
  var KEY = "tablequeue.live";
  var EVERY_MS = 3000;
  var toggle = document.getElementById("live-toggle");
  var ticks = 0;
  if (!toggle || !document.querySelector("[data-live]")) return;
  toggle.hidden = false;

  function paused() {
    try {
      return window.localStorage.getItem(KEY) === "paused";
    } catch (unavailable) {
      return toggle.getAttribute("aria-pressed") === "false";
    }
  }

  function show(isPaused, problem) {
    toggle.setAttribute("aria-pressed", String(!isPaused));
    toggle.textContent = isPaused ? "Live: paused" : problem ? "Live: no answer" : "Live";
    toggle.title = isPaused
      ? "Updates are paused: click to follow the database again"
      : problem || "This page follows the database every few seconds: click to pause";
  }

  toggle.addEventListener("click", function () {
    var pause = !paused();
    try {
      if (pause) window.localStorage.setItem(KEY, "paused");
      else window.localStorage.removeItem(KEY);
    } catch (unavailable) { /* kept on the button only */ }
    show(pause);
  });

  function typingIn(region) {
    var active = document.activeElement;
    return active && region.contains(active) && active.matches("input[type=text], input[type=search], textarea, select");
  }

  function swap(region, fresh) {
    if (fresh.outerHTML === region.outerHTML || typingIn(region)) return;
    var ticked = {};
    region.querySelectorAll("input[data-select]:checked").forEach(function (box) { ticked[box.value] = true; });
    var replacement = document.importNode(fresh, true);
    region.replaceWith(replacement);
    replacement.querySelectorAll("input[data-select]").forEach(function (box) { box.checked = !!ticked[box.value]; });
  }

  async function refresh() {
    var response = await fetch(window.location.href, { credentials: "same-origin", headers: { Accept: "text/html" } });
    if (!response.ok || response.redirected) throw new Error("the server answered HTTP " + response.status);
    var fresh = new DOMParser().parseFromString(await response.text(), "text/html");
    document.querySelectorAll("[data-live]").forEach(function (region) {
      var replacement = fresh.getElementById(region.id);
      if (replacement) swap(region, replacement);
    });
    document.dispatchEvent(new Event("tablequeue:refreshed"));
  }

  async function tick() {
    ticks += 1;
    document.body.dataset.liveTicks = String(ticks);
    if (!paused() && document.visibilityState === "visible") {
      try {
        await refresh();
        show(false);
      } catch (error) {
        show(false, "Last update failed: " + error.message);
      }
    }
    window.setTimeout(tick, EVERY_MS);
  }

  show(paused());
  window.setTimeout(tick, EVERY_MS);
})();
