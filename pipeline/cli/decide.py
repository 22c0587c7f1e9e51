"""``agentsweep compare`` and ``agentsweep gate``: read the inputs, decide (``reports``), print,
store the decision record, write JUnit XML; the exit code.

compare: 0, or 1 with ``--fail-on-new-regression`` when a cell regressed (new_failure or
stability_regression); gate: 0 admit, 1 block; both: 3 with one line when the baseline or the
candidate has incomplete trials (resume them first), and 2 for bad input (a missing
run, nothing shared, a gate config with an unknown key, a review of an unknown scenario).
"""

from __future__ import annotations

import json

from rich.console import Console

from pipeline.catalog import CatalogError
from pipeline.cli.fit import Narrowing
from pipeline.cli.tables import print_table
from pipeline.decide.decision import DecideOptions, make_decision
from pipeline.errors import ExitCode
from reports import (
    ComparisonInputError,
    Decision,
    decision_json,
    decision_junit,
    store_decision,
    write_junit,
)
from reports.decision import verdict_line
from warehouse.location import Root
from warehouse.writer import WarehouseError

TRANSITION_COLUMNS = ("scenario", "model", "prompt", "memory", "critical", "passes base -> cand",
                      "class", "pass^k cand (k=1..n)")
TRANSITION_NARROWING = Narrowing(spare=("pass^k cand (k=1..n)",))
"""On a narrow terminal pass^k goes first: the class and the passes say what changed."""


def _print_table(console: Console, decision: Decision, gate: str,
                 all_cells: bool = False) -> None:
    """The comparison's tables, notes and interval, and the gate's verdict as a preview (the
    command ``gate`` applies it)."""
    _print_transitions(console, decision, all_cells)
    _print_deltas(console, decision)
    for change in decision.changes:
        state = (f"reviewed: {change.review.reason}" if change.review else
                 "changed together with the candidate: needs review")
        console.print(f"expectation change {change.scenario_id}: {change.old_sha256[:12]} -> "
                      f"{change.new_sha256[:12]} ({state})", markup=False)
    interval = decision.interval
    if interval is not None:
        console.print(f"pass-rate difference (cand - base, mean over {interval.scenarios} "
                      f"scenarios): {interval.estimate:+.3f}; paired bootstrap "
                      f"{interval.confidence:.0%} interval [{interval.low:+.3f}, "
                      f"{interval.high:+.3f}] (seed {interval.seed}, {interval.resamples} "
                      "resamples)", markup=False)
    _print_verdict(console, decision, preview_of=gate)


def _print_transitions(console: Console, decision: Decision, all_cells: bool) -> None:
    """One row per cell whose class is not ``unchanged`` (every cell with ``all_cells``), and a
    line counting the unchanged cells left out: those are most of a comparison and say
    nothing about the candidate."""
    shown = [t for t in decision.transitions if all_cells or t.transition != "unchanged"]
    title = f"{decision.candidate} vs {decision.baseline}: transitions (paired repeats)"
    hidden = len(decision.transitions) - len(shown)
    if not shown and hidden:
        console.print(f"{title}: none changed; {hidden} unchanged cell(s) not shown (--all "
                      "shows them)", markup=False, highlight=False)
        return
    rows = []
    for t in shown:
        model = (t.candidate_model if t.baseline_model == t.candidate_model
                 else f"{t.baseline_model} -> {t.candidate_model}")
        rows.append((t.scenario_id, model, t.prompt_id, t.memory_mode,
                     "yes" if t.critical else "", t.label, t.transition,
                     " ".join(f"{v:.2f}" for v in t.pass_hat_k()[1])))
    print_table(console, TRANSITION_COLUMNS, rows, title, narrowing=TRANSITION_NARROWING)
    if hidden:
        console.print(f"{hidden} unchanged cell(s) not shown (--all shows them)",
                      markup=False, highlight=False)


def _fmt(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.4g}"


def _print_deltas(console: Console, decision: Decision) -> None:
    rows = [(d.figure, _fmt(d.baseline), _fmt(d.candidate), _fmt(d.delta), _fmt(d.percent))
            for d in decision.deltas]
    print_table(console, ("figure", "baseline", "candidate", "delta", "delta %"), rows,
                "usage per trial (unknown stays unknown)")


def gate_command(options: DecideOptions) -> str:
    """The ``agentsweep gate`` command that applies the verdict a comparison previews."""
    words = ["agentsweep gate", options.candidate, "--baseline", options.baseline]
    for flag, value in (("--config", options.config), ("--review", options.review)):
        if value is not None:
            words += [flag, str(value)]
    words += [f"--catalog {c}" for c in options.catalogs]
    return " ".join(words)


def _print_verdict(console: Console, decision: Decision, preview_of: str | None = None) -> None:
    """The gate's verdict and its exit code; as a preview (``compare``, which exits 0 whatever
    the verdict), with the command that applies it."""
    gate = decision.gate
    verdict = gate.verdict.upper()
    console.print(f"gate: {verdict} (exit {gate.exit_code})" if preview_of is None else
                  f"gate preview: {verdict}; `{preview_of}` applies it (exit {gate.exit_code})",
                  markup=False, soft_wrap=True)
    for reason in gate.reasons:
        console.print(f"  - {reason}", markup=False, soft_wrap=True)
    for note in gate.notes:
        console.print(f"  note: {note}", markup=False, soft_wrap=True)
    console.print(f"  thresholds: {gate.source}", markup=False, highlight=False)
    if preview_of is None:  # the last line, as the flows end: the verdict for a script
        console.print(verdict_line(decision), markup=False, highlight=False, soft_wrap=True)


def _emit(root: Root, decision: Decision, options: DecideOptions, console: Console,
          verdict_only: bool, all_cells: bool = False) -> None:
    store_decision(root, decision)
    if options.junit is not None:
        write_junit(options.junit, decision_junit(root, decision))
    if options.output_format == "json":
        console.print_json(json.dumps(decision_json(decision)))
    elif verdict_only:
        _print_verdict(console, decision)
    else:
        _print_table(console, decision, gate_command(options), all_cells)


def _decided(root: Root, options: DecideOptions, err: Console) -> Decision | None:
    try:
        return make_decision(root, options)
    except (CatalogError, ComparisonInputError, WarehouseError) as exc:
        err.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return None


def _waiting(root: Root, decision: Decision, options: DecideOptions, console: Console,
             command: str) -> bool:
    """A run of the pair is incomplete: the record is stored and one line says which run to
    resume (exit 3); nothing is decided on trials that have no final outcome."""
    waiting = decision.gate.waiting_for
    if not waiting:
        return False
    store_decision(root, decision)
    if options.junit is not None:
        write_junit(options.junit, decision_junit(root, decision))
    runs = "; ".join(
        f"incomplete {'run' if run == decision.candidate else 'baseline'}: {count} trial(s) "
        f"of {run} have no final outcome (infrastructure)" for run, count in waiting.items())
    resume = "; ".join(f"agentsweep run --run-id {run} --resume" for run in waiting)
    console.print(f"{command}: INCOMPLETE (exit {ExitCode.INCOMPLETE}): {runs}; resume: {resume}",
                  markup=False, highlight=False, soft_wrap=True)
    return True


def compare_main(root: Root, options: DecideOptions, console: Console, err: Console,
                 all_cells: bool = False) -> int:
    """``agentsweep compare``; ``all_cells`` lists the unchanged cells too."""
    decision = _decided(root, options, err)
    if decision is None:
        return ExitCode.BAD_INPUT
    if _waiting(root, decision, options, console, "compare"):
        return ExitCode.INCOMPLETE
    _emit(root, decision, options, console, verdict_only=False, all_cells=all_cells)
    if options.fail_on_new_regression and decision.regressions():
        cells = "; ".join(f"{t.cell} {t.label} ({t.transition})" for t in decision.regressions())
        err.print(f"new regression(s): {cells}", markup=False, soft_wrap=True)
        return ExitCode.BLOCKED
    return ExitCode.OK


def gate_main(root: Root, options: DecideOptions, console: Console, err: Console) -> int:
    decision = _decided(root, options, err)
    if decision is None:
        return ExitCode.BAD_INPUT
    if _waiting(root, decision, options, console, "gate"):
        return ExitCode.INCOMPLETE
    _emit(root, decision, options, console, verdict_only=True)
    return decision.gate.exit_code
