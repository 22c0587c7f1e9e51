"""A domain outside the repository, written to disk by tests: a helpdesk with its own tools,
claims and reference replies (loaded by path, never imported)."""

from __future__ import annotations

import json
from pathlib import Path

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
