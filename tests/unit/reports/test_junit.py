"""JUnit XML: one testcase per scenario x model x prompt x memory mode, failures with rule
codes and the first violation, properties with the versions; the structure pytest's own
``--junitxml`` writes (xunit2: the attributes and children a CI reader knows), checked with the
standard library and read back by a real JUnit consumer (junitparser, pinned in the dev lock)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers.gate_fixtures import (
    ALL,
    NONE,
    ONE,
    base_run,
    cand_run,
    cell,
    failed_check,
    trial,
    write,
)
from junitparser import Error, Failure, JUnitXml

from reports.decision import decide
from reports.junit import decision_junit, run_junit, write_junit

SUITE_ATTRS = {"name", "tests", "failures", "errors", "skipped", "time", "timestamp",
               "hostname"}
CASE_ATTRS = {"classname", "name", "time", "file", "line"}
CASE_CHILDREN = {"properties", "failure", "error", "skipped", "system-out", "system-err"}


def _check_xunit2(path: Path) -> ET.Element:
    """The document as a strict JUnit consumer reads it: counts agree with the testcases."""
    document = ET.parse(path).getroot()
    assert document.tag == "testsuites"
    for suite in document:
        assert suite.tag == "testsuite" and set(suite.attrib) <= SUITE_ATTRS
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "-1")) == len(cases)
        assert int(suite.get("failures", "-1")) == sum(c.find("failure") is not None
                                                       for c in cases)
        assert int(suite.get("errors", "-1")) == sum(c.find("error") is not None for c in cases)
        float(suite.get("time", "x"))
        assert [c.tag for c in suite if c.tag != "testcase"] in ([], ["properties"])
        for case in cases:
            assert set(case.attrib) <= CASE_ATTRS and {"classname", "name"} <= set(case.attrib)
            assert {child.tag for child in case} <= CASE_CHILDREN
            assert len([c for c in case if c.tag in ("failure", "error", "skipped")]) <= 1
            float(case.get("time", "x"))
            for prop in case.iter("property"):
                assert set(prop.attrib) == {"name", "value"}
    _read_by_junitparser(path, document)
    return document


def _read_by_junitparser(path: Path, document: ET.Element) -> None:
    """junitparser, as a CI system's reader, sees the same suites, cases and outcomes."""
    parsed = JUnitXml.fromfile(str(path))
    suites = list(parsed)
    assert [s.name for s in suites] == [s.get("name") for s in document]
    for suite, element in zip(suites, document, strict=True):
        cases = list(suite)
        assert suite.tests == len(cases) == len(element.findall("testcase"))
        assert suite.failures == sum(any(isinstance(r, Failure) for r in c.result) for c in cases)
        assert suite.errors == sum(any(isinstance(r, Error) for r in c.result) for c in cases)
        assert [c.name for c in cases] == [c.get("name") for c in element.findall("testcase")]


def _props(case: ET.Element) -> dict[str, str]:
    return {p.get("name", ""): p.get("value", "") for p in case.iter("property")}


def test_a_run_has_one_testcase_per_cell(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    trials = [t for model in ("m/a", "m/b") for memory in ("chat", "structured")
              for t in cell("r", "S", ONE, model=model, memory=memory)]
    trials += cell("r", "T", ALL) + [trial("r", "U", 0, None, status="incomplete")]
    failing = [t for t in trials if t["passed"] is False]
    write(root, "r", trials, [failed_check(t, "missing_required:кому") for t in failing])
    document = _check_xunit2(write_junit(tmp_path / "run.xml", run_junit(root, "r")))
    (suite,) = document
    cases = suite.findall("testcase")
    assert len(cases) == 4 + 1 + 1  # S in 2 models x 2 memory modes, T, U
    assert len({c.get("name") for c in cases}) == len(cases)
    s_case = next(c for c in cases if c.get("name") == "S[m/a|default|chat]")
    failure = s_case.find("failure")
    assert failure is not None
    assert failure.get("message") == "1/3 passed; first violation: response:claim@1 at turn 1 " \
                                     "step 0"
    assert "rule codes: missing_required:кому" in (failure.text or "")
    assert _props(s_case)["scenario_version"] == "1" and "code_version" in _props(s_case)
    u_case = next(c for c in cases if c.get("name", "").startswith("U["))
    error = u_case.find("error")
    assert error is not None and error.get("type") == "incomplete"


def test_a_comparison_adds_transitions_and_the_gate(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    base_run(root)
    cand_run(root)
    decision = decide(root, "base", "cand", critical=frozenset({"CRIT"}))
    document = _check_xunit2(write_junit(tmp_path / "c.xml", decision_junit(root, decision)))
    cells, gate = document
    assert len(cells.findall("testcase")) == 6
    crit = next(c for c in cells.findall("testcase") if c.get("name", "").startswith("CRIT"))
    assert _props(crit) | {"transition": "new_failure", "critical": "true"} == _props(crit)
    (verdict,) = gate.findall("testcase")
    failure = verdict.find("failure")
    assert failure is not None and "new critical regression: CRIT" in (failure.text or "")


@pytest.mark.parametrize("passes", [NONE])
def test_every_cell_failing_is_counted(tmp_path: Path, passes: list[bool]) -> None:
    root = tmp_path / "warehouse"
    write(root, "r", cell("r", "A", passes) + cell("r", "B", passes))
    (suite,) = _check_xunit2(write_junit(tmp_path / "r.xml", run_junit(root, "r")))
    assert suite.get("failures") == "2" and suite.get("tests") == "2"


@pytest.mark.slow
def test_run_and_gate_write_junit_as_a_user_runs_them(tmp_path: Path) -> None:
    """`agentsweep run --junit` and `agentsweep gate --junit`, in fresh processes (reference
    models: the mutant books despite the user's "stop" in F1)."""
    import os
    import subprocess
    import sys

    from conftest import MEETING_SUITE

    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env["AGENTSWEEP_HOME"] = str(tmp_path / "home")
    agentsweep = str(Path(sys.executable).parent / "agentsweep")
    grid = ("--suite", str(MEETING_SUITE), "--scenario", "V1", "--scenario", "F1",
            "--memory-mode", "chat", "--repeats", "2")
    for run_id, model in (("j-a", "reference/golden"), ("j-b", "reference/mutant-ignores-switch")):
        done = subprocess.run([agentsweep, "run", *grid, "--model", model, "--run-id", run_id,
                               "--junit", str(tmp_path / f"{run_id}.xml")], env=env,
                              capture_output=True, text=True, timeout=400, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    (suite,) = _check_xunit2(tmp_path / "j-b.xml")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    gate = subprocess.run([agentsweep, "gate", "j-b", "--baseline", "j-a", "--junit",
                           str(tmp_path / "gate.xml")], env=env, capture_output=True, text=True,
                          timeout=200, check=False)
    assert gate.returncode == 1, gate.stdout + gate.stderr
    cells, verdict = _check_xunit2(tmp_path / "gate.xml")
    assert cells.get("tests") == "2" and verdict.get("failures") == "1"
