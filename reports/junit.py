"""JUnit XML for CI: one testcase per scenario x model x prompt x memory mode of a run.

The shape pytest's own ``--junitxml`` writes (``testsuites`` > ``testsuite`` with counts,
``properties``, then ``testcase`` elements with ``classname``, ``name``, ``time`` and at most
one ``failure`` or ``error``). A cell fails when any of its final trials failed: the message
gives k/n and the first violation, the text each failed repeat's rule codes (failed check ids).
A cell with an ``incomplete`` trial and no failure is an ``error`` (infrastructure, not the
agent). Properties carry the versions (scenario version and hash, prompt hash, model version,
code version). A comparison adds its transition per cell and a testsuite for the gate.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from reports.decision import Decision
from warehouse.atomic import write_text
from warehouse.frames import frame_named
from warehouse.location import Root

CELL = ("scenario_id", "model", "prompt_id", "memory_mode")


def _rule_codes(root: Root, run_id: str) -> dict[str, list[str]]:
    failed = frame_named(root, "failed_checks", {"run_id": run_id})
    codes: dict[str, list[str]] = defaultdict(list)
    for trial_id, check_id in failed.select("trial_id", "check_id").iter_rows():
        codes[str(trial_id)].append(str(check_id))
    return codes


def _distinct(trials: pl.DataFrame, column: str) -> str:
    values = sorted({str(v) for v in trials[column].to_list() if v is not None})
    return ",".join(values) if values else "unknown"


def _properties(parent: ET.Element, values: Mapping[str, str]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=value)


def _first_violation(row: Mapping[str, Any]) -> str:
    check = row["first_violation_check"]
    if check is None:
        return str(row["error_kind"] or row["status"])
    return f"{check} at turn {row['first_violation_turn']} step {row['first_violation_step']}"


def _repeat_line(row: Mapping[str, Any], codes: Sequence[str]) -> str:
    rules = ", ".join(codes) if codes else "-"
    return (f"repeat {row['repeat']}: {row['status']}; rule codes: {rules}; first violation: "
            f"{_first_violation(row)}")


def _testcase(suite: ET.Element, trials: pl.DataFrame, codes: Mapping[str, list[str]],
              extra: Mapping[str, str]) -> str | None:
    """Append one cell's testcase; its outcome: 'failure', 'error' or None."""
    first = trials.row(0, named=True)
    case = ET.SubElement(
        suite, "testcase", classname=f"agentsweep.{first['suite_id']}.{first['scenario_id']}",
        name=f"{first['scenario_id']}[{first['model']}|{first['prompt_id']}|"
             f"{first['memory_mode']}]",
        time=f"{sum(float(v or 0) for v in trials['latency_ms'].to_list()) / 1000:.3f}")
    _properties(case, {"scenario_version": _distinct(trials, "scenario_version"),
                       "scenario_sha256": _distinct(trials, "scenario_sha256"),
                       "prompt_sha256": _distinct(trials, "prompt_sha256"),
                       "model_version": _distinct(trials, "model_version"),
                       "code_version": _distinct(trials, "code_version"), **extra})
    final = trials.filter(pl.col("status") != "incomplete")
    failed = final.filter(~pl.col("passed").fill_null(False))
    incomplete = trials.height - final.height
    if failed.height:
        rows = list(failed.iter_rows(named=True))
        message = (f"{final.height - failed.height}/{final.height} passed; first violation: "
                   f"{_first_violation(rows[0])}")
        text = "\n".join(_repeat_line(r, codes.get(str(r["trial_id"]), [])) for r in rows)
        if incomplete:
            text += f"\n{incomplete} repeat(s) incomplete (infrastructure)"
        ET.SubElement(case, "failure", message=message, type="agent").text = text
        return "failure"
    if incomplete:
        ET.SubElement(case, "error", message=f"{incomplete} repeat(s) incomplete",
                      type="incomplete").text = "infrastructure failure: resume the run"
        return "error"
    return None


def _suite(parent: ET.Element, name: str, props: Mapping[str, str]) -> ET.Element:
    suite = ET.SubElement(parent, "testsuite", name=name,
                          timestamp=datetime.now(UTC).isoformat(timespec="seconds"))
    _properties(suite, props)
    return suite


def _count(suite: ET.Element, outcomes: Sequence[str | None]) -> None:
    suite.set("tests", str(len(outcomes)))
    suite.set("failures", str(outcomes.count("failure")))
    suite.set("errors", str(outcomes.count("error")))
    suite.set("skipped", "0")
    total = sum(float(c.get("time", "0")) for c in suite.iter("testcase"))
    suite.set("time", f"{total:.3f}")


def cells_suite(parent: ET.Element, root: Root, run_id: str,
                extra: Mapping[tuple[str, ...], Mapping[str, str]] | None = None,
                props: Mapping[str, str] | None = None) -> ET.Element:
    """A testsuite of run ``run_id``: one testcase per cell (``extra``: more properties)."""
    trials = frame_named(root, "run_trials_cells", {"run_id": run_id})
    codes = _rule_codes(root, run_id)
    suite = _suite(parent, f"agentsweep.{run_id}",
                   {"run_id": run_id, "code_version": _distinct(trials, "code_version")
                    if not trials.is_empty() else "unknown", **(props or {})})
    outcomes = []
    for key, cell in trials.group_by(list(CELL), maintain_order=True):
        more = (extra or {}).get(tuple(str(k) for k in key), {})
        outcomes.append(_testcase(suite, cell, codes, more))
    _count(suite, outcomes)
    return suite


def run_junit(root: Root, run_id: str) -> ET.Element:
    document = ET.Element("testsuites", name="agentsweep")
    cells_suite(document, root, run_id)
    return document


def decision_junit(root: Root, decision: Decision) -> ET.Element:
    """The candidate's cells (with their transitions) and a testsuite for the gate's verdict."""
    document = ET.Element("testsuites", name="agentsweep")
    extra: dict[tuple[str, ...], Mapping[str, str]] = {
        (t.scenario_id, t.candidate_model, t.prompt_id, t.memory_mode):
             {"transition": t.transition, "baseline": f"{t.baseline_k}/{t.n}",
              "critical": str(t.critical).lower()} for t in decision.transitions}
    cells_suite(document, root, decision.candidate, extra, {"baseline_run_id":
                                                            decision.baseline})
    gate = _suite(document, "agentsweep.gate", {"baseline_run_id": decision.baseline,
                                                 "candidate_run_id": decision.candidate,
                                                 "verdict": decision.gate.verdict,
                                                 "thresholds": decision.gate.source})
    case = ET.SubElement(gate, "testcase", classname="agentsweep.gate",
                         name=f"{decision.candidate} vs {decision.baseline}", time="0.000")
    outcome = None
    if decision.gate.reasons:
        kind = "error" if decision.gate.verdict == "incomplete" else "failure"
        ET.SubElement(case, kind, message=f"{decision.gate.verdict}: "
                      f"{len(decision.gate.reasons)} reason(s)", type="gate"
                      ).text = "\n".join(decision.gate.reasons)
        outcome = kind
    _count(gate, [outcome])
    return document


def write_junit(path: Path, document: ET.Element) -> Path:
    """Write the XML atomically (a CI reader sees the old file or the whole new one)."""
    ET.indent(document)
    text = ET.tostring(document, encoding="unicode", xml_declaration=False)
    write_text(path, '<?xml version="1.0" encoding="utf-8"?>\n' + text + "\n")
    return path
