"""A flow's decision, published once and read everywhere: the record in the warehouse's
``comparisons`` table (the viewer's), and beside each other in the reports folder the decision
as JSON, JUnit XML and the HTML report, all rendered from the one ``Decision`` so none can say
another verdict."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pipeline.decide.html import decision_report
from reports import Decision, decision_json, decision_junit, store_decision, write_junit
from warehouse.atomic import write_text
from warehouse.location import Root


@dataclass(frozen=True)
class PublishedDecision:
    decision: Decision
    record: Path
    """The decision as JSON (``reports.decision.decision_json``)."""
    junit: Path
    html: Path


def publish(root: Root, decision: Decision, reports: Path) -> PublishedDecision:
    """Store the decision and write ``<candidate>-vs-<baseline>.{decision.json,junit.xml,html}``
    under ``reports``."""
    store_decision(root, decision)
    reports.mkdir(parents=True, exist_ok=True)
    stem = reports / f"{decision.candidate}-vs-{decision.baseline}"
    record = stem.with_name(stem.name + ".decision.json")
    write_text(record, json.dumps(decision_json(decision), indent=2, ensure_ascii=False) + "\n")
    junit = write_junit(stem.with_name(stem.name + ".junit.xml"), decision_junit(root, decision))
    html = decision_report(root, stem.with_name(stem.name + ".html"), decision.candidate,
                           decision)
    return PublishedDecision(decision, record, junit, html)
