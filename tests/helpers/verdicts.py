"""One decision, every output: the terminal's last line, the exit code, the HTML report's
headline, the JUnit gate suite, the viewer's runs index and (for a flow) Prefect's state must
all say the same verdict."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reports.view import data

STATES = {"admit": "COMPLETED", "block": "FAILED", "incomplete": "FAILED"}
CODES = {"admit": 0, "block": 1, "incomplete": 3}


def assert_one_verdict(verdict: str, *, candidate: str, root: Any, code: int,
                       last_line: str | None = None, html: Path | None = None,
                       junit: Path | None = None,
                       prefect_state: dict[str, Any] | None = None) -> None:
    """``verdict`` (admit / block / incomplete) is what every output given says."""
    assert code == CODES[verdict]
    if last_line is not None:
        assert last_line.startswith(f"{verdict.upper()}: {candidate} against "), last_line
        assert last_line.endswith(f"exit {code}"), last_line
    if html is not None:
        headline = re.search(r'<h2 class="verdict [a-z]+" id="verdict">([^<]*)</h2>',
                             html.read_text("utf-8"))
        assert headline is not None and headline.group(1) == (
            f"Gate: {verdict.upper()} (exit {code})"), html
    if junit is not None:
        suite = next(s for s in ET.parse(junit).getroot().iter("testsuite")
                     if s.get("name") == "agentsweep.gate")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["verdict"] == verdict and props["candidate_run_id"] == candidate
        assert (suite.get("failures") != "0" or suite.get("errors") != "0") == (
            verdict != "admit")
    [run] = [r for r in data.runs_index(root, datetime.now(UTC), None)
             if r["run_id"] == candidate]
    assert run["verdict"] == verdict, run
    if prefect_state is not None:
        assert prefect_state["type"] == STATES[verdict], prefect_state
        if last_line is not None:
            assert prefect_state["message"].splitlines()[0] == last_line.split("; trials:")[0] \
                or prefect_state["message"].splitlines()[0] == last_line
