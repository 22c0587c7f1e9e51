"""A provider that goes down is paused and probed, not hammered; its trials wait, and every one
completes when it is back, without burning their retry budget."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.execution.breaker import Breaker
from pipeline.execution.clock import Clock as ExecutorClock
from pipeline.execution.retry import RetryPolicy
from pipeline.reference.reference import SCRIPT_KEY, golden_script
from pipeline.reference.server import RequestError, _Handler, start_server
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import execute_plan, plan
from warehouse.query import run_sql


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_breaker_opens_probes_with_backoff_and_closes() -> None:
    clock, said = Clock(), []
    breaker = Breaker(threshold=3, probe_base_s=1, probe_max_s=4, clock=clock,
                      on_change=said.append)
    for _ in range(2):
        breaker.record("openai", infra_failed=True)
    assert not breaker.down("openai") and breaker.allows("openai")
    breaker.record("openai", infra_failed=True)
    assert breaker.down("openai") and said[-1].startswith("provider openai down since")
    assert not breaker.allows("openai")  # no probe before its backoff
    clock.now = 1.0
    assert breaker.allows("openai") and not breaker.allows("openai")  # one probe at a time
    breaker.record("openai", infra_failed=True)  # the probe failed: backoff doubles
    clock.now = 2.5
    assert not breaker.allows("openai")
    clock.now = 3.0
    assert breaker.allows("openai")
    breaker.record("openai", infra_failed=False)
    assert not breaker.down("openai") and "resumed" in said[-1]
    assert breaker.allows("anthropic")  # groups are apart
    for _ in range(3):
        breaker.record("openai", infra_failed=True)
    clock.now = 10.0
    assert breaker.allows("openai") and not breaker.allows("openai")
    breaker.record("openai", infra_failed=None)  # the probe was lost (its worker died)
    assert breaker.down("openai") and breaker.allows("openai")  # the next probe, at once
    breaker.record("openai", infra_failed=False)
    assert not breaker.down("openai")
    assert [o.group for o in breaker.outages] == ["openai", "openai"]
    assert all(o.until for o in breaker.outages)


@pytest.mark.slow
@pytest.mark.parametrize("speed", [1.0, 30.0], ids=["real-time", "simulated-30x"])
def test_a_30_second_outage_mid_sweep_ends_with_every_trial_complete(
        ray_local: Any, tmp_path: Path, speed: float) -> None:
    """The same drill on the wall clock and on the executor's clock scaled 30x (the outage,
    retry backoffs and probes in simulated time): the decisions are the same."""
    clock = ExecutorClock(speed=speed)
    server = start_server(port=0)
    port = server.server.port
    root = tmp_path / "warehouse"
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1", "F1", "C1"],
                         models=["openai/golden"], memory_modes=["chat"], repeats=8,
                         run_id="outage", warehouse=root, max_in_flight=4, batch_size=4,
                         retry=RetryPolicy(max_attempts=3, backoff_base_s=0.2, backoff_max_s=1))
    base = plan(config)
    pending = [replace(s, extra={"api_base": f"http://127.0.0.1:{port}/v1",
                                 "api_key": "sk-test-not-a-key",
                                 "extra_body": {SCRIPT_KEY: golden_script(s.scenario)}})
               for s in base.pending]

    def outage() -> None:
        nonlocal server
        deadline = time.monotonic() + 60
        while sum(server.counts.values()) < 20 and time.monotonic() < deadline:
            time.sleep(0.02)  # mid-sweep: some trials done, most still to come
        server.stop()
        stopped_at = (clock.now(), time.monotonic())
        clock.sleep(30.0)
        server = start_server(port=port)
        window.extend([clock.now() - stopped_at[0], time.monotonic() - stopped_at[1]])

    window: list[float] = []  # the outage on the executor's clock, then on the wall
    cutter = threading.Thread(target=outage, daemon=True)
    cutter.start()
    try:
        statuses = execute_plan(config, replace(base, pending=pending), clock=clock)
    finally:
        cutter.join()
        server.stop()
    trials = len(pending)
    assert statuses == {"complete": trials}
    attempts, failed = run_sql(root, "select count(*), count(*) filter (where outcome = "
                                     "'incomplete') from attempts").rows[0]
    assert failed >= 3  # the outage was seen...
    assert attempts - trials == failed <= 4 + 3 + 12  # ...and cost in-flight + probes, no more
    drill_s, wall_s = window
    assert drill_s >= 30.0
    if speed > 1:
        assert wall_s < 5.0  # simulated: the 30 s outage passed in about a second of wall


class _FirstCallOnlyHandler(_Handler):
    """A flaky provider that is never down: the first call of a dialog is answered, every
    later one fails with a 500."""

    def _answer(self, raw: bytes) -> None:
        messages = json.loads(raw).get("messages", [])
        if any(m.get("role") == "assistant" for m in messages):
            self._send_error(RequestError(500, "flaky", "server_error"))
        else:
            super()._answer(raw)


@pytest.mark.slow
def test_a_provider_that_answers_then_fails_is_flaky_not_down(
        ray_local: Any, tmp_path: Path) -> None:
    root = tmp_path / "warehouse"
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1", "F1", "C1"],
                         models=["openai/golden"], memory_modes=["chat"], repeats=2,
                         run_id="flaky", warehouse=root, max_in_flight=2,
                         retry=RetryPolicy(max_attempts=2, backoff_base_s=0.05,
                                           backoff_max_s=0.1, max_outage_s=20))
    with start_server(port=0) as server:
        server.server.RequestHandlerClass = _FirstCallOnlyHandler
        base = plan(config)
        pending = [replace(s, extra={"api_base": server.api_base, "api_key": "sk-test-not-a-key",
                                     "extra_body": {SCRIPT_KEY: golden_script(s.scenario)}})
                   for s in base.pending]
        statuses = execute_plan(config, replace(base, pending=pending))
    assert statuses == {"incomplete": 6}
    # each attempt was answered before it failed: the breaker stayed shut, so no attempt was a
    # free outage retry and every trial used exactly its budget of two
    assert run_sql(root, "select count(*), count(*) filter (where error_kind = 'server_error'), "
                         "max(attempt) from attempts").rows == [(12, 12, 2)]
