"""One judgment: a judge call through the model client, retried like a model call.

The call goes through ``pipeline.models.client.LiteLLMClient`` with its own purpose, ``judge``, so a
scripted model answers it as a judge and a real one sees an ordinary chat call (the reply's
JSON Schema asked for where the endpoint enforces one). An infrastructure failure (rate limit,
timeout, connection, 5xx) is retried with the trials' ``RetryPolicy`` (exponential backoff,
full jitter, Retry-After honoured); past its attempts the judgment is an ``error`` of that
kind. A configuration error (no key, unknown model) and a harness error (a scripted model
that is no judge) stop the command: no judgment is written.
Usage is what the answered call reported (null when unknown, never 0).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.errors import AgentError, InfraError
from pipeline.execution.retry import RetryPolicy
from pipeline.judge.verdict import REPLY_SCHEMA, JudgeErrorKind, Reading, read_verdict
from pipeline.models.client import ModelClient
from pipeline.util.untrusted import storable
from warehouse.schema import JudgeVerdict

RAW_LIMIT = 2000


@dataclass(frozen=True)
class JudgeCall:
    """What one judgment came to, with its calls' figures."""

    verdict: JudgeVerdict
    reason: str
    error_kind: JudgeErrorKind | None
    raw_reply: str | None
    calls: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    latency_ms: float | None = None
    model_version: str | None = None


def judge_once(client: ModelClient, messages: Sequence[dict[str, Any]], retry: RetryPolicy,
               rng: random.Random, sleep: Callable[[float], None] = time.sleep) -> JudgeCall:
    """Ask the judge once (retrying infrastructure failures); never raises for a bad reply."""
    for attempt in range(1, retry.max_attempts + 1):
        try:
            reply = client.complete(list(messages), None, purpose="judge", turn=0,
                                    response_schema=REPLY_SCHEMA)
        except InfraError as exc:
            if exc.kind == "harness_error":  # our bug (a broken script): fail loudly
                raise
            if attempt == retry.max_attempts:
                return JudgeCall("error", f"the judge call failed {attempt} time(s): {exc}",
                                 exc.kind, None, attempt)
            sleep(retry.delay_s(attempt, rng, exc.retry_after_s))
            continue
        except AgentError as exc:  # the evidence outgrew the judge's context
            return JudgeCall("error", str(exc), "context_limit", None, attempt)
        reading: Reading = read_verdict(reply.content)
        if reading.verdict == "error" and reply.finish_reason == "length":
            reading = Reading("error", f"the reply was cut at the judge's token limit "
                              f"(finish_reason length): {reading.reason}", reading.error_kind)
        return JudgeCall(reading.verdict, reading.reason, reading.error_kind,
                         storable((reply.content or "")[:RAW_LIMIT]), attempt, reply.input_tokens,
                         reply.output_tokens, reply.cost_usd, reply.latency_ms,
                         reply.model_version)
    raise AssertionError("unreachable: max_attempts >= 1")
