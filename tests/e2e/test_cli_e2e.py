"""`agentsweep run` and `agentsweep sql` as a user runs them, in a fresh process, under strace:
nothing it starts (driver, Prefect server, Ray processes, workers) connects anywhere but
loopback."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.local.adapter import ADAPTER_ID
from pipeline.local.catalog import local_model
from pipeline.local.weights import gguf_path
from pipeline.runtime.stack import session_pids

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
        command = ["strace", "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o",
                   str(strace_to), *command]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout,
                          check=False)


def _foreign_addresses(trace: Path) -> set[str]:
    text = trace.read_text()
    found = set(_INET.findall(text)) | set(_INET6.findall(text))
    return {a for a in found if not (a.startswith("127.") or a in ("::1", "::ffff:127.0.0.1"))}


@pytest.mark.slow
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


WIRES = {"openai": ("reference-http/golden", "/v1"),
         "anthropic": ("reference-anthropic/golden", ""),
         "gemini": ("reference-gemini/golden", "/v1beta")}


def _reference_server(wire: str) -> tuple[subprocess.Popen[bytes], int]:
    """``agentsweep reference-server --wire WIRE`` on a free port, answering."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    server = subprocess.Popen([str(BIN / "agentsweep"), "reference-server", "--wire", wire,
                               "--port", str(port)], env=clean, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                server.kill()
                raise AssertionError(f"the {wire} reference server did not answer") from None
            time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed "
                    "(.ci/run installs it)")
def test_a_sweep_through_each_wire_format_touches_only_loopback(tmp_path: Path) -> None:
    """The in-process reference models never reach LiteLLM: this run takes LiteLLM's real
    OpenAI, Anthropic and Gemini paths to a reference server of each wire, under strace (one
    sweep over the three models: one cold start, not three)."""
    servers = {wire: _reference_server(wire) for wire in sorted(WIRES)}
    try:
        spec = tmp_path / "wires.yaml"
        spec.write_text(json.dumps({
            "suites": [str(MEETING_SUITE)], "scenarios": ["V1"], "memory_modes": ["chat"],
            "repeats": 1, "run_id": "wires",
            "models": [{"name": WIRES[wire][0],
                        "api_base": f"http://127.0.0.1:{port}{WIRES[wire][1]}"}
                       for wire, (_, port) in servers.items()]}))
        home = tmp_path / "home"
        trace = tmp_path / "connect.txt"
        run = _agentsweep(home, "run", "--spec", str(spec), strace_to=trace)
        assert run.returncode == 0, run.stdout + run.stderr
        connected = trace.read_text()
        for wire, (_, port) in servers.items():
            assert f"htons({port})" in connected, wire  # the run called its server, over TCP
        assert _foreign_addresses(trace) == set()
        rows = _agentsweep(home, "sql", "--format", "csv",
                           "select model, status, passed from trials order by model")
        assert list(csv.reader(io.StringIO(rows.stdout)))[1:] == [
            [model, "complete", "True"] for model, _ in sorted(WIRES.values())]
    finally:
        for server, _ in servers.values():
            server.terminate()
            server.wait(10)


LOCAL = local_model("local/default")
LOCAL_ARGS = ("--suite", str(MEETING_SUITE), "--scenario", "V1", "--model", "local/default",
              "--memory-mode", "chat", "--repeats", "1", "--temperature", "0.7", "--seed", "3")


def _serving_model(home: Path) -> list[int]:
    """Processes started for ``home`` (they inherit its AGENTSWEEP_HOME) that have the local
    model's weights mapped: a running server."""
    target, marker = str(gguf_path(LOCAL)), f"AGENTSWEEP_HOME={home}\0".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/environ", "rb") as environ:
                    if marker not in environ.read() + b"\0":
                        continue
                with open(f"/proc/{entry}/maps") as handle:
                    if target in handle.read():
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.mark.slow
@pytest.mark.xdist_group("local-model")  # one llama.cpp server at a time (tests/conftest.py)
@pytest.mark.skipif(shutil.which("strace") is None, reason="strace is not installed "
                    "(.ci/run installs it)")
def test_a_local_model_sweep_is_real_touches_only_loopback_and_leaves_no_server(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    trace = tmp_path / "connect.txt"
    spec = tmp_path / "local.yaml"  # LOCAL_ARGS, one short reply: what a real trial stores
    spec.write_text(json.dumps({  # (the model's behaviour: tests/unit/local/)
        "suites": [str(MEETING_SUITE)], "scenarios": ["V1"], "memory_modes": ["chat"],
        "repeats": 1, "run_id": "local", "step_limit": 1,
        "models": [{"name": "local/default", "temperature": 0.7, "seed": 3,
                    "params": {"max_tokens": 32}}]}))
    run = _agentsweep(home, "run", "--spec", str(spec), strace_to=trace, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    assert _foreign_addresses(trace) == set()
    assert _serving_model(home) == []  # the server went with the sweep
    row = _agentsweep(home, "sql", "--format", "json",
                      "select status, error_kind, model_version, system_fingerprint, "
                      "input_tokens, output_tokens, cost_usd, model_calls, seed from trials")
    (trial,) = json.loads(row.stdout)
    assert trial["status"] in ("complete", "agent_error", "limit"), trial
    assert trial["model_version"] == LOCAL.gguf_sha256
    assert ADAPTER_ID in trial["system_fingerprint"]
    assert trial["input_tokens"] > 0 and trial["output_tokens"] > 0 and trial["cost_usd"] is None
    assert trial["model_calls"] >= 1 and trial["seed"] == 3
    assert "sk-canary-e2e" not in run.stdout + run.stderr


@pytest.mark.slow
@pytest.mark.xdist_group("local-model")
@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL])
def test_interrupting_or_killing_a_local_sweep_leaves_no_server(tmp_path: Path,
                                                                stop: signal.Signals) -> None:
    home = tmp_path / "home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0")
    driver = subprocess.Popen([str(BIN / "agentsweep"), "run", *LOCAL_ARGS, "--run-id", "stop"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 300
        while not _serving_model(home):
            assert driver.poll() is None and time.monotonic() < deadline, "no server started"
            time.sleep(0.5)
        driver.send_signal(stop)
        driver.wait(timeout=120)
        deadline = time.monotonic() + 60
        while _serving_model(home) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert _serving_model(home) == []
    finally:
        if driver.poll() is None:
            driver.kill()
        for pid in session_pids(driver.pid):  # e.g. the ephemeral Prefect API of a kill -9
            os.kill(pid, signal.SIGKILL)


@pytest.mark.slow  # starts an agentsweep process
def test_sql_errors_are_clear(tmp_path: Path) -> None:
    bad = _agentsweep(tmp_path / "home", "sql", "select nonsense from nowhere")
    assert bad.returncode == 2
    assert "SQL error" in bad.stderr
