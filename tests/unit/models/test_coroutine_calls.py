"""Model calls from trials run as coroutines (pipeline.runtime.as_coroutine) wait together on
the event loop, whichever way they go: the direct path sends through the loop's own HTTP
transport, and a provider LiteLLM sends itself (Gemini's wire, through ``litellm.completion``)
waits in a thread of its own; the loop is never held."""

from __future__ import annotations

import asyncio
import itertools
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_domain, load_suite
from pipeline.models.client import LiteLLMClient
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultDecision
from pipeline.models.providers import provider_for
from pipeline.reference.server import start_server
from pipeline.runtime.as_coroutine import run_as_coroutine

CALLS = 8
LATENCY_S = 0.4


def _slow(decision: FaultDecision) -> FaultDecision:
    return replace(decision, delay_s=LATENCY_S) if decision.kind == "none" else decision


@pytest.mark.slow  # imports LiteLLM and waits on a server that answers in 0.4 s
@pytest.mark.parametrize(("wire", "model", "key", "direct"), [
    ("openai", "reference-http/golden", "OPENAI_API_KEY", True),
    ("gemini", "reference-gemini/golden", "GEMINI_API_KEY", False),
])
def test_calls_of_trial_coroutines_overlap_and_never_hold_the_loop(
        wire: str, model: str, key: str, direct: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(key, "sk-test")
    scenario = load_suite(Path(MEETING_SUITE)).scenarios[0].scenario
    domain = load_domain(scenario.domain)
    with start_server(wire=wire) as server:
        decide = server.server.decide
        server.server.decide = lambda profile: _slow(decide(profile))  # type: ignore[method-assign]
        client = LiteLLMClient(ModelConfig(model, api_base=server.api_base))
        params = provider_for(model).trial_params(client.route, scenario, domain)
        client.call_params = {**params, "api_base": server.api_base}
        messages = [{"role": "system", "content": "You book meeting rooms."},
                    {"role": "user", "content": scenario.turns[0].user}]
        ticks: list[float] = []

        async def ticking() -> None:
            while len(ticks) < 10:
                ticks.append(time.monotonic())
                await asyncio.sleep(0.05)

        async def calls() -> list[Any]:
            trials = [run_as_coroutine(client.complete, messages, domain.openai_tools())
                      for _ in range(CALLS)]
            return list(await asyncio.gather(*trials, ticking()))[:CALLS]

        client.complete(messages, domain.openai_tools())  # LiteLLM imported, the route resolved
        started = time.monotonic()
        replies = asyncio.run(calls())
        took = time.monotonic() - started
    assert (client._direct is not None) == direct
    assert all(r.tool_calls or r.content for r in replies)
    assert took < CALLS * LATENCY_S / 2, took  # together, not one after another
    assert max(b - a for a, b in itertools.pairwise(ticks)) < LATENCY_S  # the loop kept on
