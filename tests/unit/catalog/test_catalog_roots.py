"""A domain outside the repository: found with --catalog, its Python loaded from its own folder
(its claims too), its broken files named with their own line, nothing under pipeline/ changed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.outside_domain import OVER_RESET, make_domain
from typer.testing import CliRunner

from pipeline.catalog import CatalogError, load_domain, load_suite, set_extra_roots

BIN = Path(sys.executable).parent


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    suite = make_domain(tmp_path / "elsewhere")
    yield suite
    set_extra_roots([])


def test_a_domain_outside_the_repo_loads_with_its_own_python_and_claims(outside: Path) -> None:
    set_extra_roots([outside.parents[2]])
    domain = load_domain("helpdesk")
    assert domain.path == outside.parents[1]
    assert domain.read_tools["lookup_ticket"](dict(domain.seed_state), {"ticket": 7})["status"] \
        == "open"
    assert [p.tool for p in domain.claim_patterns] == ["close_ticket"]
    assert [s.scenario.id for s in load_suite(outside).scenarios] == ["D1", "D2", "D3"]
    assert domain.reference_replies.over_reset == OVER_RESET


def test_the_reference_mutants_speak_the_outside_domains_own_words(outside: Path) -> None:
    from pipeline.sweep.grid import ModelConfig, expand
    from pipeline.trace import AssistantMessage
    from pipeline.trial.run import RunContext, run_trial

    set_extra_roots([outside.parents[2]])
    (spec,) = [s for s in expand([load_suite(outside)], [ModelConfig(
        "reference/mutant-over-reset")], ["default"], ["chat"], 1) if s.scenario.id == "D3"]
    result = run_trial(spec, RunContext("outside", "test"))
    said = [e.content for e in result.events if isinstance(e, AssistantMessage) and e.turn == 2]
    assert said == [OVER_RESET]  # the domain's words, nothing from pipeline/
    assert result.trial.first_violation_check == "required_tool:close_ticket@2"


def test_verify_suite_proves_the_outside_domain_and_its_claims(outside: Path) -> None:
    from pipeline.cli import app as cli
    result = CliRunner().invoke(cli.app, ["verify-suite", "--catalog", str(outside.parents[2]),
                                          "--suite", str(outside), "--memory-mode", "chat"])
    assert result.exit_code == 0, result.output
    assert "caught said_vs_done" in result.output  # only the domain's own claims see it
    from pipeline.verify.mutants import verify

    (cell,) = [c for c in verify([load_suite(outside)], ["chat"], ["mutant-over-reset"])
               if c.scenario_id == "D3" and c.model == "reference/mutant-over-reset"]
    assert cell.label() == "caught required_tool:close_ticket@2"  # its own over-reset reply


def test_a_broken_domain_file_names_its_own_file_and_line(outside: Path) -> None:
    tools = outside.parents[1] / "tools.json"
    text = tools.read_text().replace('"kind": "write"', '"kind": "mutate"')
    tools.write_text(text)
    set_extra_roots([outside.parents[2]])
    with pytest.raises(CatalogError) as caught:
        load_suite(outside)
    line = next(n for n, t in enumerate(text.splitlines(), start=1) if '"mutate"' in t)
    assert (caught.value.path, caught.value.line) == (str(tools), line)
    assert caught.value.field == "tools.1.kind"


@pytest.mark.slow
def test_a_sweep_runs_the_outside_domain_on_ray(outside: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(tmp_path / "home"), AGENTSWEEP_PROGRESS="0")
    run = subprocess.run([str(BIN / "agentsweep"), "run", "--catalog", str(outside.parents[2]),
                          "--suite", str(outside), "--memory-mode", "chat", "--repeats", "2",
                          "--run-id", "outside"], env=env, capture_output=True, text=True,
                         timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "grid 6 trials: executed 6" in run.stdout
    assert run.stdout.strip().splitlines()[-1].endswith("0 incomplete (of 6 trials); exit 0")
    assert "D1" in run.stdout and "2/2" in run.stdout
