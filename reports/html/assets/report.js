// agentsweep HTML report: the trace viewer. Reads the embedded JSON, writes the DOM with
// textContent only (data never becomes markup), no network, no library.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var index = data.index, traces = data.traces, lists = data.lists;
  var viewer = document.getElementById("viewer");
  var body = document.getElementById("viewer-body");

  // Bidi controls, zero-width characters and controls shown as <U+202E>: no text reordered
  // or hidden (reports/html/markup.py: visible).
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
  function open() { viewer.hidden = false; document.body.classList.add("viewing"); }
  function close() { viewer.hidden = true; document.body.classList.remove("viewing"); }

  function describe(row) {
    var outcome = index.outcomes[row[3]];
    var text = "repeat " + row[2] + ": " + outcome;
    if (row[4] >= 0) {
      text += " — first violation " + index.checks[row[4]] + " at turn " +
        (row[5] === null ? "?" : row[5]) + (row[6] === null ? "" : " step " + row[6]);
    }
    return text;
  }

  function showList(title, positions, scores) {
    body.textContent = "";
    add(body, el("h2", null, title));
    if (scores) { add(body, el("p", "scores", scores)); }
    var ol = add(body, el("ol", "trials"));
    positions.forEach(function (position) {
      var row = index.trials[position];
      var li = add(ol, el("li"));
      var cell = index.cells[row[1]];
      var button = add(li, el("button", "trial", describe(row)));
      button.type = "button";
      button.dataset.trial = row[0];
      if (title.indexOf(cell[0]) < 0) { add(li, el("span", "meta", " (" + cell[0] + ")")); }
      if (!traces[row[0]]) { add(li, el("span", "meta", " trace not embedded")); }
    });
    if (!positions.length) { add(body, el("p", null, "no trials")); }
    open();
  }

  function showCell(position) {
    var cell = index.cells[position];
    var positions = [];
    for (var i = cell[1]; i < cell[2]; i += 1) { positions.push(i); }
    showList(cell[0], positions, cell[3]);
    var side = data.baseline;
    var rows = side && side.cells[String(position)];
    if (!rows) { return; }
    add(body, el("h3", null, "the same cell in the baseline run " + side.run_id));
    var ol = add(body, el("ol", "trials baseline"));
    rows.forEach(function (row) {
      var li = add(ol, el("li"));
      var text = "repeat " + row[1] + ": " + index.outcomes[row[2]] + (row[3] === null ? "" :
        " — first violation " + row[3] + " at turn " + (row[4] === null ? "?" : row[4]));
      var button = add(li, el("button", "trial", text));
      button.type = "button";
      button.dataset.trial = row[0];
      button.dataset.side = "baseline";
      if (!side.traces[row[0]]) { add(li, el("span", "meta", " trace not embedded")); }
    });
  }

  function parse(text) {
    if (text === undefined || text === null) { return undefined; }
    try { return JSON.parse(text); } catch (e) { return text; }
  }
  function flat(value, prefix, out) {
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      Object.keys(value).forEach(function (k) { flat(value[k], prefix ? prefix + "." + k : k, out); });
    } else { out[prefix || "(value)"] = JSON.stringify(value); }
    return out;
  }
  function memory(parent, before, after) {
    var a = parse(before), b = parse(after);
    if (b === undefined) { return; }
    var box = add(parent, el("div", "ev memory"));
    add(box, el("span", "who", "memory after the user's message"));
    if (typeof b !== "object" || b === null) {
      add(box, el("span", null, "before: " + (a === undefined ? "(none)" : String(a))));
      add(box, el("pre", null, "after: " + String(b)));
      return;
    }
    var old = (a && typeof a === "object") ? flat(a, "", {}) : {};
    var now = flat(b, "", {});
    var table = add(box, el("table", "grid diff"));
    var head = add(table, el("tr"));
    ["path", "before", "after"].forEach(function (h) { add(head, el("th", null, h)); });
    var keys = Object.keys(Object.assign({}, old, now)).sort();
    var changes = 0;
    keys.forEach(function (key) {
      var kind = !(key in old) ? "added" : !(key in now) ? "removed" :
        old[key] !== now[key] ? "changed" : "same";
      if (kind === "same") { return; }
      changes += 1;
      var tr = add(table, el("tr", kind));
      add(tr, el("td", null, key));
      add(tr, el("td", null, key in old ? old[key] : ""));
      add(tr, el("td", null, key in now ? now[key] : ""));
    });
    if (!changes) { table.remove(); add(box, el("span", "meta", "unchanged")); }
    var full = add(box, el("details"));
    add(full, el("summary", null, "whole memory after the turn"));
    add(full, el("pre", null, JSON.stringify(b, null, 2)));
  }

  function pretty(text) {
    var value = parse(text);
    return typeof value === "object" ? JSON.stringify(value, null, 2) : String(text);
  }

  function violationMark(parent, row) {
    var box = add(parent, el("div", "violation"));
    box.id = "first-violation";
    box.textContent = visible("⚑ first violation: " + row.first_violation_check + " (turn " +
      row.first_violation_turn + (row.first_violation_step === undefined ? "" :
        ", step " + row.first_violation_step) + ")");
  }

  function event(parent, ev) {
    var at = "[" + ev.turn + "." + ev.step + "] ";
    var box;
    if (ev.kind === "user_message") {
      box = add(parent, el("div", "ev user"));
      add(box, el("span", "who", at + "user"));
      add(box, el("span", "text", ev.content));
      memory(parent, ev.active_state_before, ev.active_state_after);
    } else if (ev.kind === "assistant_message") {
      if (!ev.content && ev.finish_reason !== "length") { return; }
      box = add(parent, el("div", "ev assistant"));
      add(box, el("span", "who", at + "assistant"));
      add(box, el("span", "text", ev.content || ""));
      if (ev.finish_reason === "length") { add(box, el("span", "mark refused", "cut off at the token limit")); }
    } else if (ev.kind === "tool_call") {
      box = add(parent, el("div", "ev tool_call"));
      add(box, el("span", "who", at + "→ " + ev.tool_name));
      if (ev.intercepted) { add(box, el("span", "mark intercepted", "intercepted")); }
      if (ev.blocked) { add(box, el("span", "mark blocked", "blocked by the memory gate")); }
      if (ev.tool_error) { add(box, el("span", "mark refused", "refused: " + ev.tool_error)); }
      add(box, el("pre", null, pretty(ev.arguments)));
    } else if (ev.kind === "tool_result") {
      box = add(parent, el("div", "ev tool_result"));
      add(box, el("span", "who", at + "← " + ev.tool_name));
      if (ev.tool_error) { add(box, el("span", "mark refused", "error: " + ev.tool_error)); }
      add(box, el("pre", null, pretty(ev.result)));
    } else if (ev.kind === "nudge") {
      box = add(parent, el("div", "ev nudge"));
      add(box, el("span", "who", at + "harness"));
      add(box, el("span", "mark refused", "an empty reply: asked again"));
      add(box, el("span", "text", ev.content || ""));
    } else if (ev.kind === "memory_update") {
      box = add(parent, el("div", "ev memory_update"));
      add(box, el("span", "who", at + "memory update r" + (ev.state_revision === undefined ? "?" : ev.state_revision)));
      if (ev.tool_error) { add(box, el("span", "mark refused", ev.tool_error)); }
      var more = add(box, el("details"));
      add(more, el("summary", null, "content"));
      add(more, el("pre", null, pretty(ev.content)));
    }
  }

  function checks(parent, trace) {
    var row = trace.row;
    var code = trace.checks;
    var cols = add(parent, el("div", "columns"));
    var col = add(cols, el("div"));
    var counted = code.filter(function (c) { return c.counted !== false; });
    var signals = code.length - counted.length;
    add(col, el("h3", null, "code checks (" + counted.filter(function (c) { return !c.passed; }).length + " failed of " + counted.length +
      (signals ? "; " + signals + " signal(s) not counted in passed" : "") + ")"));
    var ul = add(col, el("ul", "checks"));
    code.forEach(function (c) {
      var first = c.check_id === row.first_violation_check;
      var li = add(ul, el("li", "check " + (c.passed ? "passed" : "failed") + (first && !c.passed ? " first" : "")));
      li.textContent = visible((c.passed ? "ok " : "FAIL ") + c.check_id +
        (c.counted === false ? " (a signal: not counted in passed)" : "") +
        (c.turn === undefined ? "" : " @ turn " + c.turn + (c.step === undefined ? "" : " step " + c.step)) +
        ": " + c.detail + (first && !c.passed ? "  ⚑ first violation" : ""));
    });
    var judged = trace.judgments || [];
    if (!judged.length) { return; }
    var side = add(cols, el("div", "judgments"));
    add(side, el("h3", null, "judge verdicts (a separate signal: beside, never instead of, the code checks)"));
    var jl = add(side, el("ul", "checks"));
    judged.forEach(function (j) {
      var verdict = j.judge_verdict || "no majority";
      var li = add(jl, el("li", "check judgment " + (verdict === "pass" ? "passed" : "failed")));
      li.textContent = visible(verdict.toUpperCase() + " " + j.judge_model + " / " + j.rubric_id + " v" +
        j.rubric_version + " (" + j.passes + " pass, " + j.fails + " fail, " + j.errors +
        " error of " + j.repeats + ")" + (j.reason ? ": " + j.reason : ""));
    });
  }

  function attempts(parent, trace) {
    add(parent, el("h3", null, "attempts (" + trace.attempts.length + ")"));
    var table = add(parent, el("table", "grid"));
    var head = add(table, el("tr"));
    ["attempt", "outcome", "error", "node", "started", "finished", "retry after"]
      .forEach(function (h) { add(head, el("th", null, h)); });
    trace.attempts.forEach(function (a) {
      var tr = add(table, el("tr"));
      [a.attempt, a.outcome, (a.error_kind || "") + (a.message ? ": " + a.message : ""),
        a.node_id || "", a.started_at, a.finished_at,
        a.retry_delay_s === undefined ? "" : a.retry_delay_s + " s"]
        .forEach(function (v) { add(tr, el("td", null, v)); });
    });
  }

  function showTrace(trialId, side) {
    var baseline = side === "baseline";
    var runId = baseline ? data.baseline.run_id : data.run_id;
    var trace = (baseline ? data.baseline.traces : traces)[trialId];
    body.textContent = "";
    if (baseline) { add(body, el("p", "bad", "baseline run " + runId)); }
    if (!trace) {
      add(body, el("h2", null, "trial " + trialId));
      add(body, el("p", null, "This trace is not embedded in the report (only failed trials " +
        "and a sample of passed ones are, up to a cap). Print it with:"));
      add(body, el("pre", null, "agentsweep show " + trialId + " --run-id " + runId));
      open();
      return;
    }
    var row = trace.row;
    add(body, el("h2", null, row.scenario_id + " / " + row.model + " / " + row.memory_mode +
      " / repeat " + row.repeat));
    var verdict = row.status === "complete" ? (row.passed ? "PASSED" : "FAILED") : row.status;
    add(body, el("p", row.passed ? null : "bad", verdict + (row.error_kind ? " — " + row.error_kind +
      (row.error_message ? ": " + row.error_message : "") : "")));
    add(body, el("p", "meta", "trial " + trialId + "; scenario v" + row.scenario_version +
      "; prompt " + row.prompt_id + "; model version " + (row.model_version || "not reported") +
      "; seed " + (row.seed === undefined ? "none" : row.seed)));
    var scores = ["state", "invalidation", "function", "arguments", "response"].map(function (s) {
      var v = row["score_" + s];
      return s + " " + (v === undefined ? "-" : v);
    });
    add(body, el("p", null, "scores: " + scores.join(", ") + (row.vetoed ? "; VETOED" : "")));
    add(body, el("h3", null, "dialog"));
    var dialog = add(body, el("div", "dialog"));
    var marked = false;
    var events = trace.events;
    events.forEach(function (ev, i) {
      event(dialog, ev);
      var next = events[i + 1];
      if (!marked && row.first_violation_check !== undefined && ev.turn === row.first_violation_turn &&
          (row.first_violation_step === undefined ? (!next || next.turn !== ev.turn)
            : (ev.step === row.first_violation_step && (!next || next.turn !== ev.turn || next.step !== ev.step)))) {
        violationMark(dialog, row);
        marked = true;
      }
    });
    if (!marked && row.first_violation_check !== undefined) { violationMark(dialog, row); }
    checks(body, trace);
    attempts(body, trace);
    open();
  }

  function activate(target) {
    var trial = target.closest("[data-trial]");
    if (trial) { showTrace(trial.dataset.trial, trial.dataset.side); return true; }
    var cell = target.closest("[data-cell]");
    if (cell && cell.dataset.cell !== "") { showCell(Number(cell.dataset.cell)); return true; }
    var list = target.closest("[data-list]");
    if (list) {
      var entry = lists[Number(list.dataset.list)];
      showList(entry[0], entry[1]);
      return true;
    }
    if (target.closest("#viewer-close")) { close(); return true; }
    return false;
  }
  document.addEventListener("click", function (e) { activate(e.target); });
  document.addEventListener("keydown", function (e) {
    if (e.key === "Escape") { close(); return; }
    if ((e.key === "Enter" || e.key === " ") && e.target.closest && e.target.closest("[data-cell],[data-list]")) {
      if (activate(e.target)) { e.preventDefault(); }
    }
  });
  // #trial=<id> opens that trial's trace (the viewer links a search result here).
  var wanted = /^#trial=(.+)$/.exec(window.location.hash);
  if (wanted) { showTrace(decodeURIComponent(wanted[1])); }
  document.body.dataset.ready = "1";
}());
