"""OpenAI's chat-completions wire format: the reference models' own shape, so nothing to
translate. ``POST /v1/chat/completions``; the answer reports usage as ``prompt_tokens`` and
``completion_tokens`` and no cached tokens (``prompt_tokens_details`` is left out)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pipeline.models.routes import CALL_TAG_KEY
from pipeline.reference.reference import (
    REFERENCE_VARIANTS,
    SCRIPT_ERROR_TYPE,
    SCRIPT_KEY,
    ReferenceScriptError,
    answer,
)
from pipeline.reference.wire.base import (
    CONTEXT_WORDS,
    SERVED_VERSION,
    RequestError,
    Wire,
    count_words,
)

CHAT_PATH = "/v1/chat/completions"


def chat_completion(body: dict[str, Any], created: int, plays: str | None = None
                    ) -> dict[str, Any]:
    """The chat.completion answer to one request body (pure). Raises RequestError.
    ``plays``: answer as this variant whatever model the request names (a model that changed
    behind an unchanged name, for fault drills, or a priced name such as ``gpt-4o-mini`` for
    spend-cap drills); the answer still names the requested model."""
    name = body.get("model")
    if not isinstance(name, str) or (plays is None and name not in REFERENCE_VARIANTS):
        raise RequestError(404, f"unknown model {name!r}; served: "
                                f"{', '.join(sorted(REFERENCE_VARIANTS))}",
                           code="model_not_found")
    if body.get("stream"):
        raise RequestError(400, "streaming is not supported by the reference server")
    messages = body.get("messages")
    script = body.get(SCRIPT_KEY)
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
        raise RequestError(400, "'messages' must be a list of objects")
    if not isinstance(script, dict):
        raise RequestError(400, f"no script: pass it in the body under {SCRIPT_KEY!r} "
                                f"(LiteLLM: extra_body={{{SCRIPT_KEY!r}: script}})")
    try:
        choice = {"index": 0, **answer(plays or name, script, messages, body.get(CALL_TAG_KEY))}
    except ReferenceScriptError as exc:
        raise RequestError(400, str(exc), SCRIPT_ERROR_TYPE) from None
    prompt_tokens = count_words([messages, body.get("tools") or []])
    completion_tokens = count_words(choice["message"])
    digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:24]
    return {
        "id": f"chatcmpl-{digest}",
        "object": "chat.completion",
        "created": created,
        "model": f"{name}-{SERVED_VERSION}",
        "system_fingerprint": f"agentsweep-reference-{SERVED_VERSION}",
        "choices": [choice],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


class OpenAIWire(Wire):
    name = "openai"
    base_path = "/v1"

    def model_of(self, path: str) -> str | None:
        return "" if path == CHAT_PATH else None

    def to_chat(self, body: dict[str, Any], path_model: str) -> dict[str, Any]:
        return body

    def from_chat(self, completion: dict[str, Any], cached: int) -> dict[str, Any]:
        return completion

    def error_body(self, exc: RequestError) -> dict[str, Any]:
        return exc.body()

    def context_message(self, prompt_words: int) -> str:
        return (f"This model's maximum context length is {CONTEXT_WORDS} tokens. However, "
                f"your messages resulted in {prompt_words} tokens. Please reduce the length of "
                "the messages.")

