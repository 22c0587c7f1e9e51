"""A user's first hour: every mistake is caught before the first trial, with exit 2, one line
naming the option or the file, no traceback and nothing written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MEETING_SUITE
from helpers.commands import agentsweep, agentsweep_until_exit
from helpers.outside_domain import make_domain

from pipeline.runtime.bounded_exit import EXIT_GRACE_S
from pipeline.sweep.config import SweepConfig, config_json
from warehouse.writer import WarehouseWriter

pytestmark = pytest.mark.slow  # every test starts agentsweep processes

BIN = Path(sys.executable).parent


def _agentsweep(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return agentsweep(home, *args, timeout=120, **env)


def _refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stdout + result.stderr
    for word in words:
        assert word in lines[0], lines[0]


RUN = ("run", "--suite", str(MEETING_SUITE), "--repeats", "1")


@pytest.mark.parametrize(("args", "words"), [
    (("--model", "reference/goldne"), ("--model", "unknown reference model 'reference/goldne'")),
    (("--model", "openai/gpt-4o-mini"), ("--model openai/gpt-4o-mini", "OPENAI_API_KEY")),
    (("--model", "opena/gpt-4o"), ("--model opena/gpt-4o", "no provider")),
    (("--model", "local/gpt-5"), ("unknown local model 'local/gpt-5'",)),
    (("--model", "openai/x", "--api-base", "http://127.0.0.1:9/v1"), ("not reachable",)),
    (("--prompt", "nosuch"), ("--prompt nosuch", "no prompt 'nosuch'", "it has: default")),
    (("--memory-mode", "chats"), ("--memory-mode: 'chats' is not one of chat, summary, "
                                  "structured; did you mean 'chat'?",)),
    (("--temperature", "-1"), ("--temperature",)),
    (("--scenario", "Z9"), ("Z9",)),
    (("--run-id", "two\nlines"), ("run id",)),
    (("--temperature", "nan"), ("--temperature",)),
    (("--ray-address", "127.0.0.1:9"), ("--ray-address 127.0.0.1:9", "no Ray cluster answers")),
])
def test_a_mistake_in_the_options_is_one_line_and_nothing_runs(
        tmp_path: Path, args: tuple[str, ...], words: tuple[str, ...]) -> None:
    home = tmp_path / "home"
    _refused(_agentsweep(home, *RUN, *args), *words)
    assert not home.exists()  # nothing written, not even Prefect's home


def test_structured_mode_for_a_domain_without_a_state_schema(tmp_path: Path) -> None:
    suite = make_domain(tmp_path / "elsewhere")
    result = _agentsweep(tmp_path / "home", "run", "--catalog", str(suite.parents[2]),
                         "--suite", str(suite), "--memory-mode", "structured")
    _refused(result, "--memory-mode structured", "helpdesk has no state.schema.json")


def test_a_broken_domain_file_is_named_with_its_line(tmp_path: Path) -> None:
    suite = make_domain(tmp_path / "elsewhere")
    tools = suite.parents[1] / "tools.json"
    tools.write_text(tools.read_text().replace('"kind": "read"', '"kind": "peek"'))
    result = _agentsweep(tmp_path / "home", "run", "--catalog", str(suite.parents[2]),
                         "--suite", str(suite))
    _refused(result, f"{tools}:", "tools.0.kind")


def test_an_expectation_naming_no_real_argument(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in MEETING_SUITE.read_text("utf-8").splitlines()]
    rows[1]["expectations"]["argument_constraints"][0]["argument"] = "capacty"
    suite = tmp_path / "typo.jsonl"
    suite.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    result = _agentsweep(tmp_path / "home", "run", "--suite", str(suite))
    _refused(result, f"{suite}:2:", "expectations.argument_constraints.0.argument",
             "'capacty' is not a parameter")


def test_verify_suite_refuses_a_suite_that_proves_nothing(tmp_path: Path) -> None:
    rows = [json.loads(line) for line in MEETING_SUITE.read_text("utf-8").splitlines()][:2]
    for row in rows:
        row.pop("catches", None)
    suite = tmp_path / "unproven.jsonl"
    suite.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    _refused(_agentsweep(tmp_path / "home", "verify-suite", "--suite", str(suite)),
             "declares no mutant catches", "--allow-unproven")
    allowed = _agentsweep(tmp_path / "home", "verify-suite", "--suite", str(suite),
                          "--allow-unproven", "--memory-mode", "chat")
    assert "cells" in allowed.stdout, allowed.stdout + allowed.stderr


def _recorded_run(home: Path, run_id: str) -> None:
    """A finished run of one trial (V1, chat, golden) as the warehouse would hold it."""
    from pipeline.sweep.stages import plan
    from pipeline.trial.run import RunContext, run_trial

    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                         repeats=1, run_id=run_id, warehouse=home / "warehouse")
    (spec,) = plan(config).pending
    result = run_trial(spec, RunContext(run_id, "test"))
    writer = WarehouseWriter(home / "warehouse", run_id)
    writer.write_batch(result.tables())
    from datetime import UTC, datetime

    writer.write_batch({"runs": [{
        "run_id": run_id, "invocation_id": "i1", "started_at": datetime.now(UTC),
        "finished_at": datetime.now(UTC), "code_version": "test", "suite_ids": ["x"],
        "suite_sha256s": ["x"], "models": ["reference/golden"], "memory_modes": ["chat"],
        "repeats": 1, "grid_size": 1, "trials_run": 1, "argv": "test",
        "config_json": config_json(config)}]})


def test_a_run_id_is_never_silently_reused_and_resume_reuses_its_grid(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _recorded_run(home, "taken")
    _refused(_agentsweep(home, *RUN, "--run-id", "taken"), "--run-id taken",
             "already exists", "--resume", "--append")
    resumed = _agentsweep(home, "run", "--run-id", "taken", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "grid 1 trials: executed 0, skipped 1 (already final)" in resumed.stdout


SLOW_SPEC = """suites: ["{suite}"]
scenarios: [V1, F1]
models:
  - name: reference/golden
    faults: {{latency_ms: 300}}
memory_modes: [chat]
repeats: 6
max_in_flight: 2
batch_size: 2
"""


def _stop_after_a_batch(home: Path, run_args: list[str], stop: str) -> None:
    """``agentsweep run_args`` until one more trials part lands, then signal ``stop``: it
    ends within a minute, exit 130, one line naming the resume, its flow run Cancelled."""
    import signal
    import sqlite3
    import time

    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    clean.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0")
    trials = home / "warehouse" / "trials" / "run_id=stopped"
    before = len(list(trials.glob("*.parquet")))
    driver = subprocess.Popen([str(BIN / "agentsweep"), "run", *run_args], env=clean,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    deadline = time.monotonic() + 300  # hang guards: a loaded machine starts slowly
    while len(list(trials.glob("*.parquet"))) <= before:
        assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
        time.sleep(0.2)
    interrupted = time.monotonic()
    driver.send_signal(getattr(signal, stop))
    _, err = driver.communicate(timeout=120)
    assert time.monotonic() - interrupted < 60  # Ray's shutdown included
    assert driver.returncode == 130, (stop, err)
    assert err.strip().splitlines() == [
        "interrupted (exit 130): what finished is saved; continue with: agentsweep run --run-id "
        "stopped --resume"], stop
    with sqlite3.connect(home / "prefect" / "prefect.db") as prefect_db:  # Prefect's own record
        states = prefect_db.execute("SELECT state_type, state_name FROM flow_run "
                                    "WHERE name = 'stopped'").fetchall()
    assert set(states) == {("CANCELLED", "Cancelled")}, (stop, states)  # not Crashed


def test_ctrl_c_or_sigterm_stops_in_seconds_with_one_line_and_resume_finishes(
        tmp_path: Path) -> None:
    """Ctrl-C stops the run; SIGTERM from a scheduler stops its resume (Ray's own SIGTERM
    handler would print a C++ stack dump and kill the driver); a second resume finishes."""
    home = tmp_path / "home"
    spec = tmp_path / "slow.yaml"
    spec.write_text(SLOW_SPEC.format(suite=MEETING_SUITE))
    _stop_after_a_batch(home, ["--spec", str(spec), "--run-id", "stopped"], "SIGINT")
    _stop_after_a_batch(home, ["--run-id", "stopped", "--resume"], "SIGTERM")
    resumed, exit_after_last_line = agentsweep_until_exit(home, "run", "--run-id", "stopped",
                                                          "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "grid 12 trials" in resumed.stdout and "skipped" in resumed.stdout
    assert resumed.stdout.splitlines()[-1].endswith("exit 0")
    # It said how it ended: then it exits (bounded_exit), not a minute later.
    assert exit_after_last_line < EXIT_GRACE_S + 10, exit_after_last_line


def test_the_readme_reference_server_recipe_works_as_written(tmp_path: Path) -> None:
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    server = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--port", str(port)],
                              env=clean, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120  # a hang guard
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline
                time.sleep(0.2)
        home = tmp_path / "home"
        run = _agentsweep(home, "run", "--model", "reference-http/golden", "--api-base",
                          f"http://127.0.0.1:{port}/v1", "--suite", str(MEETING_SUITE),
                          "--scenario", "V1", "--memory-mode", "chat", "--repeats", "1",
                          "--run-id", "recipe")
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1/1" in run.stdout
        usage = _agentsweep(home, "sql", "--format", "csv",
                            "select model_version, input_tokens > 0 from trials")
        assert usage.stdout.splitlines()[1] == "golden-2026-11,True"
    finally:
        server.terminate()
        server.wait(10)


def test_the_same_run_id_cannot_run_twice_at_once(tmp_path: Path) -> None:
    from pipeline.execution.runlock import run_lock

    home = tmp_path / "home"
    with run_lock("busy", home):  # as a driver running "busy" holds it
        second = _agentsweep(home, *RUN, "--scenario", "V1", "--run-id", "busy")
        _refused(second, "--run-id busy", "already being run by", '"pid"')
        resumed = _agentsweep(home, *RUN, "--scenario", "V1", "--run-id", "busy", "--resume")
        _refused(resumed, "already being run by")
    assert not (home / "warehouse").exists()  # neither ran anything


def test_no_credential_lands_in_prefect_the_warehouse_or_the_terminal(tmp_path: Path) -> None:
    """Canaries in the environment (a key), the api_base's userinfo, a gateway token in
    ``extra_headers`` and a secret-named param: the run works (they reach the provider's call)
    and none is found in the home (warehouse, Prefect's database, reports), Ray's session
    folders or the terminal."""
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    password, key = "canary-pass-7f3k9x2", "sk-canary-abcdef0123456789"
    header, param = "canary-header-5h2k9q", "canary-param-2k8s7d"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    server = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--port", str(port)],
                              env=clean, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    import shutil
    import tempfile

    out = tmp_path / "out"
    out.mkdir()
    ray_tmp = Path(tempfile.mkdtemp(prefix="as-ray-", dir="/tmp"))  # Ray's sockets: short paths
    try:
        deadline = time.monotonic() + 120  # a hang guard
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline
                time.sleep(0.2)
        spec = tmp_path / "secret.yaml"
        spec.write_text(f"suites: ['{MEETING_SUITE}']\nscenarios: [V1]\nmemory_modes: [chat]\n"
                        "repeats: 1\nmodels:\n  - name: reference-http/golden\n"
                        f"    api_base: http://agent:{password}@127.0.0.1:{port}/v1\n"
                        "    api_key_env: CANARY_KEY\n"
                        f"    params:\n      extra_headers: {{X-Gateway-Token: {header}}}\n"
                        f"      gateway_secret: {param}\n")
        home = tmp_path / "home"
        run = _agentsweep(home, "run", "--spec", str(spec), "--run-id", "secret",
                          "--junit", str(out / "junit.xml"), CANARY_KEY=key,
                          RAY_TMPDIR=str(ray_tmp))
        assert run.returncode == 0, run.stdout + run.stderr
        shown = _agentsweep(home, "sql", "select generation_params, config_json "
                            "from trials join runs using (run_id)")
        report = _agentsweep(home, "report", "html", "--run-id", "secret", "-o",
                             str(out / "report.html"))
        assert report.returncode == 0, report.stderr
        said = run.stdout + run.stderr + shown.stdout + shown.stderr
        assert "X-Gateway-Token" in shown.stdout and "[REDACTED]" in shown.stdout  # by field
        for secret in (password, key, header, param):
            assert secret not in said, secret
            found = subprocess.run(["grep", "-r", "-l", "-a", secret, str(home), str(ray_tmp),
                                    str(out)],
                                   capture_output=True, text=True, check=False)
            assert found.stdout == "", f"{secret} landed in {found.stdout}"
        assert list((home / "prefect").glob("*.db*")), "Prefect's database was looked at"
        assert list(ray_tmp.glob("session_*")), "Ray's session folders were looked at"
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(ray_tmp, ignore_errors=True)


def test_a_home_that_is_a_file_is_one_line_for_every_command(tmp_path: Path) -> None:
    home = tmp_path / "a-file"
    home.write_text("not a folder")
    for args in (("runs",), ("sql", "select 1"), RUN):
        _refused(_agentsweep(home, *args), "is a file, not a folder")
