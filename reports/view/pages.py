"""The viewer's pages: small HTML shells (navigation, controls, an empty ``main``) whose script
fills them from the JSON endpoints; and the policy every answer carries.

Nothing is fetched from anywhere but the viewer itself: the Content-Security-Policy allows
scripts, styles and fetches from its own origin only (no inline script, no CDN, no frame), so
even a slip in escaping could neither run nor load anything. Data never becomes markup: the
script writes it with ``textContent``.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Literal

from reports.html.colour import CIVIDIS
from reports.html.markup import Escaper, Markup, join

PageName = Literal["index", "trends", "search", "side"]
TITLES: dict[PageName, str] = {"index": "runs", "trends": "trends across runs",
                               "search": "search trials", "side": "side by side"}
LINKS: tuple[tuple[str, PageName], ...] = (("/", "index"), ("/trends", "trends"),
                                           ("/search", "search"), ("/side", "side"))
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
          "img-src 'self' data:; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
"""The viewer pages' Content-Security-Policy."""
HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store", "X-Frame-Options": "DENY"}
"""Sent with every answer, beside the policy."""


def asset(name: str) -> str:
    return resources.files("reports.view").joinpath("assets", name).read_text("utf-8")


_CONTROLS: dict[PageName, str] = {
    "index": (
        '<form id="filters" class="filters" role="search">'
        '<label>kind <select name="kind"><option value="">any</option>'
        '<option>adhoc</option><option>nightly</option><option>model-swap</option></select>'
        '</label> <label>state <select name="state"><option value="">any</option>'
        '<option>running</option><option>finished</option><option>stopped</option></select>'
        '</label> <label>run, model or suite <input name="text" type="search"></label></form>'),
    "trends": (
        '<form id="window" class="filters" method="get" action="/trends"><label>runs started '
        'in the last <input name="since" value="30d" size="8"></label> '
        '<button type="submit">show</button></form>'),
    "search": (
        '<form id="search" class="filters" method="get" action="/search">'
        '<label>run <input name="run_id" size="14"></label> '
        '<label>scenario <input name="scenario" list="f-scenario" size="16"></label> '
        '<label>model <input name="model" list="f-model" size="16"></label> '
        '<label>outcome <select name="outcome"><option value="">any</option>'
        '<option>passed</option><option>failed</option><option>unknown</option>'
        '<option>agent_error</option><option>limit</option><option>incomplete</option>'
        '</select></label> '
        '<label>failed check <input name="failed_check" list="f-failed_check" size="16">'
        '</label> <label>first violation <input name="first_violation" '
        'list="f-first_violation" size="16"></label> '
        '<label>text in a reply or a tool argument <input name="text" type="search" '
        'size="20"></label> <button type="submit">search</button>'
        '<datalist id="f-scenario"></datalist><datalist id="f-model"></datalist>'
        '<datalist id="f-failed_check"></datalist><datalist id="f-first_violation">'
        '</datalist></form>'),
    "side": "",
}


def shell(page: PageName, esc: Escaper, poll_ms: int) -> str:
    """The page ``page``: its controls and an empty ``#app`` the script fills."""
    nav = join(['<nav>', *(esc.tag("a", TITLES[name], {"href": href,
                                                        "aria-current": name == page and "page"})
                           for href, name in LINKS), "</nav>"])
    body = Markup(f'<main><h1>{esc(TITLES[page])}</h1>{_CONTROLS[page]}'
                  f'<p id="status" class="meta" aria-live="polite"></p>'
                  f'<div id="app"></div></main>')
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f'<title>agentsweep: {esc(TITLES[page])}</title>'
            f'<link rel="stylesheet" href="/static/report.css">'
            f'<link rel="stylesheet" href="/static/view.css"></head>'
            f'<body data-page="{esc(page)}" data-poll-ms="{poll_ms}" '
            f'data-scale="{esc(json.dumps(CIVIDIS))}">{nav}{body}'
            f'<script src="/static/view.js"></script></body></html>\n')
