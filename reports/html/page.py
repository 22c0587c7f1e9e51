"""One self-contained HTML file: the sections, the stylesheet and the viewer's script inlined,
the viewer's data embedded as JSON. Nothing is fetched: the Content-Security-Policy allows no
source at all but the page's own inline style and its one script (by hash), so even a slip in
escaping could not run or load anything. Written atomically: a failure leaves no file."""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from reports.decision import Decision
from reports.html.baseline import baseline_side
from reports.html.charts import hatch_defs
from reports.html.context import Page
from reports.html.data import ReportInputError, load_run
from reports.html.markup import Escaper, Markup, Scrub, embedded_json, join
from reports.html.sections_compare import baseline_provenance, deltas, transitions, verdict
from reports.html.sections_conditions import failure_map
from reports.html.sections_run import (
    first_violations,
    header,
    matrix,
    score_lines,
    stability,
    usage,
)
from reports.html.traces import TraceOptions, embedded_traces, trial_index
from warehouse.atomic import atomic_text
from warehouse.frames import frame_named
from warehouse.location import Root


def asset(name: str) -> str:
    return resources.files("reports.html").joinpath("assets", name).read_text("utf-8")


def script_hash(script: str) -> str:
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def report_policy(script: str) -> str:
    """The report's Content-Security-Policy: nothing fetched, only its own inline style and its
    one script (by hash)."""
    return (f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
            f"script-src '{script_hash(script)}'; base-uri 'none'; form-action 'none'")


@dataclass(frozen=True)
class ReportOptions:
    scrub: Scrub
    """Redaction applied to every text the report shows (pipeline.util.redact.redact)."""
    traces: TraceOptions = field(default_factory=TraceOptions)
    decision: Decision | None = None
    """A comparison (the report's run is its candidate)."""


def _nav(page: Page, decision: Decision | None) -> Markup:
    links = [("#header", "run"), *([("#comparison", "comparison")] if decision else []),
             ("#matrix-section", "matrix"), ("#stability-section", "stability"),
             ("#violations-section", "first violations"),
             *([("#conditions-section", "failure map")] if page.run.has_conditions else []),
             ("#usage-section", "cost and latency")]
    return join(['<nav>', *(page.esc.tag("a", text, {"href": href}) for href, text in links),
                 "</nav>"])


def _section(esc: Escaper, section_id: str, content: Markup) -> Markup:
    if not content:
        return Markup("")
    return Markup(f'<section id="{esc(section_id)}">{content}</section>')


def _baseline(root: Root, page: Page, baseline: str) -> Markup:
    params = {"run_id": baseline}
    invocations = frame_named(root, "html_run_invocations", params)
    codes = sorted({str(c) for c in invocations["code_version"].to_list()})
    return baseline_provenance(page, frame_named(root, "html_run_models", params), codes)


def render(root: Root, run_id: str, options: ReportOptions) -> str:
    """The report of run ``run_id`` (with a comparison: its candidate) as HTML text."""
    decision = options.decision
    if decision is not None and decision.candidate != run_id:
        raise ReportInputError(f"the comparison's candidate is {decision.candidate!r}, not "
                               f"{run_id!r}")
    esc = Escaper(options.scrub)
    run = load_run(root, run_id)
    page = Page(esc, run, trial_index(run))
    score_lines(page)
    generated = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    title = (f"agentsweep: {run_id} vs {decision.baseline}" if decision
             else f"agentsweep: run {run_id}")
    comparison = (join([verdict(page, decision), _baseline(root, page, decision.baseline),
                        transitions(page, decision),
                        deltas(page, decision)]) if decision else Markup(""))
    body = join([
        _nav(page, decision),
        "<main>",
        _section(esc, "header", header(page, title, generated)),
        _section(esc, "comparison", comparison),
        _section(esc, "matrix-section", matrix(page)),
        _section(esc, "stability-section", stability(page)),
        _section(esc, "violations-section", first_violations(page)),
        _section(esc, "conditions-section", failure_map(page)),
        _section(esc, "usage-section", usage(page)),
        "</main>",
        '<aside id="viewer" hidden aria-live="polite"><button type="button" class="close" '
        'id="viewer-close">close (Esc)</button><div id="viewer-body"></div></aside>',
        hatch_defs(),
    ])
    traces = embedded_traces(root, run_id, options.traces)
    data = esc.data({"run_id": run_id, "index": page.index, "lists": page.lists,
                     "traces": traces,
                     "baseline": baseline_side(root, page, decision, options.traces)
                     if decision else None})
    script = asset("report.js")
    policy = report_policy(script)
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<meta name="generator" content="agentsweep report html">'
            f"<title>{esc(title)}</title><style>{asset('report.css')}</style></head>"
            f'<body data-run="{esc(run_id)}" data-traces="{len(traces)}">{body}'
            f'<script type="application/json" id="report-data">{embedded_json(data)}</script>'
            f"<script>{script}</script></body></html>\n")


def write_report(root: Root, path: Path, run_id: str, options: ReportOptions) -> Path:
    """Render and write ``path`` atomically. ReportInputError (nothing written) when the
    folder does not exist or the run cannot be reported."""
    if not path.parent.is_dir():
        raise ReportInputError(f"-o {path}: the folder {path.parent} does not exist")
    text = render(root, run_id, options)
    with atomic_text(path) as handle:
        handle.write(text)
    return path
