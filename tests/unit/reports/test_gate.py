"""Release decisions (issue 10): compare classes each transition, the gate lists every reason
and exits 1, admits (exit 0) once the critical case is fixed and the edited expectation
reviewed; bad input exits 2; incomplete exits 3; unknown cost is a reason, never a silent 0."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from helpers.commands import cli
from helpers.gate_fixtures import ALL, NEW, OLD, base_run, cand_run, cell, run_row, trial, write
from helpers.verdicts import assert_one_verdict

from reports.decision import decide, decision_json
from reports.gate import MINOR_CELLS_LISTED, Thresholds, minor_regressions_note
from reports.transitions import CellTransition
from warehouse.frames import frame_named
from warehouse.query import run_sql
from warehouse.writer import WarehouseWriter

GATE_YAML = "overall_pass_rate: 0.7\nmax_latency_regression_percent: 50\nmax_cost_usd: 1.0\n" \
            "critical: [CRIT]\nregressions: critical\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    base_run(home / "warehouse")
    cand_run(home / "warehouse")
    (tmp_path / "gate.yaml").write_text(GATE_YAML, "utf-8")
    return home


def _review(path: Path, scenario: str = "EDIT") -> Path:
    path.write_text(f"reviews:\n  - scenario_id: {scenario}\n    old_sha256: {OLD}\n"
                    f"    new_sha256: {NEW}\n    reason: the contract changed\n", "utf-8")
    return path


def test_compare_classes_each_transition(home: Path) -> None:
    code, out, _ = cli("compare", "base", "cand", "--format", "json", "--config",
                        str(home.parent / "gate.yaml"))
    assert code == 0
    data = json.loads(out)
    classes = {t["scenario_id"]: (t["transition"], t["critical"]) for t in data["transitions"]}
    assert classes == {"CRIT": ("new_failure", True), "STAB": ("stability_regression", False),
                       "FIX": ("fixed", False), "FLAKY": ("flaky", False),
                       "EDIT": ("unchanged", False), "SAME": ("unchanged", False)}
    stab = next(t for t in data["transitions"] if t["scenario_id"] == "STAB")
    assert (stab["baseline"], stab["candidate"]) == ("3/3", "1/3")
    assert stab["pass_hat_k_candidate"] == [pytest.approx(1 / 3), 0.0, 0.0]
    assert data["expectation_changes"] == [{"scenario_id": "EDIT", "old_sha256": OLD,
                                            "new_sha256": NEW, "reviewed": False,
                                            "reason": None}]
    assert data["bootstrap"]["resamples"] == 5000 and data["bootstrap"]["seed"] == 7
    code, _, err = cli("compare", "base", "cand", "--fail-on-new-regression")
    assert code == 1 and "CRIT" in err and "STAB" in err


def test_the_gate_blocks_with_every_reason_then_admits(home: Path, tmp_path: Path) -> None:
    gate_yaml = str(tmp_path / "gate.yaml")
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--config", gate_yaml)
    assert code == 1, out
    assert "BLOCK" in out
    for reason in ("new critical regression: CRIT", "overall pass rate 12/18",
                   "state violation in 3 trial(s): CRIT",
                   "expectation change not reviewed: EDIT"):
        assert reason in out, reason
    assert "STAB" not in out.split("gate:")[1].split("note:")[0]  # not critical: no reason
    assert "regressions in non-critical scenarios (not blocking): STAB/m/a/default/chat " \
           "3/3 -> 1/3" in out
    cand_run(home / "warehouse", "cand2", crit_fixed=True)
    review = str(_review(tmp_path / "review.yaml"))
    code, out, _ = cli("gate", "cand2", "--baseline", "base", "--config", gate_yaml)
    assert code == 1 and "expectation change not reviewed: EDIT" in out
    assert "new critical regression" not in out
    code, out, _ = cli("gate", "cand2", "--baseline", "base", "--config", gate_yaml,
                        "--review", review)
    assert code == 0, out
    assert "ADMIT" in out
    stored = frame_named(home / "warehouse", "paired_trials", {"baseline": "base",
                                                               "candidate": "cand2"})
    assert stored.height == 36
    rows = run_sql(home / "warehouse", "SELECT verdict, count(*) FROM comparisons WHERE "
                   "run_id = $run_id GROUP BY ALL ORDER BY 1", {"run_id": "cand2"}).rows
    assert rows == [("admit", 6), ("block", 6)]


def test_unknown_cost_is_a_reason_or_an_explicit_pass(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    write(root, "b", cell("b", "S", ALL))
    write(root, "c", [*cell("c", "S", ALL[:2]), trial("c", "S", 2, True, cost=None)])
    limits = Thresholds(max_cost_usd=1.0, max_cost_regression_percent=10)
    decision = decide(root, "b", "c", thresholds=limits)
    cost = next(d for d in decision.deltas if d.figure == "cost_usd_per_trial")
    assert cost.baseline == pytest.approx(0.01) and cost.candidate is None
    assert cost.delta is None and cost.percent is None
    assert decision.gate.verdict == "block"
    assert [r for r in decision.gate.reasons if "unknown" in r] == [
        "cost total unknown (not reported), limit 1 USD",
        "cost regression per trial unknown (not reported), limit 10%"]
    lenient = decide(root, "b", "c", thresholds=Thresholds(max_cost_usd=1.0, unknown_cost="pass"))
    assert lenient.gate.verdict == "admit"
    assert any("cost total unknown: passed explicitly" in n for n in lenient.gate.notes)
    assert "no latency regression (p95) limit set" in lenient.gate.notes


def test_an_incomplete_trial_blocks_with_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                ) -> None:
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path))
    root = tmp_path / "warehouse"
    write(root, "b", cell("b", "S", ALL))
    write(root, "c", [*cell("c", "S", ALL[:2]), trial("c", "S", 2, None, status="incomplete")])
    code, out, _ = cli("gate", "c", "--baseline", "b")
    assert code == 3 and "incomplete run: 1 trial(s)" in out


def test_a_model_swap_pairs_across_models(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    write(root, "a", [*cell("a", "S", ALL, model="m/a"), *cell("a", "T", ALL, model="m/a")])
    write(root, "b", [*cell("b", "S", ALL, model="m/b"),
                      *cell("b", "T", [True, False, True], model="m/b")])
    decision = decide(root, "a", "b")
    assert not decision.paired.by_model
    assert [(t.scenario_id, t.baseline_model, t.candidate_model, t.transition)
            for t in decision.transitions] == [("S", "m/a", "m/b", "unchanged"),
                                               ("T", "m/a", "m/b", "stability_regression")]


@pytest.mark.parametrize("case", ["no_shared", "missing_run", "unknown_key", "unknown_review"])
def test_bad_input_is_a_clear_error_and_exit_2(case: str, home: Path, tmp_path: Path) -> None:
    args = ["gate", "cand", "--baseline", "base"]
    if case == "no_shared":
        write(home / "warehouse", "other", cell("other", "ELSEWHERE", ALL))
        args = ["compare", "base", "other"]
        expected = "no shared scenarios"
    elif case == "missing_run":
        args = ["gate", "nope", "--baseline", "base"]
        expected = "candidate: no run 'nope' in the warehouse"
    elif case == "unknown_key":
        bad = tmp_path / "bad.yaml"
        bad.write_text("overall_pass_rate: 0.9\noverall_passrate: 0.9\n", "utf-8")
        args += ["--config", str(bad)]
        expected = f"{bad}:2: overall_passrate: unknown key; did you mean 'overall_pass_rate'?"
    else:
        args += ["--review", str(_review(tmp_path / "r.yaml", "GHOST"))]
        expected = "names scenario(s) neither run holds: GHOST"
    code, out, err = cli(*args)
    assert code == 2, out + err
    assert expected in err.replace("\n", "")


def test_critical_comes_from_the_scenarios_of_the_runs_suites(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``"critical": true`` on a scenario of a suite the runs ran marks it (no gate config)."""
    from conftest import MEETING_SUITE

    from pipeline.decide import decision as decide_command
    lines = [json.loads(line) for line in MEETING_SUITE.read_text("utf-8").splitlines()
             if line.strip() and not line.startswith("//")]
    for scenario in lines:
        scenario["critical"] = scenario["id"] == "F1"
    suite = tmp_path / "gate_suite.jsonl"
    suite.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in lines), "utf-8")
    monkeypatch.setattr(decide_command, "known_suites", lambda: {"gate_suite": suite})
    root = tmp_path / "warehouse"
    write(root, "b", cell("b", "F1", ALL) + cell("b", "V1", ALL))
    write(root, "c", cell("c", "F1", [False] * 3) + cell("c", "V1", [False] * 3))
    assert decide_command.critical_scenarios(root, "b", "c") == (frozenset({"F1"}), [])
    decision = decide_command.make_decision(root, decide_command.DecideOptions("b", "c"))
    assert [r for r in decision.gate.reasons if "critical" in r] == [
        "new critical regression: F1/m/a/default/chat 3/3 -> 0/3 (new_failure)"]


def test_thresholds_come_from_the_recorded_config_unless_the_gate_file_sets_them(
        home: Path, tmp_path: Path) -> None:
    write_run = run_row("cand", {"repeats": 3, "thresholds": {"overall_pass_rate": 0.99,
                                                              "max_cost_usd": 0.001}})
    WarehouseWriter(home / "warehouse", "cand").write_batch({"runs": [write_run]})
    code, out, _ = cli("gate", "cand", "--baseline", "base")
    assert code == 1
    assert "overall pass rate 12/18 = 0.667 is below 0.99" in out
    assert "cost total 0.18 USD exceeds the limit 0.001 USD" in out
    lenient = tmp_path / "lenient.yaml"
    lenient.write_text("overall_pass_rate: 0.5\n", "utf-8")
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--config", str(lenient))
    assert "overall pass rate" not in out.split("note:")[0]  # the file's 0.5 wins
    assert "cost total 0.18 USD exceeds the limit 0.001 USD" in out  # the run's limit stays


def test_a_dropped_critical_scenario_blocks_and_two_grids_of_one_model_are_refused(
        tmp_path: Path) -> None:
    from reports.paired import ComparisonInputError

    root = tmp_path / "warehouse"
    write(root, "b", cell("b", "S", ALL) + cell("b", "K", ALL) + cell("b", "Q", ALL))
    write(root, "c", cell("c", "S", ALL) + cell("c", "NEWONE", ALL))
    decision = decide(root, "b", "c", critical=frozenset({"K"}))
    assert "critical scenario K is not in the candidate run" in decision.gate.reasons
    assert "not in the candidate run: Q" in decision.gate.notes
    assert "only in the candidate run (not compared): NEWONE" in decision.gate.notes
    twice = [*cell("d", "S", ALL), *[dict(t, trial_id=t["trial_id"] + "-t1",
                                          attempt_id=t["attempt_id"] + "-t1")
                                     for t in cell("d", "S", ALL)]]
    write(root, "d", twice)
    with pytest.raises(ComparisonInputError, match="2 trials on one pairing key"):
        decide(root, "b", "d")


def _regressed(scenario: str, mode: str) -> CellTransition:
    return CellTransition(scenario, "default", mode, "m/a", "m/b", False, 3, 0, 3, "new_failure",
                          OLD, OLD)


def test_many_minor_regressions_are_counted_per_scenario_not_listed_one_by_one() -> None:
    few = [_regressed("A", mode) for mode in ("chat", "summary")]
    assert minor_regressions_note(few).endswith(
        "A/m/a->m/b/default/chat 3/3 -> 0/3; A/m/a->m/b/default/summary 3/3 -> 0/3")
    many = [_regressed(s, mode) for s in ("A", "B") for mode in ("chat", "summary", "structured")]
    assert len(many) > MINOR_CELLS_LISTED
    note = minor_regressions_note(many)
    assert note.endswith("6 cells in 2 scenarios: A (3), B (3); `agentsweep compare --format "
                         "json` lists every cell")
    assert "3/3 -> 0/3" not in note


SCENARIOS = ("A", "B", "C", "D", "E", "F")
LATENCY_LIMIT = Thresholds(max_latency_regression_percent=20, overall_pass_rate=0.9)


def _timed_run(root: Path, run_id: str, latency: Callable[[int], float], *,
               model: str = "m/a", access: str | None = None,
               scenarios: Sequence[str] = SCENARIOS) -> None:
    """Every trial passes; the i-th trial of the run took ``latency(i)`` ms."""
    trials = [trial(run_id, s, r, True, model=model, access=access,
                    latency=latency(3 * n + r))
              for n, s in enumerate(scenarios) for r in range(3)]
    write(root, run_id, trials)


def _jitter(base: float, spread: float) -> Callable[[int], float]:
    """A busy machine: each trial somewhat slower or faster, in a fixed pattern."""
    return lambda i: base + spread * ((i * 7) % 5) / 4


def test_latency_jitter_of_a_reference_model_admits_with_a_note(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    _timed_run(root, "ref-a", _jitter(40, 5), model="reference/golden", access="reference")
    _timed_run(root, "ref-b", _jitter(40, 60), model="reference/golden", access="reference")
    decision = decide(root, "ref-a", "ref-b", thresholds=LATENCY_LIMIT)
    latency = next(d for d in decision.deltas if d.figure == "latency_ms_p95")
    assert latency.percent is not None and latency.percent > 20  # the figure did move
    assert decision.gate.verdict == "admit", decision.gate.reasons
    (note,) = [n for n in decision.gate.notes if "latency" in n]
    assert note.startswith("not enough evidence for a latency regression (p95)")
    assert "reference/golden answered in process" in note


def test_latency_jitter_within_the_floor_admits_and_a_real_regression_blocks(
        tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    _timed_run(root, "base", _jitter(400, 50))
    _timed_run(root, "jitter", _jitter(400, 200))  # p95 +37%, +150 ms: noise
    _timed_run(root, "slow", _jitter(1400, 50))    # +1000 ms on every trial
    jitter = decide(root, "base", "jitter", thresholds=LATENCY_LIMIT)
    assert jitter.gate.verdict == "admit", jitter.gate.reasons
    assert any(n.startswith("not enough evidence for a latency regression (p95)")
               and "within the noise floor 250 ms" in n for n in jitter.gate.notes)
    slow = decide(root, "base", "slow", thresholds=LATENCY_LIMIT)
    assert slow.gate.verdict == "block"
    p95 = next(d for d in decision_json(slow)["deltas"] if d["figure"] == "latency_ms_p95")
    assert (p95["delta"], p95["paired_trials"]) == (1000, 18)
    (reason,) = slow.gate.reasons
    assert reason.startswith("latency regression (p95) 222.2% exceeds the limit 20% (+1000 ms "
                             "over 18 paired trials; noise floor 250 ms)"), reason
    floor = decide(root, "base", "slow", thresholds=Thresholds(
        max_latency_regression_percent=20, latency_floor_ms=2000))
    assert floor.gate.verdict == "admit", floor.gate.reasons  # the config's floor applies


def test_too_few_paired_trials_are_not_evidence_of_a_regression(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    _timed_run(root, "base", lambda i: 1000.0, scenarios=["A", "B"])
    _timed_run(root, "cand", lambda i: 5000.0, scenarios=["A", "B"])
    decision = decide(root, "base", "cand", thresholds=LATENCY_LIMIT)
    assert decision.gate.verdict == "admit", decision.gate.reasons
    assert any("measured on 6 paired trial(s) of both runs, fewer than min_paired_trials 10"
               in n for n in decision.gate.notes)
    strict = decide(root, "base", "cand", thresholds=Thresholds(
        max_latency_regression_percent=20, min_paired_trials=6))
    assert strict.gate.verdict == "block" and "latency regression (p95) 400%" in \
        strict.gate.reasons[0]


def test_a_cost_regression_below_the_floor_is_noise_above_it_blocks(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    limits = Thresholds(max_cost_regression_percent=10)
    for run_id, cost in (("base", 0.0010), ("cheap", 0.0015), ("dear", 0.0100)):
        write(root, run_id, [trial(run_id, s, r, True, cost=cost)
                             for s in SCENARIOS for r in range(3)])
    cheap = decide(root, "base", "cheap", thresholds=limits)  # +50%, +0.0005 USD a trial
    assert cheap.gate.verdict == "admit", cheap.gate.reasons
    assert any("cost regression per trial" in n and "noise floor 0.001 USD" in n
               for n in cheap.gate.notes)
    dear = decide(root, "base", "dear", thresholds=limits)
    assert dear.gate.verdict == "block"
    assert dear.gate.reasons[0].startswith("cost regression per trial 900% exceeds the limit")


def test_the_gate_config_states_the_floors(tmp_path: Path) -> None:
    from pipeline.decide.files import load_gate_config, thresholds

    path = tmp_path / "gate.yaml"
    path.write_text("latency_floor_ms: 500\ncost_floor_usd: 0.01\nmin_paired_trials: 30\n",
                    "utf-8")
    limits = thresholds(load_gate_config(path), None)
    assert (limits.latency_floor_ms, limits.cost_floor_usd, limits.min_paired_trials) == (
        500, 0.01, 30)
    defaults = Thresholds()
    assert (defaults.latency_floor_ms, defaults.cost_floor_usd, defaults.min_paired_trials) == (
        250, 0.001, 10)


def test_two_real_runs_of_a_reference_model_admit_whatever_their_latency(
        tmp_path: Path) -> None:
    """Trials of reference/golden run in process, the second run's measured latencies tripled
    (a busy machine; well above the floor): the view carries their access channel, and the
    gate reads no regression from them."""
    from conftest import MEETING_SUITE, loaded_suite

    from pipeline.sweep.grid import ModelConfig, expand
    from pipeline.trial.run import RunContext, run_trial, tables_of

    root = tmp_path / "warehouse"
    specs = list(expand([loaded_suite(MEETING_SUITE)], [ModelConfig("reference/golden")],
                        ["default"], ["chat"], 1))
    measured: list[float] = []
    for run_id in ("ref-a", "ref-b"):
        tables = tables_of([run_trial(spec, RunContext(run_id, "test")) for spec in specs])
        measured = measured or [float(row["latency_ms"]) for row in tables["trials"]]
        for row, base in zip(tables["trials"], measured, strict=True):
            # tripled, plus a second: well above the floor whatever the in-process base
            row["latency_ms"] = (base * 3 + 1000 if run_id == "ref-b" else base) + 300
        WarehouseWriter(root, run_id).write_batch(tables)
    decision = decide(root, "ref-a", "ref-b", thresholds=LATENCY_LIMIT)
    assert set(decision.paired.pairs["access_channel"].to_list()) == {"reference"}
    assert decision.gate.verdict == "admit", decision.gate.reasons
    assert any("reference/golden answered in process" in n for n in decision.gate.notes), \
        (decision.gate.notes, decision.deltas)


def test_a_sweeps_spend_cap_is_not_read_as_the_gates_cost_threshold(tmp_path: Path) -> None:
    """``max_cost_usd`` / ``unknown_cost`` at the top of a sweep's config are its spend cap
    (pipeline.sweep.config); the gate's thresholds of the same names live under
    ``thresholds``."""
    from reports.decision import recorded_thresholds

    root = tmp_path / "warehouse"
    WarehouseWriter(root, "capped").write_batch({"runs": [run_row("capped", {
        "max_cost_usd": 5.0, "unknown_cost": "refuse",
        "thresholds": {"max_cost_usd": 2.0, "overall_pass_rate": 0.9}})]})
    assert recorded_thresholds(root, "capped") == {"max_cost_usd": 2.0, "overall_pass_rate": 0.9}
    WarehouseWriter(root, "legacy").write_batch({"runs": [run_row("legacy", {
        "overall_pass_rate": 0.8})]})
    assert recorded_thresholds(root, "legacy") == {"overall_pass_rate": 0.8}


def test_without_a_config_the_default_gate_blocks_any_new_regression(home: Path,
                                                                     tmp_path: Path) -> None:
    """No gate file, nothing recorded: STAB (not critical) 3/3 -> 1/3 is a reason, and compare's
    preview never says ADMIT; a file with ``regressions: critical`` makes it a note."""
    code, out, _ = cli("compare", "base", "cand")
    assert code == 0, out
    assert "ADMIT" not in out
    assert "gate preview: BLOCK" in out
    reason = next(line for line in out.splitlines() if "new regression in " in line)
    assert "STAB/m/a/default/chat 3/3 -> 1/3" in reason
    assert "thresholds: the default gate" in out
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--format", "json")
    record = json.loads(out)["gate"]
    assert code == 1 and record["verdict"] == "block"
    assert record["thresholds"]["regressions"] == "any"
    assert record["line"].startswith("BLOCK: cand against base: ")
    relaxed = tmp_path / "relaxed.yaml"
    relaxed.write_text("regressions: critical\ninterval_below_zero: note\n", "utf-8")
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--config", str(relaxed))
    assert "new regression in STAB" not in out
    note = next(line for line in out.splitlines() if "(not blocking): " in line)
    assert "STAB/m/a/default/chat 3/3 -> 1/3" in note
    assert f"thresholds: gate config {relaxed}" in out


def _declining(root: Path, run_id: str, passes: list[bool]) -> None:
    write(root, run_id, [t for s in ("S1", "S2", "S3", "S4", "S5")
                         for t in cell(run_id, s, passes)])


def test_an_interval_wholly_below_zero_blocks_by_default_without_any_regression(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every scenario 2/3 -> 1/3 is flaky, never a regression class; the candidate is still
    worse at 90%: the default gate blocks on the interval, ``interval_below_zero: note`` admits
    and says so."""
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    root = tmp_path / "home" / "warehouse"
    _declining(root, "base", [True, True, False])
    _declining(root, "cand", [True, False, False])
    code, out, _ = cli("gate", "cand", "--baseline", "base")
    assert code == 1, out
    assert "is wholly below zero" in out.split("note:")[0]
    (tmp_path / "gate.yaml").write_text("interval_below_zero: note\n", "utf-8")
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--config",
                        str(tmp_path / "gate.yaml"))
    assert code == 0, out
    assert "wholly below zero" in out and "not a reason to block" in out


def test_a_blocking_gate_says_block_in_every_output(home: Path, tmp_path: Path) -> None:
    """The gate's door: its last line and exit code, the HTML report of the same pair, its
    JUnit and the viewer's runs index say the one verdict."""
    junit, html = tmp_path / "gate.xml", tmp_path / "report.html"
    code, out, _ = cli("gate", "cand", "--baseline", "base", "--junit", str(junit))
    report_code, _, err = cli("report", "html", "--run-id", "cand", "--baseline", "base", "-o",
                              str(html))
    assert report_code == 0, err
    assert_one_verdict("block", candidate="cand", root=home / "warehouse", code=code,
                       last_line=out.strip().splitlines()[-1], html=html, junit=junit)
