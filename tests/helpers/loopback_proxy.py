"""The way a test's headless Chromium (no network of its own: tests/helpers/browser.py) reaches
an application on this machine's loopback: each request it makes is sent from the test's process
to that one origin, method, headers and body as made; any other address fails and is listed."""

from __future__ import annotations

import urllib.error
import urllib.request

from helpers.browser import Served

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class LoopbackProxy:
    def __init__(self, origin: str) -> None:
        self.origin = origin.rstrip("/")
        self.refused: list[str] = []

    def forward(self, method: str, url: str, headers: dict[str, str],
                body: bytes | None) -> Served | None:
        if not url.startswith(self.origin + "/") and url != self.origin:
            self.refused.append(url)
            return None
        sent = {k: v for k, v in headers.items() if k.lower() not in HOP_BY_HOP}
        request = urllib.request.Request(url, data=body, headers=sent, method=method)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(request, timeout=60) as answer:
                return answer.status, _plain(answer.headers.items()), answer.read()
        except urllib.error.HTTPError as exc:
            return exc.code, _plain(exc.headers.items()), exc.read()


def _plain(headers: list[tuple[str, str]]) -> dict[str, str]:
    """The answer's headers without those about the connection (the body is given whole)."""
    return {k: v for k, v in headers if k.lower() not in HOP_BY_HOP}
