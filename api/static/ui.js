// tablequeue admin UI: forms with data-action send JSON to the HTTP API with fetch.
//
//   data-action   API path; {field} is replaced by the field marked data-in="path"
//   data-method   POST, PUT, PATCH or DELETE
//   data-confirm  ask first
//   data-then     "reload", or "go:/ui/..." to navigate, after success
//   data-done     text shown after success; {a.0.b} takes a value from the JSON response
//   data-link     link shown with it, same placeholders (left out when one is missing)
//   data-once     keep the buttons disabled after success
//   data-selection  send the ticked rows' ids (input[data-select]) as "ids"; {count} in
//                 data-confirm is how many are ticked
// Fields: data-type="json" is parsed, "number" is a number, "bool" is true when checked (or
// for hidden inputs when value is "true"); empty fields are left out. Responses are shown
// with textContent only: nothing from the server or the user becomes markup.
"use strict";

(function () {
  function lookup(data, path) {
    return path.split(".").reduce(function (value, key) {
      return value === null || value === undefined ? undefined : value[key];
    }, data);
  }

  function fill(template, data) {
    var missing = false;
    var text = template.replace(/\{([A-Za-z0-9_.]+)\}/g, function (_, path) {
      var value = lookup(data, path);
      if (value === null || value === undefined) {
        missing = true;
        return "";
      }
      return String(value);
    });
    return missing ? null : text;
  }

  function show(form, text, isError, href) {
    var out = form.querySelector(".outcome");
    if (!out) {
      if (isError) window.alert(text);
      return;
    }
    out.textContent = text;
    out.className = "outcome " + (isError ? "bad" : "good");
    if (href) {
      var link = document.createElement("a");
      link.href = href;
      link.textContent = "Open";
      out.append(" ", link);
    }
  }

  function collect(form) {
    var body = {};
    var path = {};
    Array.prototype.forEach.call(form.elements, function (field) {
      if (!field.name || field.disabled) return;
      var type = field.dataset.type;
      var raw = field.value;
      var value;
      if (type === "bool") {
        value = field.type === "checkbox" ? field.checked : raw === "true";
        if (!value) return;
      } else {
        if (raw.trim() === "") return;
        if (type === "json") {
          try {
            value = JSON.parse(raw);
          } catch (error) {
            throw new Error(field.name + " is not valid JSON: " + error.message);
          }
        } else if (type === "number") {
          value = Number(raw);
          if (!Number.isFinite(value)) throw new Error(field.name + " must be a number");
        } else {
          value = raw.trim();
        }
      }
      if (field.dataset.in === "path") path[field.name] = value;
      else body[field.name] = value;
    });
    if (form.hasAttribute("data-selection")) {
      body.ids = ticked().map(function (box) { return Number(box.value); });
      if (!body.ids.length) throw new Error("Tick at least one message first.");
    }
    return { body: body, path: path };
  }

  function ticked() {
    return Array.prototype.slice.call(document.querySelectorAll("input[data-select]:checked"));
  }

  // The selection bar: how many rows are ticked, its buttons usable only then.
  function showSelection() {
    var bar = document.getElementById("selection");
    if (!bar) return;
    var count = ticked().length;
    var all = document.querySelectorAll("input[data-select]").length;
    bar.querySelector("#selected-count").textContent = count + " selected";
    bar.querySelectorAll("button").forEach(function (b) { b.disabled = count === 0; });
    var every = document.getElementById("select-all");
    if (every) {
      every.checked = all > 0 && count === all;
      every.indeterminate = count > 0 && count < all;
    }
  }

  document.addEventListener("change", function (event) {
    if (event.target.id === "select-all") {
      document.querySelectorAll("input[data-select]").forEach(function (box) { box.checked = event.target.checked; });
    }
    if (event.target.id === "select-all" || event.target.matches("input[data-select]")) showSelection();
  });
  document.addEventListener("tablequeue:refreshed", showSelection);
  document.addEventListener("DOMContentLoaded", showSelection);

  async function send(form) {
    var parts;
    try {
      parts = collect(form);
    } catch (error) {
      show(form, error.message, true);
      return;
    }
    var question = form.dataset.confirm && form.dataset.confirm.replace("{count}", String((parts.body.ids || []).length));
    if (question && !window.confirm(question)) return;
    var url = form.dataset.action.replace(/\{([A-Za-z]+)\}/g, function (_, name) {
      return encodeURIComponent(parts.path[name] || "");
    });
    var method = (form.dataset.method || "POST").toUpperCase();
    var options = { method: method, credentials: "same-origin", headers: { Accept: "application/json" } };
    if (method !== "DELETE" && method !== "GET") {
      options.headers["Content-Type"] = "application/json";
      options.body = JSON.stringify(parts.body);
    }
    var buttons = form.querySelectorAll("button");
    buttons.forEach(function (b) { b.disabled = true; });
    show(form, "Working…", false);
    var response, data = null;
    try {
      response = await fetch(url, options);
      var text = await response.text();
      if (text) {
        try { data = JSON.parse(text); } catch (ignored) { data = null; }
      }
    } catch (error) {
      buttons.forEach(function (b) { b.disabled = false; });
      show(form, "The server did not answer: " + error.message, true);
      return;
    }
    buttons.forEach(function (b) { b.disabled = false; });
    if (!response.ok) {
      var message = (data && (data.error || data.detail)) || "HTTP " + response.status;
      if (response.status === 401) message += " (sign in again)";
      show(form, String(message), true);
      return;
    }
    var then = form.dataset.then || "";
    if (then === "reload") {
      window.location.reload();
    } else if (then.indexOf("go:") === 0) {
      window.location.assign(then.slice(3));
    } else {
      var done = form.dataset.done ? fill(form.dataset.done, data || {}) : null;
      var link = form.dataset.link ? fill(form.dataset.link, data || {}) : null;
      show(form, done || "Done.", false, link);
      if (form.hasAttribute("data-once")) buttons.forEach(function (b) { b.disabled = true; });
    }
  }

  document.addEventListener("submit", function (event) {
    var form = event.target.closest("form[data-action]");
    if (!form) return;
    event.preventDefault();
    send(form);
  });
})();
