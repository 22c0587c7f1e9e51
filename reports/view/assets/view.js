// agentsweep view: fills the page from the viewer's own JSON endpoints. Data is written with
// textContent only (never markup); nothing is fetched from anywhere but this origin.
(function () {
  "use strict";
  var page = document.body.dataset.page;
  var pollMs = Number(document.body.dataset.pollMs) || 2000;
  var scale = JSON.parse(document.body.dataset.scale);
  var app = document.getElementById("app");
  var status = document.getElementById("status");

  // Bidi controls, zero-width characters and controls shown as <U+202E> (reports/html/markup.py).
  var HIDDEN = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u2069\u061C\uFEFF\u2028\u2029]/g;
  function visible(text) {
    return String(text).replace(HIDDEN, function (c) {
      return "<U+" + ("0000" + c.charCodeAt(0).toString(16).toUpperCase()).slice(-4) + ">";
    });
  }
  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = visible(text); }
    return node;
  }
  function add(parent, child) { parent.appendChild(child); return child; }
  function link(parent, href, text) {
    var a = add(parent, el("a", null, text));
    a.href = href;
    return a;
  }
  function getJSON(path) {
    return fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) {
        return r.json().then(function (body) {
          if (!r.ok) { throw new Error(body.error || (path + ": " + r.status)); }
          return body;
        });
      });
  }
  function fail(error) { status.textContent = visible("error: " + error.message); status.className = "bad"; }
  function table(parent, headers, cls) {
    var t = add(parent, el("table", "grid " + (cls || "")));
    var head = add(add(t, el("thead")), el("tr"));
    headers.forEach(function (h) { add(head, el("th", null, h)); });
    return add(t, el("tbody"));
  }
  function td(tr, text, cls) { return add(tr, el("td", cls, text)); }
  function when(iso) { return iso ? iso.replace("T", " ").slice(0, 16) : ""; }
  function query(params) {
    var q = new URLSearchParams();
    Object.keys(params).forEach(function (k) {
      if (params[k] !== null && params[k] !== undefined && params[k] !== "") { q.append(k, params[k]); }
    });
    return q.toString();
  }

  // Rates: the cividis lightness ramp (dark = failing, light = passing) and a symbol that says
  // it without colour: ✓ every trial passed, ✗ none did, ◐ some did.
  function hex(c) { return [1, 3, 5].map(function (i) { return parseInt(c.slice(i, i + 2), 16); }); }
  function colourAt(t) {
    t = Math.min(1, Math.max(0, t));
    var pos = t * (scale.length - 1), lo = Math.min(Math.floor(pos), scale.length - 2);
    var a = hex(scale[lo]), b = hex(scale[lo + 1]), f = pos - lo;
    return a.map(function (x, i) { return Math.round(x + (b[i] - x) * f); });
  }
  function ink(rgb) {
    var lum = rgb.map(function (c) { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); });
    var l = 0.2126 * lum[0] + 0.7152 * lum[1] + 0.0722 * lum[2];
    return (l + 0.05) / 0.05 >= 1.05 / (l + 0.05) ? "#000000" : "#ffffff";
  }
  function symbol(passed, judged) { return passed === judged ? "✓" : (passed === 0 ? "✗" : "◐"); }
  function paint(node, passed, judged) {
    if (!judged) { node.classList.add("none"); return node; }
    var rgb = colourAt(passed / judged);
    node.style.background = "rgb(" + rgb.join(",") + ")";
    node.style.color = ink(rgb);
    node.dataset.rate = String(passed / judged);
    return node;
  }
  function rateCell(tr, passed, judged) {
    var cell = td(tr, judged ? symbol(passed, judged) + " " + passed + "/" + judged : "–", "rate");
    return paint(cell, passed, judged);
  }
  function outcomeText(outcome) {
    return ({ passed: "✓ passed", failed: "✗ failed", unknown: "? unknown", agent_error: "✗ agent error",
      limit: "✗ limit", incomplete: "… incomplete" })[outcome] || outcome;
  }
  function traceHref(runId, trialId) {
    return "/runs/" + encodeURIComponent(runId) + "?" + query({ trial: trialId }) +
      "#trial=" + encodeURIComponent(trialId);
  }

  // The runs index ------------------------------------------------------------------------
  function duration(seconds) {
    if (seconds === null || seconds === undefined) { return "unknown"; }
    if (seconds < 90) { return Math.round(seconds) + " s"; }
    if (seconds < 5400) { return Math.round(seconds / 60) + " min"; }
    return (seconds / 3600).toFixed(1) + " h";
  }
  function cost(run) {
    if (run.trials === 0) { return ""; }
    if (run.cost_unknown === run.trials) { return "unknown"; }
    var known = "$" + (run.cost_known_usd || 0).toFixed(4);
    return run.cost_unknown ? known + " + unknown (" + run.cost_unknown + " trials not reported)" : known;
  }
  function progressCell(tr, run) {
    var cell = td(tr, null, "state " + run.state);
    if (run.state !== "running" || !run.progress) { cell.textContent = run.state; return; }
    var p = run.progress;
    add(cell, el("span", "who", "running"));
    var bar = add(cell, el("progress"));
    bar.max = p.grid || 1;
    bar.value = p.done;
    add(cell, el("span", "progress-text", p.done + (p.grid ? "/" + p.grid : "") + " done · " +
      p.failed + " not passed · " + p.incomplete + " incomplete · ETA " + duration(p.eta_s)));
  }
  var runs = [];
  function showRuns() {
    var form = document.getElementById("filters");
    var kind = form.elements.kind.value, state = form.elements.state.value;
    var text = form.elements.text.value.toLowerCase();
    var shown = runs.filter(function (r) {
      var hay = [r.run_id].concat(r.models || [], r.suites || []).join(" ").toLowerCase();
      return (!kind || r.kind === kind) && (!state || r.state === state) && (!text || hay.indexOf(text) >= 0);
    });
    app.textContent = "";
    var body = table(app, ["run", "kind", "state", "models", "suites", "passed", "failed",
      "agent errors", "incomplete", "pass rate", "decision", "cost", "started", "finished"], "runs");
    shown.forEach(function (r) {
      var tr = add(body, el("tr"));
      tr.dataset.run = r.run_id;
      link(td(tr, null, "run"), "/runs/" + encodeURIComponent(r.run_id), r.run_id);
      td(tr, r.kind, "kind");
      progressCell(tr, r);
      td(tr, (r.models || []).join(", "), "models");
      td(tr, (r.suites || []).join(", "), "suites");
      td(tr, r.passed, "passed num");
      td(tr, r.failed + (r.unknown ? " (+" + r.unknown + " unknown)" : ""), "failed num");
      td(tr, r.agent_errors, "agent_errors num");
      td(tr, r.incomplete, "incomplete num");
      var judged = r.passed + r.failed + r.agent_errors;
      var rate = rateCell(tr, r.passed, judged);
      if (judged) { rate.textContent = visible(symbol(r.passed, judged) + " " + Math.round(100 * r.passed / judged) + "%"); }
      var decided = td(tr, r.verdict ? r.verdict.toUpperCase() + " vs " + r.decided_against : "",
        "decision" + (r.verdict ? " " + r.verdict : ""));
      if (r.verdict_reasons && r.verdict_reasons.length) { decided.title = visible(r.verdict_reasons.join("\n")); }
      td(tr, cost(r), "cost");
      td(tr, when(r.started_at), "started");
      td(tr, r.state === "finished" ? when(r.finished_at) : "", "finished");
    });
    status.textContent = visible(shown.length + " of " + runs.length + " runs");
  }
  function loadRuns() {
    getJSON("/api/runs").then(function (found) {
      runs = found;
      showRuns();
      document.body.dataset.loads = String(Number(document.body.dataset.loads || 0) + 1);
      var live = runs.some(function (r) { return r.state === "running"; });
      setTimeout(loadRuns, live ? pollMs : 5 * pollMs);
    }).catch(function (e) { fail(e); setTimeout(loadRuns, 5 * pollMs); });
  }
  function index() {
    var form = document.getElementById("filters");
    form.addEventListener("input", showRuns);
    form.addEventListener("submit", function (e) { e.preventDefault(); });
    loadRuns();
  }

  // Trends across runs --------------------------------------------------------------------
  function cellParams(c) {
    return { suite_id: c.suite_id, scenario_id: c.scenario_id, model: c.model,
      prompt_id: c.prompt_id, memory_mode: c.memory_mode };
  }
  function changeList(parent, r) {
    if (!r.changes.length) {
      add(parent, el("span", "nothing", r.what_changed + " (flakiness, or the provider)"));
      return;
    }
    var ul = add(parent, el("ul", "changes"));
    r.changes.forEach(function (c) {
      var li = add(ul, el("li"));
      add(li, el("strong", null, c.input));
      add(li, el("span", null, ": " + c.before + " → " + c.after));
    });
  }
  function showHistory(target, cell, since) {
    getJSON("/api/cell?" + query(Object.assign(cellParams(cell), { since: since }))).then(function (rows) {
      target.textContent = "";
      add(target, el("h3", null, "history of " + cell.scenario_id + " / " + cell.model + " / " +
        cell.prompt_id + " / " + cell.memory_mode));
      var body = table(target, ["run", "started", "passed", "model version", "prompt", "scenario",
        "tools", "code", "generation params"], "history");
      var inputs = ["model_version", "prompt_sha256", "scenario", "tools_sha256", "code_version",
        "generation_params"];
      rows.forEach(function (r, i) {
        var tr = add(body, el("tr"));
        link(td(tr), "/runs/" + encodeURIComponent(r.run_id), r.run_id);
        td(tr, when(r.run_started_at));
        rateCell(tr, r.passed, r.judged);
        inputs.forEach(function (name) {
          // an input that differs from the run before: marked "Δ" (and bold), not by colour alone
          var changed = i > 0 && rows[i - 1][name] !== r[name];
          var cell = td(tr, (changed ? "Δ " : "") + r[name], "hash" + (changed ? " changed" : ""));
          cell.title = r[name];
        });
      });
    }).catch(fail);
  }
  function strip(parent, runsOfCell) {
    var box = add(parent, el("span", "strip"));
    runsOfCell.forEach(function (r) {
      var sq = add(box, el("span", "sq", symbol(r.passed, r.judged)));
      sq.title = r.run_id + ": " + r.passed + "/" + r.judged;
      paint(sq, r.passed, r.judged);
    });
    return box;
  }
  function trends() {
    var since = new URLSearchParams(window.location.search).get("since") || "30d";
    document.getElementById("window").elements.since.value = since;
    getJSON("/api/trends?" + query({ since: since })).then(function (t) {
      app.textContent = "";
      var history = el("div", "history");
      history.id = "history";
      add(app, el("h2", null, "regressions (" + t.regressions.length + ")"));
      add(app, el("p", "note", "Cells that passed every trial in each run up to their last passing one and failed in every run since; what changed is every recorded input that differs between those two runs."));
      var body = table(app, ["cell", "last passing run", "first failing run", "then", "what changed"], "regressions");
      t.regressions.forEach(function (r) {
        var tr = add(body, el("tr"));
        tr.dataset.scenario = r.scenario_id;
        var b = add(td(tr), el("button", "cell-link", r.title));
        b.type = "button";
        b.addEventListener("click", function () { showHistory(history, r, since); });
        link(td(tr), "/runs/" + encodeURIComponent(r.last_passing_run), r.last_passing_run);
        link(td(tr), "/runs/" + encodeURIComponent(r.first_failing_run), r.first_failing_run);
        var parts = r.failing.split("/");
        rateCell(tr, Number(parts[0]), Number(parts[1]));
        changeList(td(tr, null, "what-changed"), r);
      });
      add(app, el("h2", null, "flaky cells (" + t.flaky.length + ")"));
      body = table(app, ["cell", "runs", "passed over the window"], "flaky");
      t.flaky.forEach(function (f) {
        var tr = add(body, el("tr"));
        tr.dataset.scenario = f.scenario_id;
        var b = add(td(tr), el("button", "cell-link", f.title));
        b.type = "button";
        b.addEventListener("click", function () { showHistory(history, f, since); });
        td(tr, f.runs, "num");
        rateCell(tr, f.passed, f.judged);
      });
      add(app, el("h2", null, "cells over time"));
      var steady = t.cells.filter(function (c) { return c.cell_class === "passing"; });
      var moving = t.cells.filter(function (c) { return c.cell_class !== "passing"; });
      if (steady.length) {
        add(app, el("p", "note", steady.length + " cell(s) passed every trial in every run (no chart: it would carry nothing)"));
      }
      body = table(app, ["cell", "class", "runs (oldest first)"], "cells");
      moving.forEach(function (c) {
        var tr = add(body, el("tr"));
        var b = add(td(tr), el("button", "cell-link", c.scenario_id + " / " + c.model + " / " + c.prompt_id + " / " + c.memory_mode));
        b.type = "button";
        b.addEventListener("click", function () { showHistory(history, c, since); });
        td(tr, c.cell_class);
        strip(td(tr), c.runs);
      });
      add(app, history);
      status.textContent = visible("runs started since " + when(t.since) + " UTC");
      document.body.dataset.loaded = "1";
    }).catch(fail);
  }

  // Search --------------------------------------------------------------------------------
  var FIELDS = ["run_id", "scenario", "model", "outcome", "failed_check", "first_violation", "text"];
  function search() {
    var form = document.getElementById("search");
    var params = new URLSearchParams(window.location.search);
    FIELDS.forEach(function (f) { if (params.get(f)) { form.elements[f].value = params.get(f); } });
    getJSON("/api/facets").then(function (facets) {
      Object.keys(facets).forEach(function (name) {
        var list = document.getElementById("f-" + name);
        facets[name].forEach(function (v) { add(list, el("option")).value = v; });
      });
    }).catch(fail);
    var asked = {};
    FIELDS.forEach(function (f) { asked[f] = params.get(f); });
    if (!FIELDS.some(function (f) { return asked[f]; })) {
      status.textContent = "Give a filter: a scenario, a model, an outcome, a check or a text.";
      document.body.dataset.loaded = "1";
      return;
    }
    getJSON("/api/search?" + query(asked)).then(function (rows) {
      app.textContent = "";
      status.textContent = visible(rows.length + (rows.length >= 200 ? "+ (the first 200)" : "") + " trial(s)");
      var compare = add(app, el("form", "compare"));
      compare.method = "get";
      compare.action = "/side";
      var body = table(compare, ["", "run", "scenario", "model", "prompt", "memory mode", "repeat",
        "outcome", "first violation", ""], "results");
      rows.forEach(function (r) {
        var tr = add(body, el("tr"));
        tr.dataset.trial = r.trial_id;
        var box = add(td(tr), el("input"));
        box.type = "checkbox";
        box.value = r.run_id + "\n" + r.trial_id;
        box.setAttribute("aria-label", "compare");
        td(tr, r.run_id); td(tr, r.scenario_id); td(tr, r.model); td(tr, r.prompt_id);
        td(tr, r.memory_mode); td(tr, r.repeat, "num");
        td(tr, outcomeText(r.outcome), "outcome " + r.outcome);
        td(tr, r.first_violation_check ? r.first_violation_check + " (turn " + r.first_violation_turn + ")" : "");
        link(td(tr), traceHref(r.run_id, r.trial_id), "open trace").className = "open-trace";
      });
      var go = add(compare, el("button", null, "side by side (tick 2 to 4)"));
      go.type = "submit";
      compare.addEventListener("submit", function (e) {
        e.preventDefault();
        var q = new URLSearchParams();
        compare.querySelectorAll("input[type=checkbox]:checked").forEach(function (b) {
          var parts = b.value.split("\n");
          q.append("run", parts[0]);
          q.append("trial", parts[1]);
        });
        window.location.href = "/side?" + q.toString();
      });
      document.body.dataset.loaded = "1";
    }).catch(fail);
  }

  // Side by side --------------------------------------------------------------------------
  function sideTitle(t) {
    var r = t.row;
    return r.model + " / " + r.prompt_id + " / " + r.memory_mode + " (run " + t.run_id + ", repeat " + r.repeat + ")";
  }
  function turnEvents(parent, t, turn) {
    var row = t.row;
    var events = t.events.filter(function (ev) { return ev.turn === turn; });
    events.forEach(function (ev, i) {
      var box;
      if (ev.kind === "user_message") {
        box = add(parent, el("div", "ev user"));
        add(box, el("span", "who", "user"));
        add(box, el("span", "text", ev.content || ""));
      } else if (ev.kind === "assistant_message") {
        if (!ev.content) { return; }
        box = add(parent, el("div", "ev assistant"));
        add(box, el("span", "who", "assistant"));
        add(box, el("span", "text", ev.content));
      } else if (ev.kind === "tool_call") {
        box = add(parent, el("div", "ev tool_call"));
        add(box, el("span", "who", "→ " + ev.tool_name));
        add(box, el("pre", null, ev.arguments || ""));
      } else if (ev.kind === "tool_result") {
        box = add(parent, el("div", "ev tool_result"));
        add(box, el("span", "who", "← " + ev.tool_name + (ev.tool_error ? " error: " + ev.tool_error : "")));
      } else {
        box = add(parent, el("div", "ev " + ev.kind));
        add(box, el("span", "who", ev.kind.replace("_", " ")));
      }
      var next = events[i + 1];
      if (row.first_violation_check !== undefined && turn === row.first_violation_turn &&
          (row.first_violation_step === undefined ? !next
            : ev.step === row.first_violation_step && (!next || next.step !== ev.step))) {
        add(parent, el("div", "violation first-violation", "⚑ first violation: " + row.first_violation_check));
        row.marked = true;
      }
    });
  }
  function side() {
    var params = new URLSearchParams(window.location.search);
    var runIds = params.getAll("run"), trialIds = params.getAll("trial");
    if (trialIds.length < 2 || trialIds.length > 4 || runIds.length !== trialIds.length) {
      status.textContent = "Tick two to four trials in the search results (e.g. one scenario, several models), then press side by side.";
      link(app, "/search", "search trials");
      document.body.dataset.loaded = "1";
      return;
    }
    Promise.all(trialIds.map(function (t, i) {
      return getJSON("/api/trace?" + query({ run_id: runIds[i], trial_id: t }));
    })).then(function (sides) {
      app.textContent = "";
      var turns = [];
      sides.forEach(function (t) {
        t.events.forEach(function (ev) { if (turns.indexOf(ev.turn) < 0) { turns.push(ev.turn); } });
      });
      turns.sort(function (a, b) { return a - b; });
      var scenarios = sides.map(function (t) { return t.row.scenario_id; });
      add(app, el("p", null, "scenario " + scenarios.filter(function (s, i) { return scenarios.indexOf(s) === i; }).join(", ")));
      var t = add(app, el("table", "grid side"));
      t.style.setProperty("--sides", String(sides.length));
      var head = add(add(t, el("thead")), el("tr"));
      add(head, el("th", "turn", "turn"));
      sides.forEach(function (s) {
        var th = add(head, el("th", "side-head"));
        add(th, el("div", null, sideTitle(s)));
        var r = s.row;
        var verdict = r.status === "complete" ? (r.passed ? "✓ passed" : "✗ failed") : r.status;
        add(th, el("div", r.passed ? "meta" : "bad", verdict + (r.first_violation_check ?
          " — first violation " + r.first_violation_check + " at turn " + r.first_violation_turn : "")));
        link(th, traceHref(s.run_id, s.trial_id), "open trace");
      });
      var body = add(t, el("tbody"));
      turns.forEach(function (turn) {
        var tr = add(body, el("tr"));
        tr.dataset.turn = String(turn);
        add(tr, el("th", "turn", String(turn)));
        sides.forEach(function (s) {
          var cell = add(tr, el("td", "dialog"));
          turnEvents(cell, s, turn);
        });
      });
      document.body.dataset.loaded = "1";
    }).catch(fail);
  }

  ({ index: index, trends: trends, search: search, side: side })[page]();
  document.body.dataset.ready = "1";
}());
