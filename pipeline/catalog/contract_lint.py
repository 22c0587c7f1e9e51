"""Lint of a cases suite's contract (the three-errors method's lesson): a case must not demand an
outcome code
the domain's prompt never defines.

A code is *defined* when a prompt line gives it a meaning: the code at the start of the line (a
list bullet and backticks or quotes allowed), then a colon or a dash and its meaning -
``- shipped: the order has already been shipped ...``. A code that only appears in a list of
allowed values ("one of cancelled, denied, shipped") is named, not defined: the agent cannot
know when to choose it, so a check that demands it tests a convention the prompt never stated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.catalog.domains import load_domain
from pipeline.catalog.loader import Suite


@dataclass(frozen=True)
class ContractFinding:
    suite: str
    line: int
    case_id: str
    prompt_id: str
    code: str

    def message(self) -> str:
        return (f"{self.suite}:{self.line}: expected.decision: {self.code!r} is never defined "
                f"in prompt {self.prompt_id} (no line gives it a meaning): the case demands a "
                "convention the agent was not told")


def defines(prompt: str, code: str) -> bool:
    pattern = re.compile(rf"^\s*(?:[-*•]\s*)?[`\"']?{re.escape(code)}[`\"']?\s*(?::|—|–|-)\s*\S",
                         re.MULTILINE)
    return pattern.search(prompt) is not None


def lint_contract(suite: Suite) -> list[ContractFinding]:
    """Every (case, prompt) whose expected decision code the prompt does not define."""
    findings = []
    for loaded in suite.scenarios:
        rules = loaded.scenario.case
        if rules is None:
            continue
        domain = load_domain(loaded.scenario.domain)
        code = rules.expected.decision
        for name in domain.prompt_names():
            prompt = domain.prompt(name)
            if not defines(prompt.text, code):
                findings.append(ContractFinding(str(suite.path), loaded.line,
                                                loaded.scenario.id, prompt.id, code))
    return findings
