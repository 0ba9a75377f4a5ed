// tablequeue admin UI: charts of the past from the JSON API's /charts routes, drawn by uPlot
// (vendored: uPlot.iife.min.js, see VENDORED.md). Every chart is kept in window.tqCharts by
// name, so a test (or a person in the console) can read back the data drawn. Colours come from
// CSS custom properties (ui.css, `--chart-*`); the charts are drawn again on the document's
// `tablequeue:themechange` event.
"use strict";

(function () {
  var FALLBACK_COLORS = ["#2c5fd4", "#16a34a", "#c9372c", "#d97706", "#7c3aed", "#0891b2",
                         "#db2777", "#4b5563", "#65a30d", "#9333ea"];
  var STEP_NAMES = { 60: "per minute", 300: "per 5 minutes", 3600: "per hour" };
  // Ticks of a count axis: whole numbers only (uPlot picks the first that leaves room).
  var COUNT_INCREMENTS = [];
  for (var power = 1; power <= 1e12; power *= 10) COUNT_INCREMENTS.push(power, 2 * power, 5 * power);
  window.tqCharts = {};
  var shown = null; // what was drawn last: drawn again when the theme changes

  function cssColor(name, fallback) {
    var value = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    return value || fallback;
  }

  function theme() {
    return {
      axis: cssColor("--chart-axis", "rgba(0,0,0,0.07)"),
      grid: cssColor("--chart-grid", "rgba(0,0,0,0.07)"),
      text: cssColor("--chart-text", "#000"),
      fill: cssColor("--chart-fill", "rgba(124,58,237,0.08)"),
      series: FALLBACK_COLORS.map(function (color, i) {
        return cssColor("--chart-series-" + (i + 1), color);
      }),
    };
  }

  function seconds(value) {
    if (value === null || value === undefined) return "–";
    if (value < 1) return Math.round(value * 1000) + " ms";
    if (value < 120) return value.toFixed(value < 10 ? 2 : 1) + " s";
    if (value < 7200) return (value / 60).toFixed(1) + " min";
    return (value / 3600).toFixed(1) + " h";
  }

  function count(value) {
    return value === null || value === undefined ? "–" : String(Math.round(value));
  }

  function compact(value) {
    // 950, 1.2k, 12k, 3.4M: one decimal below ten of a unit.
    var units = [[1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (var i = 0; i < units.length; i++) {
      var scaled = value / units[i][0];
      if (Math.abs(scaled) >= 1) {
        var text = Math.abs(scaled) < 10 ? scaled.toFixed(1).replace(/\.0$/, "") : String(Math.round(scaled));
        return text + units[i][1];
      }
    }
    return String(value);
  }

  function countTicks(u, ticks) {
    return ticks.map(function (v) { return v !== null && Number.isInteger(v) ? compact(v) : ""; });
  }

  function decadeTicks(u, ticks) {
    // A log axis labels its powers of ten only (1 ms, 10 ms, 100 ms, 1 s, 10 s, ...).
    return ticks.map(function (v) {
      if (v === null || v <= 0) return "";
      var exponent = Math.log10(v);
      if (Math.abs(exponent - Math.round(exponent)) > 1e-9) return "";
      if (v < 1) return Math.round(v * 1000) + " ms";
      if (v < 1000) return Math.round(v) + " s";
      if (v < 100000) return Math.round(v / 60) + " min";
      return Math.round(v / 3600) + " h";
    });
  }

  function draw(name, element, time, series, options) {
    if (!element) return;
    var old = window.tqCharts[name];
    if (old) old.destroy();
    var width = Math.max(element.clientWidth, 300);
    var colors = theme();
    var axis = { stroke: colors.text, grid: { stroke: colors.grid }, ticks: { stroke: colors.axis } };
    var yAxis = Object.assign({}, axis, options.log ? { values: decadeTicks, size: 60 } :
      { values: countTicks, incrs: COUNT_INCREMENTS, size: 60 });
    var opts = {
      width: width,
      height: 220,
      scales: { x: { time: true }, y: options.log ? { distr: 3 } : { range: function (u, min, max) {
        return [0, max > 0 ? max * 1.1 : 1];
      } } },
      axes: [axis, yAxis],
      series: [{}].concat(series.map(function (s, i) {
        return {
          label: s.label,
          stroke: colors.series[(s.color === undefined ? i : s.color) % colors.series.length],
          width: 1.5,
          fill: s.fill ? colors.fill : undefined,
          value: function (u, v) { return options.format(v); },
          points: { show: time.length <= 90 },
        };
      })),
      legend: { live: true },
    };
    var data = [time].concat(series.map(function (s) { return s.values; }));
    window.tqCharts[name] = new uPlot(opts, data, element);
  }

  function positive(values) {
    // A log scale cannot show 0: no latency measured is a gap, not a zero.
    return values.map(function (v) { return v === null || v <= 0 ? null : v; });
  }

  function render(root, charts) {
    var single = root.dataset.queue !== undefined;
    var s = single ? charts : charts.total;
    var per = STEP_NAMES[charts.stepSeconds] || "per " + charts.stepSeconds + " s";
    document.getElementById("throughput-title").textContent = "Messages " + per;
    draw("throughput", document.getElementById("chart-throughput"), charts.time, [
      { label: "enqueued", values: s.enqueued, color: 0 },
      { label: "processed", values: s.processed, color: 1 },
      { label: "failed", values: s.failed, color: 2 },
    ], { format: count });
    draw("latency", document.getElementById("chart-latency"), charts.time, [
      { label: "p50", values: positive(s.latencyP50), color: 1 },
      { label: "p90", values: positive(s.latencyP90), color: 3 },
      { label: "p99", values: positive(s.latencyP99), color: 2 },
    ], { format: seconds, log: true });
    draw("backlog", document.getElementById("chart-backlog"), charts.time, [
      { label: "backlog", values: s.backlog, color: 4, fill: true },
    ], { format: count });
    if (!single && charts.listed) {
      // One series per queue of every database, from /charts/queues.
      var listed = charts.listed;
      var title = document.getElementById("by-queue-title");
      if (title) title.textContent = "Processed by queue " + per;
      var label = function (q) { return q.database === "default" ? q.queue : q.database + "/" + q.queue; };
      var processed = listed.queues.map(function (q) { return { label: label(q), values: q.processed }; });
      var backlog = listed.queues.map(function (q) { return { label: label(q), values: q.backlog }; });
      draw("byQueue", document.getElementById("chart-by-queue"), listed.time, processed, { format: count });
      draw("backlogByQueue", document.getElementById("chart-backlog-by-queue"), listed.time, backlog,
           { format: count });
    }
  }

  function getJson(path) {
    return fetch(path, { headers: { accept: "application/json" } }).then(function (response) {
      return response.json().then(function (body) {
        if (!response.ok) throw new Error(body.error || response.statusText);
        return body;
      });
    });
  }

  function load(root) {
    var queue = root.dataset.queue;
    var path = (queue !== undefined ? "/queues/" + encodeURIComponent(queue) : "") + "/charts";
    var status = document.getElementById("charts-status");
    var query = "?window=" + encodeURIComponent(root.dataset.window);
    if (root.dataset.database) query += "&database=" + encodeURIComponent(root.dataset.database);
    var list = root.dataset.list && root.dataset.list.indexOf("queue=") >= 0 ? root.dataset.list : null;
    Promise.all([getJson(path + query), list ? getJson(list) : null])
      .then(function (both) {
        var charts = both[0];
        charts.listed = both[1] || { time: charts.time, queues: [] };
        return charts;
      })
      .then(function (charts) {
        shown = { root: root, charts: charts };
        render(root, charts);
        var measured = (queue !== undefined ? [charts] : charts.queues.concat(charts.listed.queues)).some(function (s) {
          return s.processed.some(Boolean) || s.failed.some(Boolean) ||
            s.backlog.some(function (v) { return v !== null; });
        });
        status.textContent = measured ? "" : "Nothing measured in this window yet: workers write " +
          "what they counted every 20 seconds.";
        status.hidden = measured;
        root.dataset.loaded = charts.now;
      })
      .catch(function (error) {
        status.hidden = false;
        status.textContent = "Cannot load the charts: " + error.message;
      });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var root = document.getElementById("charts");
    if (!root || typeof uPlot === "undefined") return;
    load(root);
    setInterval(function () { load(root); }, 30000);
    document.addEventListener("tablequeue:themechange", function () {
      if (shown) render(shown.root, shown.charts);
    });
    var resizing;
    window.addEventListener("resize", function () {
      clearTimeout(resizing);
      resizing = setTimeout(function () {
        Object.keys(window.tqCharts).forEach(function (name) {
          var chart = window.tqCharts[name];
          chart.setSize({ width: Math.max(chart.root.parentNode.clientWidth, 300), height: 220 });
        });
      }, 150);
    });
  });
})();
