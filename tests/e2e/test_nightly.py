"""The nightly flow: its deployment registered on a real Prefect server (loopback, own home), the
baseline comparison SQL over a small warehouse, and the flow end to end on the session's Ray."""

from __future__ import annotations

import csv
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pyarrow as pa
import pytest
from conftest import MEETING_SUITE, REPO

from reports import previous_nightly_run, write_comparison
from warehouse.schema import TABLES
from warehouse.writer import WarehouseWriter

BIN = Path(sys.executable).parent
T0 = datetime(2026, 5, 1, 2, 0, tzinfo=UTC)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update({"PREFECT_SERVER_ANALYTICS_ENABLED": "false", "DO_NOT_TRACK": "1",
                "PREFECT_UI_ENABLED": "false", "PREFECT_LOGGING_LEVEL": "WARNING", **extra})
    return env


def _stop(proc: subprocess.Popen[bytes], first: int = signal.SIGINT, grace: float = 15) -> None:
    """Stop a process started in its own session, then whatever is left of its group."""
    if proc.poll() is None:
        proc.send_signal(first)
        try:
            proc.wait(grace)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # the group is this process's own session
    except ProcessLookupError:
        pass
    proc.wait(5)


@pytest.fixture
def prefect_server(tmp_path: Path) -> Iterator[str]:
    """A real `prefect server start` on 127.0.0.1 with its own PREFECT_HOME; yields the API URL."""
    port = _free_port()
    log = (tmp_path / "server.log").open("wb")
    proc = subprocess.Popen(
        [str(BIN / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
        env=_clean_env(PREFECT_HOME=str(tmp_path / "prefect-home")), stdout=log,
        stderr=subprocess.STDOUT, start_new_session=True)
    api = f"http://127.0.0.1:{port}/api"
    try:
        deadline = time.monotonic() + 180  # a hang guard
        while True:
            assert proc.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if httpx.get(f"{api}/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "Prefect server not healthy after 180 s"
            time.sleep(0.5)
        yield api
    finally:
        _stop(proc, signal.SIGTERM)
        log.close()


@pytest.mark.slow
def test_serve_registers_the_nightly_deployment_on_a_prefect_server(
        prefect_server: str, tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = REPO / "infra" / "sweeps" / "nightly.yaml"
    log = (tmp_path / "serve.log").open("wb")
    serve = subprocess.Popen(
        [sys.executable, "-m", "flows.nightly", "serve", "--spec", str(spec)],
        cwd=REPO, env=_clean_env(PREFECT_API_URL=prefect_server, AGENTSWEEP_HOME=str(home)),
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"{prefect_server}/deployments/name/agentsweep-nightly/nightly"
    try:
        deadline = time.monotonic() + 120  # a hang guard
        while (answer := httpx.get(url, timeout=5)).status_code == 404:
            assert serve.poll() is None, (tmp_path / "serve.log").read_text()
            assert time.monotonic() < deadline, "deployment not registered after 120 s"
            time.sleep(0.5)
        assert answer.status_code == 200, answer.text
        deployment: dict[str, Any] = answer.json()
        assert [s["schedule"]["cron"] for s in deployment["schedules"]] == ["0 2 * * *"]
        assert all(s["active"] for s in deployment["schedules"])
        assert deployment["parameters"] == {"spec_path": str(spec),
                                            "baseline_run_id": "previous", "gate_config": None}
        assert deployment["entrypoint"].endswith("nightly.py:nightly")
        said = (tmp_path / "serve.log").read_text("utf-8", "replace")
        assert (f"serving deployment agentsweep-nightly/nightly on the Prefect API at "
                f"{prefect_server}") in said and "next run at 20" in said
        assert not home.joinpath("warehouse").exists()  # registering runs nothing
        # A run triggered from the deployment (as the UI's "Quick run" does): named after its
        # run id, tagged, its verdict in the serve log and in its state.
        small = tmp_path / "small.yaml"
        small.write_text(f"suites: [{MEETING_SUITE}]\nscenarios: [F1]\nrepeats: 1\n"
                         "memory_modes: [chat]\nmodels:\n  - name: reference/golden\n", "utf-8")
        while True:  # a busy server's SQLite answers 503 for a moment: ask again, as a client does
            made = httpx.post(f"{prefect_server}/deployments/{deployment['id']}/create_flow_run",
                              json={"parameters": {"spec_path": str(small),
                                                   "baseline_run_id": None}}, timeout=10)
            if made.status_code != 503 or time.monotonic() > deadline + 120:
                break
            time.sleep(1)
        assert made.status_code == 201, made.text
        run_url = f"{prefect_server}/flow_runs/{made.json()['id']}"
        while (run := httpx.get(run_url, timeout=5).json())["state"]["type"] not in (
                "COMPLETED", "FAILED", "CRASHED", "CANCELLED"):
            assert time.monotonic() < deadline + 240, (tmp_path / "serve.log").read_text()
            time.sleep(1)
        assert run["state"]["type"] == "COMPLETED", run["state"]
        assert run["state"]["message"].startswith("PASS: nightly nightly-")
        run_id = run["state"]["message"].split()[2]
        assert run["name"] == f"nightly {run_id}"
        assert {"nightly", "suite:intent_change", "model:reference/golden"} <= set(run["tags"])
        said = (tmp_path / "serve.log").read_text("utf-8", "replace")
        assert f"PASS: nightly {run_id} no baseline to compare with" in said
    finally:
        _stop(serve)
        log.close()


def _trial(run_id: str, scenario: str, repeat: int, status: str, passed: bool | None
           ) -> dict[str, Any]:
    """A trials row with every required column filled with a placeholder, then the key fields."""
    fill = {pa.types.is_string: "x", pa.types.is_integer: 0, pa.types.is_floating: 0.0,
            pa.types.is_boolean: False, pa.types.is_timestamp: T0, pa.types.is_list: []}
    row: dict[str, Any] = {}
    for column in TABLES["trials"].columns:
        if not column.nullable:
            row[column.name] = next(v for test, v in fill.items() if test(column.type))
    row.update(run_id=run_id, trial_id=f"{scenario}-{repeat}", attempt_id=f"{run_id}-{repeat}",
               scenario_id=scenario, model="reference/golden", prompt_id="default",
               memory_mode="chat", repeat=repeat, status=status, passed=passed)
    return row


def _run_row(run_id: str, started_at: datetime) -> dict[str, Any]:
    return {"run_id": run_id, "invocation_id": run_id, "started_at": started_at,
            "code_version": "test", "suite_ids": [], "suite_sha256s": [], "models": [],
            "memory_modes": [], "repeats": 3, "grid_size": 0, "trials_run": 0, "argv": "test"}


def test_comparison_shows_transitions_per_cell(tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    base, cand = "nightly-a", "nightly-b"
    edited = [{**_trial(cand, "ED", r, "complete", False), "scenario_sha256": "edited"}
              for r in range(2)]
    WarehouseWriter(root, base).write_batch({
        "trials": [_trial(base, "V1", r, "complete", True) for r in range(3)]
        + [_trial(base, "C1", r, "complete", r == 0) for r in range(2)]
        + [_trial(base, "OLD", 0, "complete", True)]
        + [_trial(base, "ED", r, "complete", True) for r in range(2)],
        "runs": [_run_row(base, T0)]})
    WarehouseWriter(root, cand).write_batch({
        "trials": [_trial(cand, "V1", r, "complete", r == 0) for r in range(3)]
        + [_trial(cand, "C1", 0, "complete", True), _trial(cand, "C1", 1, "incomplete", None)]
        + [_trial(cand, "NEW", 0, "agent_error", False)] + edited,
        "runs": [_run_row(cand, T0 + timedelta(days=1))]})
    reports = tmp_path / "reports"
    comparison = write_comparison(root, reports, base, cand)
    assert comparison.report == reports / "nightly-b-vs-nightly-a.csv"
    assert list(reports.iterdir()) == [comparison.report]  # no temp file left behind
    with comparison.report.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    got = [(r["scenario_id"], r["memory_mode"], r["transition"], r["change"],
            r["candidate_incomplete"]) for r in rows]
    assert got == [
        ("V1", "chat", "3/3 -> 1/3", "regressed", "0"),
        ("ED", "chat", "2/2 -> 0/2", "changed", "0"),  # an edited scenario is not a regression
        ("OLD", "chat", "1/1 -> -", "dropped", "0"),
        ("NEW", "chat", "- -> 0/1", "new", "0"),
        ("C1", "chat", "1/2 -> 1/1", "improved", "1"),
    ]
    assert [r["review"] for r in rows if r["scenario_id"] == "ED"] == ["scenario changed"]
    assert comparison.changes() == {"regressed": 1, "changed": 1, "dropped": 1, "new": 1,
                                    "improved": 1}
    assert previous_nightly_run(root, cand) == base
    assert previous_nightly_run(root, base) is None
    with pytest.raises(ValueError, match="no trials"):
        write_comparison(root, reports, "nightly-missing", cand)


@pytest.mark.slow
@pytest.mark.parametrize("warehouse", ["folder", "bucket"])
def test_nightly_flow_fails_on_a_regression_and_flags_an_edited_scenario(
        ray_local: Any, prefect_harness: None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, warehouse: str) -> None:
    from flows.nightly import nightly
    from pipeline.reference.server import start_server

    home = tmp_path / "home"
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    if warehouse == "bucket":  # the loopback S3 server: AGENTSWEEP_WAREHOUSE=s3://...
        monkeypatch.setenv("AGENTSWEEP_WAREHOUSE", str(request.getfixturevalue("s3_warehouse")))
    lines = MEETING_SUITE.read_text("utf-8").splitlines()
    f1 = json.loads(next(line for line in lines if '"id": "F1"' in line))
    suite = tmp_path / "f1.jsonl"
    suite.write_text(json.dumps(f1) + "\n", "utf-8")
    spec = tmp_path / "nightly.yaml"

    def night(plays: str) -> Any:
        """A night against the reference server, its model behaving as ``plays``."""
        server = start_server(plays=plays)
        spec.write_text("suites: [f1.jsonl]\nrepeats: 1\nmemory_modes: [chat]\nmodels:\n"
                        f"  - name: reference-http/golden\n    api_base: {server.api_base}\n")
        try:
            return nightly(str(spec), "previous", return_state=True)
        finally:
            server.stop()

    state = night("golden")  # the first night: nothing to compare with
    assert state.is_completed() and state.message.startswith("PASS: nightly ")
    first = state.result()
    assert first.run_id.startswith("nightly-") and first.comparison is None
    assert first.sweep.statuses == {"complete": 1}
    assert first.html == home / "reports" / f"{first.run_id}.html"  # the run's own report
    assert "Gate:" not in first.html.read_text("utf-8")

    # The next night the model behind the same name books despite the user's "stop".
    state = night("mutant-ignores-switch")
    assert state.is_failed()  # the flow run's state says the verdict, with its reasons
    second = state.result(raise_on_failure=False)
    comparison = second.comparison
    assert comparison.baseline == first.run_id
    assert state.message.startswith(f"BLOCK: {second.run_id} against {first.run_id}: ")
    assert "F1/reference-http/golden/meeting_rooms/default/chat 1/1 -> 0/1" in state.message
    assert comparison.report is not None and comparison.report.parent == home / "reports"
    with comparison.report.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["scenario_id"], r["transition"], r["change"]) for r in rows] == [
        ("F1", "1/1 -> 0/1", "regressed")]
    html = comparison.report.with_suffix(".html").read_text("utf-8")  # beside the CSV
    assert "Gate: BLOCK (exit 1)" in html and "new failure: 1" in html
    assert second.html == comparison.report.with_suffix(".html")

    # Then the scenario itself is edited: the change needs a person, it is not a regression.
    f1["turns"][1]["user"] += " Пожалуйста."
    suite.write_text(json.dumps(f1, ensure_ascii=False) + "\n", "utf-8")
    state = night("golden")
    third = state.result(raise_on_failure=False)
    assert third.comparison is not None and third.comparison.changes() == {"changed": 1}
    assert state.is_failed() and "expectation change not reviewed: F1" in state.message
