"""``agentsweep view``: a local, read-only web app over the warehouse (Starlette).

Pages (``pages``) and JSON endpoints (``data``), GET only; a run's page is the HTML report of
``agentsweep report html`` itself (its sections and trace viewer, rendered on request), so
nothing of the report is written twice. Every answer carries the Content-Security-Policy and
the headers of ``pages``; a request whose Host is not the viewer's own address is refused (no
page of another site can reach it through a name that resolves to loopback). Every text is
scrubbed (the caller's redaction) before it leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

import reports.view.data as data
from reports.html import ReportInputError, ReportOptions, TraceOptions, render
from reports.html.markup import Escaper, Scrub
from reports.html.page import asset as report_asset
from reports.html.page import report_policy
from reports.trends import WindowError, window_start
from reports.view.pages import HEADERS, POLICY, PageName, asset, shell
from reports.view.progress import LockHeld
from warehouse.location import Root
from warehouse.query import unknown_run


@dataclass(frozen=True)
class ViewOptions:
    root: Root
    """The warehouse."""
    scrub: Scrub
    """Redaction applied to every text served (pipeline.util.redact.redact)."""
    lock_held: LockHeld | None = None
    """Whether a driver runs a run now (its run lock); None: every open run counts as running."""
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    """Host names the viewer answers to."""
    poll_ms: int = 2000
    """How often the index asks again while a run is running."""
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)


class BadRequest(ValueError):
    pass


def _headers(policy: str = POLICY) -> dict[str, str]:
    return {"Content-Security-Policy": policy, **HEADERS}


def _json(options: ViewOptions, value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(Escaper(options.scrub).data(value), status_code=status,
                        headers=_headers())


def _arg(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _since(request: Request) -> datetime:
    try:
        return window_start(_arg(request, "since") or "30d")
    except WindowError as exc:
        raise BadRequest(str(exc)) from None


def _search_query(request: Request) -> data.SearchQuery:
    outcome = _arg(request, "outcome")
    if outcome is not None and outcome not in data.OUTCOMES:
        raise BadRequest(f"outcome {outcome!r}: expected one of {', '.join(data.OUTCOMES)}")
    return data.SearchQuery(
        run_id=_arg(request, "run_id"), scenario=_arg(request, "scenario"),
        model=_arg(request, "model"), outcome=outcome,
        failed_check=_arg(request, "failed_check"),
        first_violation=_arg(request, "first_violation"), text=_arg(request, "text"))


def _endpoints(options: ViewOptions) -> dict[str, Callable[[Request], Any]]:
    root = options.root

    def cell(request: Request) -> Any:
        key = {k: _arg(request, k) for k in data.CELL_KEY}
        if any(v is None for v in key.values()):
            raise BadRequest(f"a cell is named by {', '.join(data.CELL_KEY)}")
        return data.cell_series(root, {k: str(v) for k, v in key.items()}, _since(request))

    def trace(request: Request) -> Any:
        run_id, trial_id = _arg(request, "run_id"), _arg(request, "trial_id")
        if run_id is None or trial_id is None:
            raise BadRequest("a trace is named by run_id and trial_id")
        missing = unknown_run(root, run_id)  # a run id names a folder: checked first
        if missing is not None:
            raise BadRequest(missing)
        found = data.trace(root, run_id, trial_id)
        if found is None:
            raise BadRequest(f"no trial {trial_id!r} in run {run_id!r}")
        return {"run_id": run_id, "trial_id": trial_id, **found}

    return {
        "runs": lambda r: data.runs_index(root, options.clock(), options.lock_held),
        "trends": lambda r: data.trends(root, _since(r)),
        "cell": cell,
        "search": lambda r: data.search(root, _search_query(r)),
        "facets": lambda r: data.facets(root),
        "trace": trace,
    }


def create_app(options: ViewOptions) -> Starlette:
    """The viewer over ``options.root``."""
    endpoints = _endpoints(options)

    def api(request: Request) -> Response:
        handler = endpoints.get(request.path_params["name"])
        if handler is None:
            return _json(options, {"error": "no such endpoint"}, 404)
        try:
            return _json(options, handler(request))
        except BadRequest as exc:
            return _json(options, {"error": str(exc)}, 400)

    def page(name: PageName) -> Callable[[Request], Response]:
        def answer(request: Request) -> Response:
            return HTMLResponse(shell(name, Escaper(options.scrub), options.poll_ms),
                                headers=_headers())
        return answer

    def run_page(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        missing = unknown_run(options.root, run_id)
        if missing is not None:
            return HTMLResponse(Escaper(options.scrub)(missing), 404, headers=_headers())
        trial = _arg(request, "trial")
        report = ReportOptions(options.scrub, TraceOptions(include=(trial,) if trial else ()))
        try:
            text = render(options.root, run_id, report)
        except ReportInputError as exc:
            return HTMLResponse(Escaper(options.scrub)(str(exc)), 400, headers=_headers())
        return HTMLResponse(text, headers=_headers(report_policy(report_asset("report.js"))))

    statics = {"view.js": ("application/javascript", asset("view.js")),
               "view.css": ("text/css", asset("view.css")),
               "report.css": ("text/css", report_asset("report.css"))}

    def static(request: Request) -> Response:
        found = statics.get(request.path_params["name"])
        if found is None:
            return Response("not found", 404, headers=_headers())
        return Response(found[1], media_type=found[0], headers=_headers())

    def no_icon(request: Request) -> Response:
        return Response(status_code=204, headers=_headers())

    routes = [Route("/", page("index")), Route("/trends", page("trends")),
              Route("/search", page("search")), Route("/side", page("side")),
              Route("/favicon.ico", no_icon),
              Route("/runs/{run_id}", run_page), Route("/api/{name}", api),
              Route("/static/{name}", static)]
    return Starlette(routes=routes, middleware=[
        Middleware(TrustedHostMiddleware, allowed_hosts=list(options.hosts))])
