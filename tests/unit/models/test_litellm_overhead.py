"""LiteLLM's bookkeeping nobody reads, switched off through its real HTTP path: no success-logging
work handed to its thread pool per call, no price search for an unpriced model, and the cost we
record still only the provider's own report."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pipeline.models import litellm_overhead
from pipeline.models.client import LiteLLMClient, litellm_module
from pipeline.models.config import ModelConfig
from pipeline.reference.reference import SCRIPT_KEY
from pipeline.reference.server import ServerHandle, start_server

SCRIPT = {"turns": [{"actions": [{"reply": "done."}]}]}
USER = [{"role": "user", "content": "Book it."}]


@pytest.fixture(scope="module")
def litellm() -> Any:
    return litellm_module()


@pytest.fixture(scope="module")
def server() -> Iterator[ServerHandle]:
    with start_server() as handle:
        yield handle


def reference_client(server: ServerHandle, direct: bool = True) -> LiteLLMClient:
    """``direct=False``: every call through ``litellm.completion`` (pipeline.models.direct)."""
    return LiteLLMClient(ModelConfig("reference-http/golden"),
                         {"api_base": server.api_base, "extra_body": {SCRIPT_KEY: SCRIPT}},
                         direct=direct)


@pytest.fixture
def submitted(litellm: Any, monkeypatch: pytest.MonkeyPatch) -> list[Callable[..., Any]]:
    """What LiteLLM hands to its logging thread pool (the pool still runs it)."""
    from litellm.litellm_core_utils.thread_pool_executor import executor

    seen: list[Callable[..., Any]] = []
    real = executor.submit

    def counting(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        seen.append(fn)
        return real(fn, *args, **kwargs)

    monkeypatch.setattr(executor, "submit", counting)
    return seen


def test_no_logging_work_is_submitted_per_call(server: ServerHandle,
                                               submitted: list[Callable[..., Any]]) -> None:
    client = reference_client(server)
    for _ in range(3):
        assert client.complete(USER, None).content == "done."
    assert submitted == []


def test_a_configured_callback_is_still_called(litellm: Any, server: ServerHandle,
                                               submitted: list[Callable[..., Any]],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    called = threading.Event()
    monkeypatch.setattr(litellm, "success_callback", [lambda *args: called.set()])
    assert reference_client(server).complete(USER, None).content == "done."
    assert called.wait(timeout=10), "the user's success callback never ran"
    assert submitted, "LiteLLM logs through its thread pool when a callback is configured"


def test_an_unpriced_model_is_priced_nominally_without_a_search(
        litellm: Any, server: ServerHandle, monkeypatch: pytest.MonkeyPatch) -> None:
    from litellm.litellm_core_utils import litellm_logging

    responses: list[Any] = []
    real = litellm.completion

    def spying(*args: Any, **kwargs: Any) -> Any:
        responses.append(real(*args, **kwargs))
        return responses[-1]

    searched: list[str] = []
    search = litellm_logging.pricing_entry_for_cost_calc

    def counting(*args: Any, **kwargs: Any) -> Any:
        searched.append(str(kwargs.get("model")))
        return search(*args, **kwargs)

    client = reference_client(server, direct=False)
    client.complete(USER, None)  # the price table read once per model (pricing_options)
    monkeypatch.setattr(litellm, "completion", spying)
    monkeypatch.setattr(litellm_logging, "pricing_entry_for_cost_calc", counting)
    reply = client.complete(USER, None)
    (response,) = responses
    # LiteLLM priced it from the per-call nominal price, and its zero-cost diagnostic (a second
    # price search, which fails for a model without a price) had nothing to look into
    assert searched == []
    assert 0 < response._hidden_params["response_cost"] < 1e-20
    assert reply.cost_usd is None  # the provider reported no cost: none recorded
    assert all("cost_per_token" not in key for key in server.received[-1])  # never sent


def test_the_price_table_is_read_once_per_model(litellm: Any,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    looked_up: list[str] = []
    real = litellm.get_model_info

    def counting(model: str, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(model)
        return real(model, *args, **kwargs)

    monkeypatch.setattr(litellm, "get_model_info", counting)
    monkeypatch.setattr(litellm_overhead, "_priced", {})
    for _ in range(3):
        assert litellm_overhead.pricing_options(litellm, "openai/golden", {}) == \
            litellm_overhead.NOMINAL_PRICE
        assert litellm_overhead.pricing_options(litellm, "openai/gpt-4o-mini", {}) == {}
    assert sorted(looked_up) == ["openai/golden", "openai/gpt-4o-mini"]
    assert litellm_overhead.pricing_options(  # a call that prices the model itself
        litellm, "openai/golden", {"input_cost_per_token": 1e-6}) == {}


# --- the recorded cost: the provider's report, and nothing else --------------------------------

class _ReportingCost(BaseHTTPRequestHandler):
    """An OpenAI-compatible answer whose usage carries the cost in the request's model name."""

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        usage: dict[str, Any] = {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}
        if body["model"].startswith("cost-"):
            usage["cost"] = float(body["model"].removeprefix("cost-"))
        data = json.dumps({
            "id": "chatcmpl-1", "object": "chat.completion", "created": 0,
            "model": body["model"], "usage": usage,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def reporting() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _ReportingCost)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


@pytest.mark.parametrize(("model", "recorded"), [
    ("openai/cost-0.0125", 0.0125),  # unpriced by LiteLLM, reported by the provider
    ("openai/gpt-4o-mini", None),  # priced by LiteLLM, reported by nobody: never its estimate
    ("openai/golden", None),  # unpriced and unreported
])
def test_the_recorded_cost_is_the_providers_report_only(litellm: Any, reporting: str,
                                                        model: str,
                                                        recorded: float | None) -> None:
    client = LiteLLMClient(ModelConfig(model), {"api_base": reporting, "api_key": "no-key"})
    reply = client.complete(USER, None)
    assert reply.content == "ok" and reply.input_tokens == 3
    assert reply.cost_usd == recorded


@pytest.fixture
def event_loops(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Event loops made by ``asyncio.run`` (LiteLLM's service hook, in a thread without one)."""
    import asyncio

    made: list[object] = []
    real = asyncio.run

    def counting(main: Any, **kwargs: Any) -> Any:
        made.append(main)
        return real(main, **kwargs)

    monkeypatch.setattr(asyncio, "run", counting)
    return made


def _in_a_fresh_thread(call: Callable[[], Any]) -> Any:
    """As a trial thread runs it: no event loop of its own."""
    out: list[Any] = []
    worker = threading.Thread(target=lambda: out.append(call()))
    worker.start()
    worker.join(timeout=60)
    return out[0]


def test_no_event_loop_is_made_per_call_for_timing_nobody_reads(
        server: ServerHandle, event_loops: list[object]) -> None:
    client = reference_client(server)
    for _ in range(3):
        assert _in_a_fresh_thread(lambda: client.complete(USER, None).content) == "done."
    assert event_loops == []


def test_a_configured_service_callback_still_gets_its_timing(
        litellm: Any, server: ServerHandle, event_loops: list[object],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from litellm._service_logger import ServiceLogging

    timed: list[str] = []

    async def record(self: Any, *args: Any, **kwargs: Any) -> None:
        timed.append(kwargs.get("call_type", ""))

    monkeypatch.setattr(ServiceLogging, "async_service_success_hook", record)
    monkeypatch.setattr(litellm, "service_callback", ["prometheus_system"])
    client = reference_client(server)
    assert _in_a_fresh_thread(lambda: client.complete(USER, None).content) == "done."
    assert timed and event_loops  # LiteLLM's own path: its hook ran, on a loop of its own


def test_each_thread_keeps_its_own_connection(litellm: Any, server: ServerHandle) -> None:
    """Calls of one thread reuse its connection; threads never share (or wait for) one
    (pipeline.models.http_pools)."""
    from pipeline.models.http_pools import PerThreadTransport

    transport = litellm.client_session._transport
    assert isinstance(transport, PerThreadTransport)
    client = reference_client(server)

    def two_calls() -> tuple[int, int]:
        client.complete(USER, None)
        first = id(transport.current())
        client.complete(USER, None)
        return first, id(transport.current())

    a_first, a_second = _in_a_fresh_thread(two_calls)
    b_first, _ = _in_a_fresh_thread(two_calls)
    assert a_first == a_second and a_first != b_first


def test_litellms_own_cache_entry_is_not_a_users_callback(
        litellm: Any, server: ServerHandle, submitted: list[Callable[..., Any]],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """LiteLLM registers "cache" in its callback lists whenever a cache object was made in the
    process; the calls stay quiet (a user's callback would not: see above)."""
    for name in ("input_callback", "success_callback", "_async_success_callback"):
        monkeypatch.setattr(litellm, name, ["cache"])
    assert not litellm_overhead.logging_configured(litellm)
    assert reference_client(server).complete(USER, None).content == "done."
    assert submitted == []


def test_the_client_reads_cookies_only_from_a_response_that_sets_one(
        litellm: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """httpx reads every response into its cookie jar; the installed client skips the
    responses without ``Set-Cookie`` and still keeps the cookies a response sets."""
    import httpx

    from pipeline.models.http_pools import CookiesWhenSet

    assert isinstance(litellm.client_session.cookies, CookiesWhenSet)
    read: list[str] = []
    real = httpx.Cookies.extract_cookies

    def counting(self: httpx.Cookies, response: httpx.Response) -> None:
        read.append(str(response.url))
        real(self, response)

    monkeypatch.setattr(httpx.Cookies, "extract_cookies", counting)

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/sets":
            return httpx.Response(200, headers={"set-cookie": "lb=node-2; Path=/"})
        return httpx.Response(200, json={"cookie": request.headers.get("cookie")})

    client = httpx.Client(transport=httpx.MockTransport(answer))
    client._cookies = CookiesWhenSet()
    client.get("http://api.test/plain")
    assert read == []
    client.get("http://api.test/sets")
    assert read == ["http://api.test/sets"] and client.cookies.get("lb") == "node-2"
    assert client.get("http://api.test/plain").json() == {"cookie": "lb=node-2"}
