"""`agentsweep run` and `agentsweep sql` as a user runs them, in a fresh process, under strace:
nothing it starts (driver, Prefect server, Ray processes, workers) connects anywhere but
loopback."""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suite

BIN = Path(sys.executable).parent
GRID = len(load_suite(MEETING_SUITE).scenarios) * 2  # chat mode only, 2 repeats
_INET = re.compile(r'sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'inet_pton\(AF_INET6, "([^"]+)"')


def _agentsweep(home: Path, *args: str, strace_to: Path | None = None,
                timeout: int = 400) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env["AGENTSWEEP_HOME"] = str(home)
    env["ACME_API_KEY"] = "sk-canary-e2e-0123456789abcdef"
    command = [str(BIN / "agentsweep"), *args]
    if strace_to is not None:
        command = ["strace", "-f", "-qq", "-e", "trace=connect", "-o", str(strace_to), *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _foreign_addresses(trace: Path) -> set[str]:
    text = trace.read_text()
    found = set(_INET.findall(text)) | set(_INET6.findall(text))
    return {a for a in found if not (a.startswith("127.") or a in ("::1", "::ffff:127.0.0.1"))}


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed "
                    "(.ci/run installs it)")
def test_run_then_sql_then_resume_touch_only_loopback(tmp_path: Path) -> None:
    home = tmp_path / "home"
    trace = tmp_path / "connect.txt"
    args = ("--suite", str(MEETING_SUITE), "--repeats", "2", "--memory-mode", "chat",
            "--run-id", "cli")
    run = _agentsweep(home, "run", *args, strace_to=trace)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "pass rate, run cli" in run.stdout
    assert "2/2" in run.stdout and f"grid {GRID} trials" in run.stdout
    assert _foreign_addresses(trace) == set()
    assert "sk-canary-e2e" not in run.stdout + run.stderr

    sql = _agentsweep(home, "sql", "--format", "csv",
                      "select count(*), count(distinct trial_id) from trials where run_id='cli'")
    assert sql.returncode == 0, sql.stderr
    assert list(csv.reader(io.StringIO(sql.stdout)))[1] == [str(GRID), str(GRID)]

    resumed = _agentsweep(home, "run", *args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert "executed 0" in resumed.stdout and f"skipped {GRID}" in resumed.stdout
    total = _agentsweep(home, "sql", "--format", "json", "select count(*) as n from trials_all")
    assert f'"n": {GRID}' in total.stdout
    leaked = subprocess.run(["grep", "-r", "-l", "sk-canary-e2e", str(home)],
                            capture_output=True, text=True, check=False)
    assert leaked.stdout == ""


def test_sql_errors_are_clear(tmp_path: Path) -> None:
    bad = _agentsweep(tmp_path / "home", "sql", "select nonsense from nowhere")
    assert bad.returncode == 2
    assert "SQL error" in bad.stderr
