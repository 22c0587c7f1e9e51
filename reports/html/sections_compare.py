"""A comparison's sections: the gate verdict with its reasons, the paired-bootstrap interval,
the transitions (class counts, paired outcomes, the cells that changed), usage deltas and
expectation changes. Everything comes from one ``reports.decision.Decision`` (the same that
``agentsweep compare`` and ``gate`` print); nothing here recomputes it."""

from __future__ import annotations

from typing import get_args

import polars as pl

from reports.decision import Decision
from reports.html.charts import interval_chart
from reports.html.colour import rate_style
from reports.html.context import Page, fmt_number
from reports.html.markup import Markup, join
from reports.paired import SUFFIX
from reports.transitions import CellTransition
from warehouse.schema import TransitionClass


def baseline_provenance(page: Page, models: pl.DataFrame, codes: list[str]) -> Markup:
    """What the baseline ran: its models with their reported versions, and its code."""
    esc = page.esc
    rows = "".join("<tr>" + join([
        esc.tag("td", m["model"]), esc.tag("td", m["model_versions"] or "not reported"),
        esc.tag("td", m["system_fingerprints"] or "not reported"),
        esc.tag("td", m["trials"])]) + "</tr>" for m in models.iter_rows(named=True))
    return join([
        esc.tag("h3", f"baseline run: code {', '.join(codes) or 'unknown'}"),
        Markup('<table class="grid" id="baseline-models"><thead><tr><th>model</th>'
               "<th>version (provider-reported)</th><th>system fingerprint</th><th>trials</th>"
               f"</tr></thead><tbody>{rows}</tbody></table>")])


def verdict(page: Page, decision: Decision) -> Markup:
    esc, gate = page.esc, decision.gate
    reasons = join(esc.tag("li", r) for r in gate.reasons) or esc.tag("li", "no reason: admit")
    notes = join(esc.tag("li", n) for n in gate.notes)
    parts = [esc.tag("h2", f"Gate: {gate.verdict.upper()} (exit {gate.exit_code})",
                     {"class": f"verdict {gate.verdict}", "id": "verdict"}),
             esc.tag("p", f"{decision.candidate} (candidate) against {decision.baseline} "
                          f"(baseline), paired by scenario, prompt, memory mode, repeat"
                          + (" and model" if decision.paired.by_model else "")),
             esc.tag("p", f"thresholds: {gate.source}", {"id": "thresholds"}),
             esc.tag("h3", "reasons"), esc.tag("ul", reasons, {"id": "reasons"})]
    if gate.notes:
        parts += [esc.tag("h3", "notes"), esc.tag("ul", notes)]
    interval = decision.interval
    if interval is not None:
        parts += [esc.tag("h3", "pass-rate difference (candidate - baseline)"),
                  esc.tag("p", f"{interval.estimate:+.3f}, paired bootstrap "
                               f"{interval.confidence:.0%} interval [{interval.low:+.3f}, "
                               f"{interval.high:+.3f}] over {interval.scenarios} scenarios "
                               f"(seed {interval.seed}, {interval.resamples} resamples)",
                          {"id": "interval"}),
                  interval_chart(esc, interval.estimate, interval.low, interval.high,
                                 interval.confidence)]
    return join(parts)


def _paired_outcomes(page: Page, decision: Decision) -> Markup:
    esc = page.esc
    final = decision.paired.final_pairs().select(
        pl.col("passed").fill_null(False).alias("b"),
        pl.col(f"passed{SUFFIX}").fill_null(False).alias("c"))
    count = {(b, c): 0 for b in (True, False) for c in (True, False)}
    for b, c, n in final.group_by("b", "c").len().iter_rows():
        count[(bool(b), bool(c))] = int(n)
    name = {True: "passed", False: "failed"}
    rows = "".join(
        "<tr>" + esc.tag("th", f"baseline {name[b]}") + join(
            esc.tag("td", count[(b, c)], {"class": "num", "data-pair": f"{name[b]}-{name[c]}"})
            for c in (True, False)) + "</tr>" for b in (True, False))
    return Markup('<table class="grid" id="paired-outcomes"><thead><tr><th></th>'
                  "<th>candidate passed</th><th>candidate failed</th></tr></thead>"
                  f"<tbody>{rows}</tbody></table>")


def _cell_position(page: Page, t: CellTransition) -> int | None:
    return page.cell_positions.get((t.scenario_id, t.candidate_model, t.prompt_id,
                                      t.memory_mode))


ORDER: tuple[TransitionClass, ...] = ("new_failure", "stability_regression", "flaky", "fixed",
                                      "unpaired", "unchanged")


def transitions(page: Page, decision: Decision) -> Markup:
    esc = page.esc
    classes: dict[str, int] = {c: 0 for c in get_args(TransitionClass)}
    for t in decision.transitions:
        classes[t.transition] += 1
    counts = join(esc.tag("li", f"{c.replace('_', ' ')}: {classes[c]}",
                          {"class": "bad" if c in ("new_failure", "stability_regression")
                           and classes[c] else None, "data-class": c}) for c in ORDER)
    changed = sorted((t for t in decision.transitions if t.transition != "unchanged"),
                     key=lambda t: (ORDER.index(t.transition), not t.critical, t.cell))
    rows = []
    for t in changed:
        base, cand = t.pass_hat_k()
        position = _cell_position(page, t)
        rows.append("<tr>" + join([
            esc.tag("td", t.cell, {"class": "cell-link" if position is not None else None,
                                   "data-cell": position, "tabindex": 0 if position is not None
                                   else None}),
            esc.tag("td", "critical" if t.critical else ""),
            esc.tag("td", f"{t.baseline_k}/{t.n}",
                    {"style": rate_style(t.baseline_k / t.n) if t.n else None}),
            esc.tag("td", f"{t.candidate_k}/{t.n}",
                    {"style": rate_style(t.candidate_k / t.n) if t.n else None}),
            esc.tag("td", t.transition.replace("_", " ")),
            esc.tag("td", " ".join(f"{v:.2f}" for v in base), {"class": "num"}),
            esc.tag("td", " ".join(f"{v:.2f}" for v in cand), {"class": "num"})]) + "</tr>")
    return join([
        esc.tag("h2", "Transitions: baseline -> candidate per cell (paired repeats)"),
        esc.tag("ul", counts, {"class": "counts", "id": "transition-counts"}),
        esc.tag("h3", "paired trials"), _paired_outcomes(page, decision),
        esc.tag("h3", f"cells that changed ({len(changed)} of {len(decision.transitions)})"),
        Markup('<div class="scroll"><table class="grid" id="transitions"><thead><tr>'
               "<th>cell</th><th></th><th>baseline</th><th>candidate</th><th>class</th>"
               "<th>pass^k baseline</th><th>pass^k candidate</th></tr></thead><tbody>"
               + "".join(rows) + "</tbody></table></div>")])


def _figure(value: float | None) -> str:
    """Four significant digits (a cost per trial is small, a latency large); None unknown."""
    return "unknown" if value is None else f"{value:,.4g}"


def deltas(page: Page, decision: Decision) -> Markup:
    esc = page.esc
    rows = "".join("<tr>" + join([
        esc.tag("td", d.figure), esc.tag("td", _figure(d.baseline)),
        esc.tag("td", _figure(d.candidate)), esc.tag("td", _figure(d.delta)),
        esc.tag("td", fmt_number(d.percent, 1, " %"))]) + "</tr>" for d in decision.deltas)
    changes = join(esc.tag("li", f"{c.scenario_id}: {c.old_sha256[:12]} -> {c.new_sha256[:12]} "
                                 + (f"(reviewed: {c.review.reason})" if c.review else
                                    "(changed together with the candidate: needs review)"))
                   for c in decision.changes)
    return join([
        esc.tag("h2", "Usage per trial, baseline vs candidate"),
        esc.tag("p", "Over pairs with a final outcome on both sides; a figure any trial did not "
                     "report is unknown, and so is its delta (never 0).", {"class": "legend"}),
        Markup('<table class="grid" id="deltas"><thead><tr><th>figure</th><th>baseline</th>'
               "<th>candidate</th><th>delta</th><th>delta %</th></tr></thead><tbody>"
               + rows + "</tbody></table>"),
        join([esc.tag("h3", "expectation changes"), esc.tag("ul", changes)])
        if decision.changes else ""])
