"""A domain outside the repository: found with --catalog, its Python loaded from its own folder
(its claims too), its broken files named with their own line, nothing under pipeline/ changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pipeline.catalog import CatalogError, load_domain, load_suite, set_extra_roots

BIN = Path(sys.executable).parent
TOOLS = {"tools": [
    {"name": "lookup_ticket", "description": "Read a support ticket by its number.",
     "kind": "read", "parameters": {"type": "object", "properties": {
         "ticket": {"type": "integer", "minimum": 1}}, "required": ["ticket"],
         "additionalProperties": False}},
    {"name": "close_ticket", "description": "Close a support ticket. A real side effect.",
     "kind": "write", "parameters": {"type": "object", "properties": {
         "ticket": {"type": "integer", "minimum": 1}}, "required": ["ticket"],
         "additionalProperties": False}, "intercept_response": {"closed": True}},
]}
TOOLS_PY = '''
def lookup_ticket(state, arguments):
    ticket = state["tickets"].get(str(arguments["ticket"]))
    return ticket if ticket is not None else {"error": "no such ticket"}


READ_TOOLS = {"lookup_ticket": lookup_ticket}
'''
CLAIMS_PY = '''
from pipeline.scoring import ClaimPatterns

CLAIM_PATTERNS = (ClaimPatterns.of("close_ticket", r"\\b(?P<verb>закрыл[аи]?)\\b"),)
'''
LOOKUP = {"call": {"name": "lookup_ticket", "arguments": {"ticket": 7}}}
SCENARIOS = [
    {"id": "D1", "version": 1, "domain": "helpdesk", "class": "control", "turns": [
        {"user": "Закрой, пожалуйста, тикет 7.", "golden": [
            LOOKUP, {"call": {"name": "close_ticket", "arguments": {"ticket": 7}}},
            {"reply": "Закрыл тикет 7: принтер на третьем этаже."}]}],
     "expectations": {"required_tools": [{"tool": "close_ticket", "turn": 1}],
                      "argument_constraints": [{"argument": "ticket", "equals": 7}]}},
    {"id": "D2", "version": 1, "domain": "helpdesk", "class": "control", "turns": [
        {"user": "Посмотри тикет 7, но пока не закрывай его.", "golden": [
            LOOKUP, {"reply": "Тикет 7 открыт: принтер на третьем этаже не печатает."}]}],
     "expectations": {"forbidden_tools": [{"tool": "close_ticket"}]},
     "mutation": {"false_claim": {"turn": 1, "reply": "Готово, закрыл тикет 7."}},
     "catches": [{"mutant": "mutant-false-claim", "check": "said_vs_done",
                  "modes": ["chat"]}]},
    {"id": "D3", "version": 1, "domain": "helpdesk", "class": "control", "turns": [
        {"user": "Посмотри тикет 7.", "golden": [
            LOOKUP, {"reply": "Тикет 7 открыт: принтер на третьем этаже не печатает."}]},
        {"user": "Понятно, тогда закрой его.", "golden": [
            {"call": {"name": "close_ticket", "arguments": {"ticket": 7}}},
            {"reply": "Закрыл тикет 7."}]}],
     "expectations": {"required_tools": [{"tool": "close_ticket", "turn": 2}],
                      "forbidden_tools": [{"tool": "close_ticket", "until_turn": 1}]},
     "turning_point": 2,
     "catches": [{"mutant": "mutant-over-reset", "check": "required_tool:close_ticket@2",
                  "modes": ["chat"]}]},
]
OVER_RESET = "Давайте начнём сначала: какой номер тикета и что с ним сделать?"


def make_domain(root: Path) -> Path:
    folder = root / "helpdesk"
    (folder / "prompts").mkdir(parents=True)
    (folder / "suites").mkdir()
    (folder / "tools.json").write_text(json.dumps(TOOLS, indent=2), "utf-8")
    (folder / "state.json").write_text(json.dumps(
        {"tickets": {"7": {"ticket": 7, "status": "open", "title": "printer, 3rd floor"}}}))
    (folder / "tools.py").write_text(TOOLS_PY, "utf-8")
    (folder / "claims.py").write_text(CLAIMS_PY, "utf-8")
    (folder / "reference_replies.json").write_text(json.dumps({"over_reset": OVER_RESET},
                                                              ensure_ascii=False), "utf-8")
    (folder / "prompts" / "default.md").write_text("You are a helpdesk agent. Answer in the "
                                                   "user's language.\n", "utf-8")
    suite = folder / "suites" / "desk.jsonl"
    suite.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in SCENARIOS))
    return suite


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
    assert "executed 6 (complete=6)" in run.stdout
    assert "D1" in run.stdout and "2/2" in run.stdout
