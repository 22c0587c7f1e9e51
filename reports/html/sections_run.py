"""The sections of one run: header, matrix, stability, first violations, usage."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from reports.html.charts import pass_hat_k_curve, repeat_strip
from reports.html.colour import count_style, rate_style, rate_symbol
from reports.html.context import Page, fmt_money, fmt_ms, fmt_number, fmt_time
from reports.html.markup import Markup, join
from reports.transitions import pass_hat_k, pass_hat_ks

SCORES = ("state", "invalidation", "function", "arguments", "response")
STABILITY_ROWS = 300
CURVE_FROM = 3
"""Repeats from which a pass^k curve is drawn: with 2 it joins two numbers already printed
beside it and carries nothing."""
"""Unstable cells listed at most (the least stable first)."""
CHECK_ROWS = 40
"""First-violation checks shown at most (the most frequent first); the rest summed."""


def _short(sha: str | None) -> Markup:
    return Markup("") if not sha else Markup(sha[:12])


def _table(page: Page, head: Sequence[str], rows: Sequence[Sequence[object]],
           cls: str = "grid") -> Markup:
    esc = page.esc
    header = join(esc.tag("th", h) for h in head)
    body = join("<tr>" + join(esc.tag("td", c) for c in row) + "</tr>" for row in rows)
    return Markup(f'<table class="{cls}"><thead><tr>{header}</tr></thead>'
                  f"<tbody>{body}</tbody></table>")


def header(page: Page, title: str, generated: str) -> Markup:
    esc, run = page.esc, page.run
    inv = run.invocations
    started = inv["started_at"].min() if not inv.is_empty() else None
    finished = inv["finished_at"].max() if not inv.is_empty() else None
    assert started is None or isinstance(started, datetime)
    assert finished is None or isinstance(finished, datetime)
    codes = sorted({str(c) for c in inv["code_version"].to_list()}) if not inv.is_empty() else []
    statuses = {r["outcome"]: int(r["trials"]) for r in run.rows(run.statuses)}
    total = sum(statuses.values())
    incomplete = run.incomplete()
    counts = join(esc.tag("li", f"{name}: {statuses[name]}",
                          {"class": "bad" if name == "incomplete" else None})
                  for name in ("passed", "failed", "agent_error", "limit", "incomplete")
                  if name in statuses)
    incomplete_line = (esc.tag("p", f"{incomplete} trial(s) incomplete (infrastructure): not "
                                    "in any pass rate; `agentsweep run --run-id "
                                    f"{run.run_id} --resume` finishes them",
                               {"class": "bad", "id": "incomplete"}) if incomplete else "")
    models = _table(page, ("model", "provider", "channel", "version (provider-reported)",
                           "system fingerprint", "temperature", "trials"),
                    [(m["model"], m["provider"], m["access_channels"] or "unknown",
                      m["model_versions"] or "not reported",
                      m["system_fingerprints"] or "not reported", m["temperatures"],
                      m["trials"]) for m in run.rows(run.models)])
    inputs = _table(page, ("", "name", "sha256", "scenarios", "trials"),
                    [(i["what"], i["name"], esc.tag("span", _short(i["sha256"]),
                                                    {"title": i["sha256"]}),
                      i["scenarios"], i["trials"]) for i in run.rows(run.inputs)])
    invocations = _table(page, ("invocation", "started", "finished", "code", "repeats",
                                "grid", "trials run", "command"),
                         [(v["invocation_id"], fmt_time(v["started_at"]),
                           fmt_time(v["finished_at"], "unfinished"),
                           v["code_version"], v["repeats"], v["grid_size"], v["trials_run"],
                           esc.tag("code", v["argv"])) for v in run.rows(inv)])
    return join([
        esc.tag("h1", title),
        esc.tag("p", f"generated {generated}; run started {fmt_time(started)}, finished "
                     f"{fmt_time(finished, 'unfinished')}; code {', '.join(codes) or 'unknown'}",
                {"class": "meta"}),
        esc.tag("ul", counts, {"class": "counts", "id": "status-counts",
                               "data-total": total}),
        incomplete_line,
        esc.tag("h3", "models"), models, esc.tag("h3", "prompts and suites"), inputs,
        esc.tag("details", join([esc.tag("summary", f"invocations ({inv.height})"),
                                 invocations])),
    ])


def _score_text(cell: dict[str, Any]) -> str:
    parts = [f"pass {cell['k']}/{cell['n']}"]
    for score in SCORES:
        k, n = cell[f"{score}_k"], cell[f"{score}_n"]
        parts.append(f"{score} {k}/{n}" if n else f"{score} -")
    if cell["agent_errors"]:
        parts.append(f"agent errors {cell['agent_errors']}")
    if cell["vetoed"]:
        parts.append(f"vetoed {cell['vetoed']}")
    if cell["incomplete"]:
        parts.append(f"incomplete {cell['incomplete']} (not counted)")
    return "; ".join(parts)


def score_lines(page: Page) -> None:
    """Adds each matrix cell's five scores to the index (the viewer shows them)."""
    for entry, cell in zip(page.index["cells"], page.run.rows(page.run.cells), strict=True):
        entry.append(_score_text(cell))


def _cell_td(page: Page, position: int, cell: dict[str, Any]) -> Markup:
    esc = page.esc
    k, n, incomplete = int(cell["k"]), int(cell["n"]), int(cell["incomplete"])
    text = (f"{rate_symbol(k, n)} " if n else "") + f"{k}/{n}" + (
        f" +{incomplete}?" if incomplete else "")
    style = rate_style(k / n) if n else "background:#dddddd;color:#000000"
    return esc.tag("td", text, {
        "class": "cell", "data-cell": position, "tabindex": 0, "style": style,
        "data-k": k, "data-n": n, "title": page.index["cells"][position][3]})


def matrix(page: Page) -> Markup:
    """Scenario (x prompt) rows; model x memory mode columns; k/n per cell, cividis."""
    esc, cells = page.esc, page.run.rows(page.run.cells)
    models = sorted({c["model"] for c in cells})
    modes = sorted({c["memory_mode"] for c in cells},
                   key=lambda m: (["chat", "summary", "structured"] + [m]).index(m))
    columns = [(m, mode) for m in models for mode in modes]
    multi_prompt = page.run.cells.group_by("scenario_id").agg(
        pl.col("prompt_id").n_unique().alias("p"))["p"].to_list()
    by_row: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
    for position, c in enumerate(cells):
        by_row.setdefault((c["scenario_id"], c["prompt_id"]), {})[
            (c["model"], c["memory_mode"])] = position
    top = join(esc.tag("th", m, {"colspan": len(modes), "class": "model"}) for m in models)
    second = join(esc.tag("th", mode) for _, mode in columns)
    rows = []
    for (scenario, prompt), found in by_row.items():
        label = f"{scenario} · {prompt}" if max(multi_prompt, default=0) > 1 else scenario
        tds = [(_cell_td(page, found[col], cells[found[col]]) if col in found
                else esc.tag("td", "–", {"class": "cell none", "title": "not run"}))
               for col in columns]
        rows.append(f'<tr>{esc.tag("th", label, {"class": "row"})}{join(tds)}</tr>')
    legend = esc.tag("p", "Each cell: ✓ all, ◐ some or ✗ none of the n final trials passed "
                          "over the repeats, k/n (+i? = i incomplete, not counted). Colour: "
                          "pass rate on the cividis scale, dark = 0, light = 1. Hover for the "
                          "five scores; click to list the trials.", {"class": "legend"})
    return join([esc.tag("h2", "Pass rate: scenario x memory mode x model"), legend,
                 Markup(f'<div class="scroll"><table class="matrix" id="matrix"><thead>'
                        f'<tr><th rowspan="2">scenario</th>{top}</tr><tr>{second}</tr></thead>'
                        f"<tbody>{''.join(rows)}</tbody></table></div>")])


def _cell_outcomes(page: Page, position: int) -> list[str]:
    _, start, end = page.index["cells"][position][:3]
    names = page.index["outcomes"]
    return [names[row[3]] for row in page.index["trials"][start:end]]


def overall_pass_hat_k(cells: Sequence[dict[str, Any]]) -> list[float]:
    """For k = 1..max n: the mean over cells with n >= k of the cell's pass^k."""
    largest = max((int(c["n"]) for c in cells), default=0)
    out = []
    for k in range(1, largest + 1):
        values = [pass_hat_k(int(c["k"]), int(c["n"]), k) for c in cells if int(c["n"]) >= k]
        out.append(sum(values) / len(values))
    return out


def stability(page: Page) -> Markup:
    """Cells with repeats: how many are stable; the unstable ones with their repeats and
    pass^k curve (C(c,k)/C(n,k), reports.transitions)."""
    esc, cells = page.esc, page.run.rows(page.run.cells)
    repeated = [(i, c) for i, c in enumerate(cells) if int(c["n"]) >= 2]
    if not repeated:
        return Markup("")
    always = sum(1 for _, c in repeated if c["k"] == c["n"])
    never = sum(1 for _, c in repeated if c["k"] == 0)
    unstable = sorted(((i, c) for i, c in repeated if 0 < c["k"] < c["n"]),
                      key=lambda ic: (pass_hat_k(int(ic[1]["k"]), int(ic[1]["n"]),
                                                 int(ic[1]["n"])), ic[1]["k"] / ic[1]["n"], ic[0]))
    curve = overall_pass_hat_k([c for _, c in repeated])
    rows = []
    for position, c in unstable[:STABILITY_ROWS]:
        values = pass_hat_ks(int(c["k"]), int(c["n"]))
        rows.append("<tr>" + join([
            esc.tag("td", page.index["cells"][position][0], {"class": "cell-link",
                                                              "data-cell": position,
                                                              "tabindex": 0}),
            esc.tag("td", f"{rate_symbol(int(c['k']), int(c['n']))} {c['k']}/{c['n']}",
                    {"style": rate_style(c["k"] / c["n"])}),
            esc.tag("td", repeat_strip(esc, _cell_outcomes(page, position))),
            esc.tag("td", " ".join(f"{v:.2f}" for v in values), {"class": "num"}),
            esc.tag("td", pass_hat_k_curve(esc, values) if len(values) >= CURVE_FROM
                    else "")]) + "</tr>")
    more = len(unstable) - STABILITY_ROWS
    summary = (f"{len(repeated)} cells with 2 or more final repeats: {always} passed every "
               f"repeat, {never} failed every repeat, {len(unstable)} unstable (listed, least "
               "stable first: pass^n, the chance that all n repeats pass, lowest first)")
    return join([
        esc.tag("h2", "Stability over repeats"), esc.tag("p", summary, {"id": "stability-summary"}),
        esc.tag("p", "pass^k over all these cells (mean of each cell's C(c,k)/C(n,k)): "
                + " ".join(f"k={k + 1}: {v:.3f}" for k, v in enumerate(curve))),
        pass_hat_k_curve(esc, curve, width=360, height=80) if len(curve) >= CURVE_FROM
        else "",
        Markup('<table class="grid" id="stability"><thead><tr><th>cell</th><th>k/n</th>'
               "<th>repeats</th><th>pass^k, k=1..n</th><th>curve</th></tr></thead><tbody>"
               + "".join(rows) + "</tbody></table>") if rows else Markup(""),
        esc.tag("p", f"... {more} more unstable cells (agentsweep report matrix lists all)")
        if more > 0 else ""])


def first_violations(page: Page) -> Markup:
    """Failed trials by first failing check (rows) and turn (columns); counts in viridis."""
    esc, frame = page.esc, page.run.first_violations
    if frame.is_empty():
        return Markup("")
    totals = frame.group_by("check_id").agg(pl.col("trials").sum()).sort(
        ["trials", "check_id"], descending=[True, False])
    shown = totals["check_id"].to_list()[:CHECK_ROWS]
    turns = sorted({t for t in frame["turn"].to_list() if t is not None})
    has_none = frame["turn"].null_count() > 0
    columns: list[int | None] = [*turns, *([None] if has_none else [])]
    counts = {(r["check_id"], r["turn"]): r for r in frame.iter_rows(named=True)}
    largest = int(frame["trials"].max() or 0)  # type: ignore[arg-type]
    trials = page.run.trials.with_row_index("position").with_columns(
        pl.coalesce("first_violation_check", "error_kind", pl.lit("unknown")).alias("key"))
    failed = trials.filter((pl.col("status") != "incomplete") & ~pl.col("passed").fill_null(False))
    lists: dict[tuple[str, int | None], list[int]] = {}
    for r in failed.iter_rows(named=True):
        lists.setdefault((r["key"], r["first_violation_turn"]), []).append(int(r["position"]))
    rows = []
    for check in shown:
        tds = []
        for turn in columns:
            row = counts.get((check, turn))
            if row is None:
                tds.append(esc.tag("td", "", {"class": "cell zero"}))
                continue
            n = int(row["trials"])
            at = f"turn {turn}" if turn is not None else "no turn"
            list_id = page.add_list(f"first violation {check} at {at}",
                                    lists.get((check, turn), []))
            tds.append(esc.tag("td", n, {"class": "cell", "data-list": list_id, "tabindex": 0,
                                         "style": count_style(n, largest),
                                         "title": f"{n} trial(s); steps {row['steps'] or '-'}"}))
        rows.append(f'<tr>{esc.tag("th", check, {"class": "row"})}{join(tds)}</tr>')
    hidden = totals.height - len(shown)
    head = join(esc.tag("th", f"turn {t}" if t is not None else "no turn") for t in columns)
    return join([
        esc.tag("h2", "Where dialogs first go wrong: first violation, check x turn"),
        esc.tag("p", "Failed trials (agent errors by their error kind) counted by the check that "
                     "failed first and its turn; darker = more. Click a cell for its trials.",
                {"class": "legend"}),
        Markup(f'<div class="scroll"><table class="matrix" id="first-violations"><thead><tr>'
               f"<th>check</th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"),
        esc.tag("p", f"... {hidden} rarer checks not shown") if hidden > 0 else ""])


def usage(page: Page) -> Markup:
    esc, frame = page.esc, page.run.usage
    if frame.is_empty():
        return Markup("")
    rows = [(u["model"], u["trials"], fmt_money(u["cost_usd_total"]),
             fmt_money(u["cost_usd_per_trial"]), fmt_number(u["input_tokens_per_trial"], 1),
             fmt_number(u["output_tokens_per_trial"], 1), fmt_ms(u["latency_ms_p50"]),
             fmt_ms(u["latency_ms_p95"]), fmt_number(u["model_calls_per_trial"], 2),
             fmt_number(u["tool_calls_per_trial"], 2)) for u in page.run.rows(frame)]
    table = _table(page, ("model", "final trials", "cost total", "cost / trial",
                          "input tokens / trial", "output tokens / trial", "latency p50",
                          "latency p95", "model calls / trial", "tool calls / trial"), rows)
    return join([esc.tag("h2", "Cost, tokens, latency"),
                 esc.tag("p", "A figure any trial did not report is unknown (never 0).",
                         {"class": "legend"}),
                 Markup(table.replace('<table class="grid">', '<table class="grid" id="usage">',
                                      1))])

