"""Every door into a sweep, as a user opens it in a fresh process: ``agentsweep run`` and the
nightly and model-swap flow programs check the same way before anything starts, attach to the
warm stack of ``agentsweep up``, and show up in Prefect named after their run with tags and
progress lines; the stack serves the Prefect UI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE, REPO
from helpers.ray_processes import LEAN_STACK, kind_of, node_processes
from helpers.verdicts import assert_one_verdict

BIN = Path(sys.executable).parent
SWAP_SPEC = REPO / "infra" / "sweeps" / "model_swap.yaml"
GATE = REPO / "infra" / "sweeps" / "gate.yaml"
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "RAY_")) and k not in KEYS}
    env["AGENTSWEEP_HOME"] = str(home)
    env["AGENTSWEEP_PROGRESS"] = "0"
    return env


def _run(home: Path, *command: str, timeout: int = 400) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), env=_env(home), capture_output=True, text=True,
                          timeout=timeout, check=False, cwd=REPO)


def _flow(home: Path, module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(home, sys.executable, "-m", module, *args)


def _agentsweep(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return _run(home, str(BIN / "agentsweep"), *args)


def _api(url: str, body: dict[str, Any] | None = None) -> Any:
    request = urllib.request.Request(url, data=json.dumps(body).encode() if body is not None
                                     else None, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.loads(reply.read())


@pytest.mark.slow
def test_the_model_swap_without_keys_refuses_in_one_line_and_writes_nothing(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = _flow(home, "flows.model_swap", "--spec", str(SWAP_SPEC), "--gate", str(GATE))
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "OPENAI_API_KEY" in lines[0], done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    assert not (home / "warehouse").exists()


@pytest.mark.slow
def test_a_flow_program_refuses_a_mistake_of_its_spec_before_prefect_starts(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    spec = tmp_path / "nightly.yaml"
    spec.write_text(f"suites: [{MEETING_SUITE}]\nmodels:\n  - name: reference/golden\n"
                    "memory_modes: [structure]\n", "utf-8")
    done = _flow(home, "flows.nightly", "run", "--spec", str(spec), "--baseline", "none")
    assert done.returncode == 2, done.stderr
    assert "memory_modes" in done.stderr or "memory mode" in done.stderr
    assert "structure" in done.stderr and "Traceback" not in done.stderr
    assert not (home / "warehouse").exists() and not (home / "prefect").exists()


@pytest.fixture
def stack(stack_home: Path) -> tuple[Path, dict[str, Any]]:
    """The session's warm stack (conftest.py) and its state."""
    return stack_home, json.loads((stack_home / "stack" / "stack.json").read_text("utf-8"))


def _flow_runs(state: dict[str, Any], name: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = _api(f"{state['prefect_api_url']}/flow_runs/filter",
                                      {"flow_runs": {"name": {"any_": [name]}}})
    return runs


def _attached(state: dict[str, Any], pid: int) -> bool:
    """The process ran as a driver of the stack's Ray: its driver log is in the stack's
    session (a Ray of its own would have a session elsewhere)."""
    logs = Path(state["ray_temp_dir"]) / "session_latest" / "logs"
    return any(logs.glob(f"python-core-driver-*_{pid}.log"))


def _popen_flow(home: Path, module: str, *args: str,
                progress: bool = False) -> tuple[int, int, str, str]:
    env = _env(home)
    if progress:
        env.pop("AGENTSWEEP_PROGRESS")
    proc = subprocess.Popen([sys.executable, "-m", module, *args], env=env, cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=400)
    return proc.pid, proc.returncode, out, err


@pytest.mark.slow
def test_the_stacks_ray_head_runs_no_monitor_dashboard_ray_agent_or_idle_worker(
        stack: tuple[Path, dict[str, Any]]) -> None:
    _, state = stack
    kinds = [kind_of(command) for command in node_processes(state["ray_temp_dir"]).values()]
    assert LEAN_STACK <= set(kinds), kinds
    assert not {"log monitor", "autoscaler monitor", "idle worker", "dashboard",
                "dashboard agent"} & set(kinds), kinds
    extra = [kind for kind in kinds if kind not in LEAN_STACK]
    assert extra and all(kind.startswith("ray::TrialWorker") for kind in extra), kinds
    assert "ray start wrapper" not in kinds  # `ray start` exits once the node is up


@pytest.mark.slow
def test_the_stack_serves_the_prefect_ui(stack: tuple[Path, dict[str, Any]]) -> None:
    _, state = stack
    ui = state["prefect_api_url"].removesuffix("/api")
    with urllib.request.urlopen(f"{ui}/", timeout=10) as reply:
        page = reply.read().decode("utf-8", "replace")
    assert reply.status == 200 and "<html" in page.lower()


@pytest.mark.slow
def test_a_run_is_named_after_its_run_id_with_tags_and_progress_logs(
        stack: tuple[Path, dict[str, Any]]) -> None:
    home, state = stack
    done = _agentsweep(home, "run", "--suite", str(MEETING_SUITE), "--scenario", "F1",
                       "--scenario", "V1", "--memory-mode", "chat", "--repeats", "1",
                       "--run-id", "door-run")
    assert done.returncode == 0, done.stderr
    assert "the local stack (agentsweep up)" in done.stdout
    [run] = _flow_runs(state, "door-run")
    assert {"agentsweep", "adhoc", "suite:intent_change", "model:reference/golden"} <= set(
        run["tags"])
    assert run["state"]["type"] == "COMPLETED"
    logs = _api(f"{state['prefect_api_url']}/logs/filter",
                {"logs": {"flow_run_id": {"any_": [run["id"]]}}})
    assert any("2/2 trials done" in entry["message"] for entry in logs), logs


@pytest.mark.slow
def test_the_nightly_flow_attaches_to_the_stack_and_its_verdict_is_the_same_everywhere(
        stack: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    """A first night passes; the next, its model behind the same grid gone stale, is blocked:
    its last line, exit code, HTML headline, JUnit, the viewer and Prefect's state agree."""
    home, state = stack
    spec = tmp_path / "nightly.yaml"
    spec.write_text(f"suites: [{MEETING_SUITE}]\nscenarios: [F1, V1]\nmodels: "
                    "\n  - name: reference/golden\nmemory_modes: [chat]\nrepeats: 1\n", "utf-8")
    pid, code, out, err = _popen_flow(home, "flows.nightly", "run", "--spec", str(spec),
                                      "--baseline", "none", "--run-id", "nightly-door")
    assert code == 0, err
    assert "the local stack (agentsweep up)" in out
    assert out.strip().splitlines()[-1].startswith("PASS: nightly nightly-door")
    assert _attached(state, pid)
    [run] = _flow_runs(state, "nightly-door")
    assert {"agentsweep", "nightly"} <= set(run["tags"])
    [outer] = _flow_runs(state, "nightly nightly-door")  # the nightly flow itself, named too
    assert {"nightly", "model:reference/golden", "suite:intent_change"} <= set(outer["tags"])
    assert outer["state"]["type"] == "COMPLETED"

    spec.write_text(spec.read_text("utf-8").replace("reference/golden",
                                                    "reference/mutant-stale-value"), "utf-8")
    _, code, out, err = _popen_flow(home, "flows.nightly", "run", "--spec", str(spec),
                                    "--baseline", "nightly-door", "--run-id", "nightly-door-2",
                                    progress=True)
    assert "Traceback" not in out + err
    said = (out + err).splitlines()  # piped: plain progress lines, each said once
    assert [line for line in said if "2/2 trials done" in line] == [
        next(line for line in said if "2/2 trials done" in line)]
    reports = home / "reports" / "nightly-door-2-vs-nightly-door"
    [outer] = _flow_runs(state, "nightly nightly-door-2")
    assert_one_verdict("block", candidate="nightly-door-2", root=home / "warehouse", code=code,
                       last_line=out.strip().splitlines()[-1],
                       html=reports.with_name(reports.name + ".html"),
                       junit=reports.with_name(reports.name + ".junit.xml"),
                       prefect_state=outer["state"])
    compared = _agentsweep(home, "compare", "nightly-door", "nightly-door-2")  # no config
    assert compared.returncode == 0, compared.stderr
    assert "ADMIT" not in compared.stdout and "gate preview: BLOCK" in compared.stdout


@pytest.mark.slow
def test_the_readme_model_swap_runs_twice_keyless_on_the_stack_blocked_everywhere(
        stack: tuple[Path, dict[str, Any]]) -> None:
    """The README's keyless study, twice in one home: two studies, each blocked in its last
    line, exit code, HTML report, JUnit, the viewer and Prefect's state."""
    home, state = stack
    studies = []
    for _ in range(2):
        pid, code, out, err = _popen_flow(
            home, "flows.model_swap", "--spec",
            str(REPO / "infra" / "sweeps" / "model_swap_reference.yaml"), "--gate", str(GATE))
        assert "Traceback" not in out + err
        assert _attached(state, pid)
        lines = out.strip().splitlines()
        study = lines[0].split()[2].removesuffix(":")
        assert study.startswith("model-swap-reference-"), lines[0]
        assert any(line.startswith("  - new critical regression: F") for line in lines)
        reports = home / "reports" / f"{study}-b-vs-{study}-a"
        [outer] = _flow_runs(state, f"model swap {study}")
        assert {"model-swap", "model:reference/golden",
                "model:reference/mutant-ignores-switch"} <= set(outer["tags"])
        assert_one_verdict("block", candidate=f"{study}-b", root=home / "warehouse", code=code,
                           last_line=lines[-1], html=reports.with_name(reports.name + ".html"),
                           junit=reports.with_name(reports.name + ".junit.xml"),
                           prefect_state=outer["state"])
        for run_id in (f"{study}-a", f"{study}-b"):
            [run] = _flow_runs(state, run_id)
            assert "model-swap" in run["tags"]
        studies.append(study)
    assert studies[0] != studies[1]


def _trial_workers(state: dict[str, Any]) -> int:
    return sum(kind_of(command).startswith("ray::TrialWorker")
               for command in node_processes(state["ray_temp_dir"]).values())


def _settled_trial_workers(state: dict[str, Any], expected: int) -> int:
    """The stack's TrialWorker processes once retired ones have exited (up to 60 s)."""
    import time

    deadline = time.monotonic() + 60
    while (seen := _trial_workers(state)) != expected and time.monotonic() < deadline:
        time.sleep(0.5)
    return seen


@pytest.mark.slow
def test_the_stack_keeps_one_warm_pool_sized_from_the_sweep(
        stack: tuple[Path, dict[str, Any]]) -> None:
    """128 in flight on 2 CPUs: two workers, and the idle pool of the default shape is retired
    instead of kept beside them; the default shape again: one worker again."""
    home, state = stack
    args = ["run", "--suite", str(MEETING_SUITE), "--scenario", "V1", "--memory-mode", "chat",
            "--repeats", "1"]
    wide = _agentsweep(home, *args, "--max-in-flight", "128", "--run-id", "pool-wide")
    assert wide.returncode == 0, wide.stderr
    cpus = min(2, os.cpu_count() or 1)  # the stack's Ray has the machine's CPUs
    assert _settled_trial_workers(state, cpus) == cpus
    narrow = _agentsweep(home, *args, "--run-id", "pool-default")
    assert narrow.returncode == 0, narrow.stderr
    assert _settled_trial_workers(state, 1) == 1
