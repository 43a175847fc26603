// The Overview's charts (doors/dashboard/overview.py), loaded by that page only.
// The page works without this file: its figures and its tables are rendered
// by the server. Here Chart.js (static/vendor/) draws a chart per table, and
// the charts, the tables and the figures are read again from overview.json
// every `data-refresh-s` seconds (or at once on an `agentws:refresh` event
// of the document), without reloading the page.
"use strict";
(() => {
  const root = document.getElementById("overview");
  const configNode = document.getElementById("overview-config");
  if (!root || !configNode || typeof window.Chart === "undefined") return;
  const Chart = window.Chart;
  const config = JSON.parse(configNode.textContent);
  // A chart's fixed keys, in their order, and their words (pairs in the JSON).
  for (const spec of config.charts) {
    spec.order = spec.names.map(([key]) => key);
    spec.names = new Map(spec.names);
  }
  const everyMs = Math.max(1, Number(root.dataset.refreshS) || config.refresh_s) * 1000;

  // Dark enough for 3:1 against the white card (WCAG 1.4.11, graphics).
  const PALETTE = ["#2952cc", "#b42318", "#18794e", "#a15c07", "#6b3fa0", "#0e7490", "#be185d", "#4b5563"];
  // What a key means keeps its colour in every chart (done green, denied red...).
  const FIXED = {
    ran: "#18794e", queued: "#a15c07", confirmed: "#2952cc", denied: "#b42318",
    p50: "#2952cc", p99: "#b42318", depth: "#2952cc", oldest_s: "#a15c07",
    input: "#2952cc", output: "#0e7490",
  };
  const reduceMotion = window.matchMedia("(prefers-reduced-motion: reduce)").matches;
  Chart.defaults.color = "#1d2330";
  Chart.defaults.font.family = 'system-ui, -apple-system, "Segoe UI", sans-serif';

  // As doors/dashboard/visible.py: characters that draw nothing or reorder what
  // follows are shown as escapes (a name is drawn on the canvas as it is).
  const HIDDEN = /[\0-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\xad\u034f\u061c\u115f\u1160\u3164\uffa0\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\ud800-\udfff\u{1d173}-\u{1d17a}\u{e0000}-\u{e007f}]/gu;
  const shown = (text) => String(text).replace(HIDDEN, (c) => {
    const point = c.codePointAt(0);
    return point <= 0xffff ? "\\u" + point.toString(16).padStart(4, "0") : "\\U" + point.toString(16).padStart(8, "0");
  });

  const two = (n) => String(n).padStart(2, "0");
  const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
  // As overview.step_label: UTC, with the day over 7 days.
  const stepLabel = (iso) => {
    const d = new Date(iso);
    const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}`;
    return config.range === "7d" ? `${DAYS[d.getUTCDay()]} ${time}` : time;
  };
  const whole = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });
  const tenths = new Intl.NumberFormat("en-US", { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  // As overview._cell and overview.format_total.
  const cell = (v) => (v === null || v === undefined ? "—" : Number.isInteger(v) ? whole.format(v) : tenths.format(v));
  const total = (v, how) => {
    if (v !== null && typeof v === "object") v = Object.values(v).reduce((a, b) => a + (b || 0), 0);
    if (v === null || v === undefined) return "—";
    if (how === "ms") return v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${whole.format(v)} ms`;
    return whole.format(v);
  };

  const keysOf = (spec, series) =>
    spec.order.concat(Object.keys(series).filter((k) => !spec.names.has(k)).sort());
  const webhooksOf = (data) => {
    const s = data.series || {};
    const names = new Set();
    for (const part of ["events_received", "events_done", "events_failed"]) {
      for (const name of Object.keys(s[part] || {})) names.add(name);
    }
    return [...names].sort();
  };

  function datasets(spec, data) {
    const series = (data.series || {})[spec.series] || {};
    const webhooks = webhooksOf(data);
    return keysOf(spec, series).map((key, i) => {
      const colour = spec.by_webhook
        ? PALETTE[webhooks.indexOf(key) % PALETTE.length]
        : (Object.hasOwn(FIXED, key) && FIXED[key]) || PALETTE[i % PALETTE.length];
      const set = {
        label: shown(spec.names.get(key) ?? key),
        data: series[key] || [],
        backgroundColor: colour,
        borderColor: colour,
      };
      if (spec.kind === "line") {
        // Lines told apart by more than their colour: every other one dashed.
        Object.assign(set, { borderWidth: 2, pointRadius: 2, spanGaps: false, borderDash: i % 2 ? [6, 3] : [] });
        set.yAxisID = spec.right.includes(key) ? "y2" : "y";
      } else {
        set.stack = "all";
      }
      return set;
    });
  }

  // As many time labels as fit: one per 90 px or so, six at most.
  const ticksFor = (width) => Math.max(2, Math.min(6, Math.floor(width / 90)));

  function optionsFor(spec, width) {
    const stacked = spec.kind === "bar";
    const scales = {
      x: {
        stacked,
        ticks: {
          maxRotation: 0,
          autoSkip: true,
          autoSkipPadding: 16,
          maxTicksLimit: ticksFor(width),
          callback(value) { return stepLabel(this.getLabelForValue(value)); },
        },
      },
      y: { stacked, beginAtZero: true, ticks: { precision: 0 }, title: { display: true, text: spec.unit } },
    };
    if (spec.right.length) {
      scales.y2 = {
        position: "right", beginAtZero: true, grid: { drawOnChartArea: false },
        title: { display: true, text: spec.right_unit },
      };
    }
    return {
      responsive: true,
      maintainAspectRatio: false,
      onResize: (chart, size) => { chart.options.scales.x.ticks.maxTicksLimit = ticksFor(size.width); },
      animation: reduceMotion ? false : { duration: 250 },
      interaction: { mode: "index", intersect: false },
      plugins: {
        legend: { position: "bottom", labels: { boxWidth: 12 } },
        tooltip: { callbacks: { title: (items) => (items.length ? `${stepLabel(items[0].label)} UTC` : "") } },
      },
      scales,
    };
  }

  // The table under a chart, as the server renders it: the steps that have something.
  function fillTable(spec, data) {
    const table = document.getElementById(`table-${spec.series}`);
    if (!table) return;
    const series = (data.series || {})[spec.series] || {};
    const keys = keysOf(spec, series);
    const head = document.createElement("tr");
    for (const text of ["Time (UTC)", ...keys.map((k) => shown(spec.names.get(k) ?? k))]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = text;
      head.append(th);
    }
    const body = document.createElement("tbody");
    (data.labels || []).forEach((iso, i) => {
      const values = keys.map((k) => (series[k] || [])[i]);
      if (values.every((v) => v === null || v === undefined || v === 0)) return;
      const row = document.createElement("tr");
      const th = document.createElement("th");
      th.scope = "row";
      const time = document.createElement("time");
      time.dateTime = iso;
      time.textContent = stepLabel(iso);
      th.append(time);
      row.append(th);
      for (const v of values) {
        const td = document.createElement("td");
        td.textContent = cell(v);
        row.append(td);
      }
      body.append(row);
    });
    if (!body.rows.length) {
      const row = body.insertRow();
      const td = row.insertCell();
      td.colSpan = keys.length + 1;
      td.textContent = "Nothing in this range.";
    }
    table.tHead.replaceChildren(head);
    table.tBodies[0].replaceWith(body);
  }

  // Whether a chart has a step with something (its table lists those steps).
  const hasSteps = (spec, data) => {
    const series = (data.series || {})[spec.series] || {};
    return Object.values(series).some((values) => (values || []).some((v) => v !== null && v !== undefined && v !== 0));
  };

  function draw(data) {
    // Every chart empty: the empty state says so, and no chart of empty axes is drawn.
    const empty = !config.charts.some((spec) => hasSteps(spec, data));
    const emptyState = document.getElementById("overview-empty");
    if (emptyState) emptyState.hidden = !empty;
    root.querySelector(".charts").hidden = empty;
    for (const spec of config.charts) {
      if (empty) {
        fillTable(spec, data);
        continue;
      }
      const canvas = document.getElementById(`canvas-${spec.series}`);
      if (!canvas) continue;
      const sets = datasets(spec, data);
      const chart = Chart.getChart(canvas);
      if (!chart) {
        canvas.parentElement.hidden = false;
        // Drawn: its table folds away (still there, under the chart).
        canvas.closest("figure").querySelector("details")?.removeAttribute("open");
        new Chart(canvas, { type: spec.kind, data: { labels: data.labels, datasets: sets }, options: optionsFor(spec, canvas.parentElement.clientWidth) });
      } else {
        const same = chart.data.datasets.length === sets.length &&
          chart.data.datasets.every((d, i) => d.label === sets[i].label);
        chart.data.labels = data.labels;
        // The same series: new values only, so what the legend hid stays hidden.
        if (same) sets.forEach((s, i) => { chart.data.datasets[i].data = s.data; });
        else chart.data.datasets = sets;
        chart.update(reduceMotion ? "none" : undefined);
      }
      fillTable(spec, data);
    }
    for (const node of root.querySelectorAll("[data-total]")) {
      node.textContent = total((data.totals || {})[node.dataset.total], node.dataset.format);
    }
    const asOf = new Date(data.to);
    status(`Figures as of `, data.to, `${two(asOf.getUTCHours())}:${two(asOf.getUTCMinutes())}:${two(asOf.getUTCSeconds())}`);
    relativeTimes();
  }

  function status(text, iso, when) {
    const node = document.getElementById("overview-status");
    if (!node) return;
    if (!iso) {
      node.textContent = text;
      return;
    }
    const time = document.createElement("time");
    time.dateTime = iso;
    time.textContent = when;
    node.replaceChildren(text, time, ".");
  }

  // As the `ago` filter: "13 min ago" (the absolute time stays in the title).
  function relativeTimes() {
    const now = Date.now();
    for (const node of document.querySelectorAll("time[data-ago]")) {
      const seconds = Math.floor((now - Date.parse(node.dateTime)) / 1000);
      const unit = [["d", 86400], ["h", 3600], ["min", 60]].find(([, size]) => seconds >= size);
      node.textContent = unit ? `${Math.floor(seconds / unit[1])} ${unit[0]} ago` : `${Math.max(0, seconds)} s ago`;
    }
  }

  let timer = null;
  let asked = 0;
  async function refresh() {
    clearTimeout(timer);
    const mine = ++asked;
    if (!document.hidden) {
      try {
        const response = await fetch(config.url, { headers: { Accept: "application/json" }, cache: "no-store" });
        if (response.status === 401) {
          status("Signed out: reload the page to sign in again.");
          return; // no more polling
        }
        if (!response.ok) throw new Error(`the server answered ${response.status}`);
        const data = await response.json();
        if (mine !== asked) return; // a later refresh is under way: it draws
        draw(data);
        root.dataset.refreshes = String(Number(root.dataset.refreshes || 0) + 1);
      } catch (error) {
        status(`Could not refresh the figures (${error.message}); trying again in ${everyMs / 1000} s.`);
      }
    }
    if (mine === asked) timer = setTimeout(refresh, everyMs);
  }

  draw(config.data);
  timer = setTimeout(refresh, everyMs);
  document.addEventListener("agentws:refresh", refresh);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
})();
