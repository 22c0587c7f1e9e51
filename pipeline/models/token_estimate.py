"""A cheap estimate of a model call's tokens, counted against a ``tpm`` limit before the call
(pipeline.execution.rate_limits) and corrected by the usage the provider reports after it.

About four characters a token over the messages and tools as JSON, plus the completion the
call may write (``max_tokens``, else ``DEFAULT_COMPLETION_TOKENS``). Never recorded: the
warehouse's usage columns are the provider's own counts (unknown is null).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

CHARS_PER_TOKEN = 4
DEFAULT_COMPLETION_TOKENS = 256
"""The completion counted for a call that sets no ``max_tokens`` (corrected after the call)."""


def estimate_tokens(messages: Sequence[Mapping[str, Any]],
                    tools: Sequence[Mapping[str, Any]] | None,
                    options: Mapping[str, Any]) -> int:
    """Prompt characters / 4 plus the completion's allowance; at least 1."""
    text = json.dumps([messages, tools or []], default=str, separators=(",", ":"))
    limit = options.get("max_tokens") or options.get("max_completion_tokens")
    completion = limit if isinstance(limit, int) and limit > 0 else DEFAULT_COMPLETION_TOKENS
    return max(1, len(text) // CHARS_PER_TOKEN + completion)


def reported_tokens(input_tokens: int | None, output_tokens: int | None) -> int | None:
    """A reply's tokens as the provider counted them; None when it did not report both."""
    if input_tokens is None or output_tokens is None:
        return None
    return input_tokens + output_tokens
