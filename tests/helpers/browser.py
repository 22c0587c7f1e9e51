"""Headless Chromium driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``):
no driver library, no port, no network. Tests and ``benchmarks/html_report.py`` open the HTML
report with it, click, read the DOM, collect console errors and take screenshots.

Network hygiene: Chromium runs in a network namespace of its own (``unshare -n``, or
``unshare -rn`` without root), where no interface but a down loopback exists: even its
IPv6-reachability probe (a UDP connect to 2001:4860:4860::8888) fails with EADDRNOTAVAIL. On top
of that (and alone where no namespace can be made) every host name resolves to nothing
(``--host-resolver-rules``), no proxy, background networking, component updates, sync,
metrics, crash reports and the first-run checks are off, and the profile is a fresh temporary
folder; the report itself forbids every fetch by its Content-Security-Policy.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

Served = tuple[int, dict[str, str], bytes]
"""An answer to a request the page made: status, headers, body."""
Serve = Callable[[str], Served | None]
"""Answers a URL the page asked for, or None: the request fails (it reaches nothing)."""
Forward = Callable[[str, str, dict[str, str], bytes | None], Served | None]
"""Answers a request the page made (method, URL, headers, body), or None: it fails. For pages
that POST (an application's API), where ``Serve`` only sees GETs."""

FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
    "--no-default-browser-check", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps",
    "--disable-extensions", "--disable-domain-reliability", "--disable-breakpad",
    "--disable-client-side-phishing-detection", "--metrics-recording-only",
    "--no-pings", "--no-proxy-server", "--host-resolver-rules=MAP * ~NOTFOUND",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication,"
    "CertificateTransparencyComponentUpdater,InterestFeedContentSuggestions",
    "--window-size=1400,1000", "--remote-debugging-pipe",
)


def chromium_path() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


_ISOLATION: list[str] | None = None


def isolation() -> list[str]:
    """The command prefix that gives Chromium a network namespace of its own (empty when
    neither ``unshare -n`` nor ``unshare -rn`` is allowed here)."""
    global _ISOLATION
    if _ISOLATION is None:
        _ISOLATION = []
        unshare = shutil.which("unshare")
        for prefix in ([unshare, "-n"], [unshare, "-rn"]) if unshare else ():
            done = subprocess.run([*prefix, "true"], capture_output=True, check=False)
            if done.returncode == 0:
                _ISOLATION = prefix
                break
    return _ISOLATION


class BrowserError(RuntimeError):
    pass


def _body(request: dict[str, Any]) -> bytes | None:
    """A paused request's body: ``postData`` text, or its base64 ``postDataEntries``."""
    if "postData" in request:
        return str(request["postData"]).encode("utf-8")
    entries = request.get("postDataEntries") or []
    if entries:
        return b"".join(base64.b64decode(e.get("bytes", "")) for e in entries)
    return None


class Browser:
    """One Chromium process and one page; ``with Browser() as b: b.open(path)``."""

    def __init__(self, timeout_s: float = 60.0, tracer: list[str] | None = None,
                 serve: Serve | None = None, forward: Forward | None = None) -> None:
        """``tracer``: a command put in front of everything (e.g. strace). ``serve``: every
        request the page makes is paused and answered by it (the test's process fetches from a
        server on this machine's loopback, which the browser's own namespace cannot reach);
        ``requests`` lists every URL asked for. ``forward``: the same with every request whole."""
        self.timeout_s = timeout_s
        self.tracer = tracer or []
        self.serve = serve
        self.forward = forward
        self.requests: list[str] = []
        self._answer_id = 1_000_000
        self.errors: list[str] = []
        self._buffer = b""
        self._id = 0
        self._session = ""
        self._events: list[dict[str, Any]] = []

    def __enter__(self) -> Browser:
        binary = chromium_path()
        if binary is None:
            raise BrowserError("no chromium on PATH (apt-get install chromium)")
        self._profile = tempfile.mkdtemp(prefix="agentsweep-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        high_r, high_w = to_child_r + 100, from_child_w + 100
        os.dup2(to_child_r, high_r)
        os.dup2(from_child_w, high_w)

        def child_fds() -> None:  # Chromium reads commands on fd 3, writes on fd 4
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self._process = subprocess.Popen(
            [*self.tracer, *isolation(), binary, *FLAGS, f"--user-data-dir={self._profile}",
             "about:blank"],
            preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_child_r, from_child_w, high_r, high_w):
            os.close(fd)
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        attached = self.call("Target.attachToTarget",
                             {"targetId": target["targetId"], "flatten": True}, session=False)
        self._session = attached["sessionId"]
        for domain in ("Page.enable", "Runtime.enable", "Log.enable"):
            self.call(domain)
        if self.serve is not None or self.forward is not None:
            self.call("Fetch.enable", {"patterns": [{"urlPattern": "*"}]})
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.call("Browser.close", session=False)
        except (BrowserError, OSError):
            pass
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._to_child, self._from_child):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self._profile, ignore_errors=True)

    # the protocol -------------------------------------------------------------------------
    def call(self, method: str, params: dict[str, Any] | None = None, session: bool = True
             ) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session and self._session:
            message["sessionId"] = self._session
        os.write(self._to_child, json.dumps(message).encode("utf-8") + b"\0")
        reply = self._until(lambda m: m.get("id") == self._id)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply.get("result", {})
        return result

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + self.timeout_s
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline:
                raise BrowserError("no answer from chromium")
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the pipe")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        self._note(message)
        return message

    def _until(self, wanted: Any) -> dict[str, Any]:
        for index, event in enumerate(self._events):
            if wanted(event):
                return self._events.pop(index)
        while True:
            message = self._read()
            if wanted(message):
                return message
            if "method" in message:
                self._events.append(message)

    def _note(self, message: dict[str, Any]) -> None:
        method, params = message.get("method"), message.get("params", {})
        if method == "Runtime.exceptionThrown":
            self.errors.append(str(params.get("exceptionDetails", {}).get("text")) + " "
                               + str(params.get("exceptionDetails", {}).get("exception", {})
                                     .get("description", "")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append(" ".join(str(a.get("value", a.get("description")))
                                        for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            self.errors.append(str(params["entry"].get("text")))
        elif method == "Fetch.requestPaused" and (self.serve or self.forward) is not None:
            self._answer(params, message.get("sessionId"))

    def _answer(self, params: dict[str, Any], session: str | None) -> None:
        """A paused request answered by ``serve`` (or failed); its reply is not awaited."""
        request = params["request"]
        url = str(request["url"])
        self.requests.append(url)
        if self.forward is not None:
            found = self.forward(str(request["method"]), url, dict(request.get("headers", {})),
                                 _body(request))
        else:
            assert self.serve is not None
            found = self.serve(url)
        self._answer_id += 1
        message: dict[str, Any] = {"id": self._answer_id, "sessionId": session}
        if found is None:
            message.update(method="Fetch.failRequest", params={
                "requestId": params["requestId"], "errorReason": "AddressUnreachable"})
        else:
            status, headers, body = found
            message.update(method="Fetch.fulfillRequest", params={
                "requestId": params["requestId"], "responseCode": status,
                "responseHeaders": [{"name": k, "value": v} for k, v in headers.items()],
                "body": base64.b64encode(body).decode("ascii")})
        os.write(self._to_child, json.dumps(message).encode("utf-8") + b"\0")

    # what tests use -----------------------------------------------------------------------
    def open(self, path: Path) -> float:
        """Load the file and wait until the report's script ran; seconds from navigation to
        the script being ready (the load event has fired by then)."""
        return self.open_url(path.resolve().as_uri())

    def open_url(self, url: str) -> float:
        """Load the URL and wait until the page's script ran (``document.body.dataset.ready``);
        seconds from navigation to then."""
        self._events.clear()
        started = time.monotonic()
        self.call("Page.navigate", {"url": url})
        self._until(lambda m: m.get("method") == "Page.loadEventFired")
        while not self.evaluate("document.body && document.body.dataset.ready === '1'"):
            if time.monotonic() - started > self.timeout_s:
                raise BrowserError("the report's script never became ready")
            time.sleep(0.01)
        return time.monotonic() - started

    def wait_for(self, expression: str, timeout_s: float = 20.0) -> Any:
        """The value of ``expression`` once it is truthy (asked again every 50 ms; the page's
        requests are answered meanwhile). An expression that throws (a page still loading has
        no body yet) counts as not yet."""
        deadline = time.monotonic() + timeout_s
        last = ""
        while True:
            try:
                value = self.evaluate(expression)
            except BrowserError as exc:
                value, last = None, str(exc)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"never true: {expression} {last}")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result.get("result", {}).get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the centre of the element."""
        box = self.evaluate(
            f"(function(){{var e=document.querySelector({json.dumps(selector)});"
            "if(!e) return null; e.scrollIntoView({block:'center'});"
            "var r=e.getBoundingClientRect(); return [r.x + r.width/2, r.y + r.height/2];}())")
        if box is None:
            raise BrowserError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                   "button": "left", "clickCount": 1})

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": size["width"], "height": min(size["height"], 6000),
                "scale": 1})
        data = self.call("Page.captureScreenshot", params)["data"]
        path.write_bytes(base64.b64decode(data))
        return path
