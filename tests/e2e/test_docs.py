"""Every shell example in docs/ runs as written (on a local stack, reference models only)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MEETING_SUITE, REPO

from pipeline.catalog import load_suite
from warehouse.query import run_sql

DOCS = sorted((REPO / "docs").glob("*.md"))
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands(path: Path) -> list[str]:
    return [line for block in BLOCK.findall(path.read_text("utf-8"))
            for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@pytest.fixture
def stack(stack_home: Path) -> Path:
    """The session's warm stack (conftest.py): every test of the docs runs on it."""
    return stack_home


@pytest.mark.slow
def test_the_stacks_prefect_ui_asks_the_stacks_own_api(stack: Path) -> None:
    """The UI of ``agentsweep up`` reads its API's address from /ui-settings: it must be the
    stack's port, not Prefect's default 4200 (the UI showed no run)."""
    import json
    import urllib.request

    from pipeline.runtime.stack import read_state

    state = read_state(stack)
    assert state is not None
    with urllib.request.urlopen(f"{state.prefect_ui_url}/ui-settings", timeout=30) as answer:
        settings = json.loads(answer.read())
    assert settings["api_url"] == state.prefect_api_url


@pytest.mark.slow
def test_the_stacks_prefect_ui_lists_a_run_by_its_name(stack: Path) -> None:
    """Prefect's UI from ``agentsweep up``, in headless Chromium: its runs page lists a run
    made on the stack, by the run's id, and asked nothing of any address but the stack's."""
    from helpers.browser import Browser, chromium_path
    from helpers.loopback_proxy import LoopbackProxy

    from pipeline.runtime.stack import read_state

    if chromium_path() is None:
        pytest.fail("chromium is not installed: `make setup-dev` installs it")
    done = subprocess.run(["agentsweep", "run", "--suite", str(MEETING_SUITE), "--scenario",
                           "V1", "--memory-mode", "chat", "--repeats", "1", "--run-id",
                           "seen-in-the-ui"], env=_env(stack), cwd=REPO, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    state = read_state(stack)
    assert state is not None
    proxy = LoopbackProxy(state.prefect_ui_url)
    with Browser(timeout_s=120, forward=proxy.forward) as browser:
        browser.call("Page.navigate", {"url": f"{state.prefect_ui_url}/runs"})
        browser.wait_for("document.body && document.body.innerText.includes('seen-in-the-ui')",
                         timeout_s=120)
        assert "Can't connect to Server API" not in browser.evaluate("document.body.innerText")
    assert proxy.refused == [], proxy.refused


def test_the_docs_have_examples_to_run() -> None:
    assert sum(len(commands(p)) for p in DOCS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in DOCS if commands(p)], ids=lambda p: p.name)
def test_every_shell_example_runs(stack: Path, path: Path) -> None:
    for command in commands(path):
        done = subprocess.run(["bash", "-c", command], env=_env(stack), cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{path.name}: {command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"{path.name}: {command}\n{done.stderr}"


AGENTS_DOC = REPO / "docs" / "agents.md"
MUTANT = "reference/mutant-ignores-switch"


def the_docs_agent() -> str:
    """The quick start's Python block (its only one), as the reader copies it."""
    (block,) = re.findall(r"```python\n(.*?)```", AGENTS_DOC.read_text("utf-8"), re.DOTALL)
    return "\n".join(line.removeprefix("   ") for line in block.splitlines())


@pytest.mark.slow
def test_the_docs_agent_runs_on_ray_and_the_mutant_fails_it_as_it_fails_ours(
        stack: Path, tmp_path: Path) -> None:
    """docs/agents.md as a newcomer follows it: the agent its quick start shows, saved as a
    file of their own, run by ``agentsweep run --agent`` beside the built-in agent against the
    golden model and a mutant (on the docs' warm stack)."""
    (tmp_path / "my_agent.py").write_text(the_docs_agent(), "utf-8")
    assert "agentsweep" not in the_docs_agent()
    home = stack
    run = subprocess.run(
        ["agentsweep", "run", "--agent", "builtin", "--agent", "my_agent.py:make",
         "--memory-mode", "chat", "--model", "reference/golden", "--model", MUTANT,
         "--suite", str(MEETING_SUITE), "--repeats", "1", "--run-id", "docs-agent"],
        cwd=tmp_path, env=_env(home), capture_output=True, text=True, timeout=300,
        check=False)
    assert run.returncode == 0, run.stderr
    scenarios = len(load_suite(MEETING_SUITE).scenarios)
    rows = run_sql(home / "warehouse", """
        select agent, memory_mode, model, scenario_id, passed, model_calls, tool_calls,
               agent_sha256 is not null as hashed
        from trials where run_id = 'docs-agent' order by agent, model, scenario_id""").rows
    assert len(rows) == 2 * 2 * scenarios
    ours = {r[2:] for r in rows if r[0] == "builtin"}
    theirs = {r[2:] for r in rows if r[0] == "my_agent.py:make"}
    assert {(r[1], r[7]) for r in rows if r[0] == "my_agent.py:make"} == {("own", True)}
    assert {r[:5] for r in theirs} == {r[:5] for r in ours}  # model, scenario, verdict, usage
    failed = {r[1] for r in theirs if r[0] == MUTANT and not r[2]}
    assert failed and not {r[1] for r in theirs if r[0] == "reference/golden" and not r[2]}
    events = run_sql(home / "warehouse", """
        select kind, count(*) from events join trials using (run_id, trial_id, attempt_id)
        where run_id = 'docs-agent' group by all order by kind""").rows
    assert dict(events)["tool_call"] == 2 * sum(r[6] for r in rows if r[0] == "builtin")
