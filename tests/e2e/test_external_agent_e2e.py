"""docs/agents.md as a newcomer follows it: the agent its quick start shows, saved as a file of
their own, run by ``agentsweep run --agent`` on Ray against the golden model and a mutant."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from conftest import MEETING_SUITE, REPO
from helpers.commands import BIN, clean_env

from pipeline.catalog import load_suite
from warehouse.query import run_sql

DOCS = REPO / "docs" / "agents.md"
MUTANT = "reference/mutant-ignores-switch"


def the_docs_agent() -> str:
    """The quick start's Python block (its only one), as the reader copies it."""
    (block,) = re.findall(r"```python\n(.*?)```", DOCS.read_text("utf-8"), re.DOTALL)
    return "\n".join(line.removeprefix("   ") for line in block.splitlines())


@pytest.mark.slow
def test_the_docs_agent_runs_on_ray_and_the_mutant_fails_it_as_it_fails_ours(
        tmp_path: Path) -> None:
    (tmp_path / "my_agent.py").write_text(the_docs_agent(), "utf-8")
    assert "agentsweep" not in the_docs_agent()
    home = tmp_path / "home"
    run = subprocess.run(
        [str(BIN / "agentsweep"), "run", "--agent", "builtin", "--agent", "my_agent.py:make",
         "--memory-mode", "chat", "--model", "reference/golden", "--model", MUTANT,
         "--suite", str(MEETING_SUITE), "--repeats", "1", "--run-id", "ext"],
        cwd=tmp_path, env=clean_env(home), capture_output=True, text=True, timeout=300,
        check=False)
    assert run.returncode == 0, run.stderr
    scenarios = len(load_suite(MEETING_SUITE).scenarios)
    rows = run_sql(home / "warehouse", """
        select agent, memory_mode, model, scenario_id, passed, model_calls, tool_calls,
               agent_sha256 is not null as hashed
        from trials where run_id = 'ext' order by agent, model, scenario_id""").rows
    assert len(rows) == 2 * 2 * scenarios
    ours = {r[2:] for r in rows if r[0] == "builtin"}
    theirs = {r[2:] for r in rows if r[0] == "my_agent.py:make"}
    assert {(r[1], r[7]) for r in rows if r[0] == "my_agent.py:make"} == {("own", True)}
    assert {r[:5] for r in theirs} == {r[:5] for r in ours}  # model, scenario, verdict, usage
    failed = {r[1] for r in theirs if r[0] == MUTANT and not r[2]}
    assert failed and not {r[1] for r in theirs if r[0] == "reference/golden" and not r[2]}
    events = run_sql(home / "warehouse", """
        select kind, count(*) from events join trials using (run_id, trial_id, attempt_id)
        where run_id = 'ext' group by all order by kind""").rows
    assert dict(events)["tool_call"] == 2 * sum(r[6] for r in rows if r[0] == "builtin")
