"""Anthropic's Messages API (``POST /v1/messages``) in front of the reference models.

Written from Anthropic's public API reference: the request's ``system`` (a string or text
blocks) and ``messages`` whose content is a string or blocks (``text``, ``tool_use`` in
assistant turns, ``tool_result`` in user turns), ``tools`` with an ``input_schema``; the answer
is a ``message`` with ``content`` blocks, ``stop_reason`` (``end_turn``, ``tool_use``,
``max_tokens``), the served ``model`` and ``usage`` with ``input_tokens`` (the uncached part),
``output_tokens``, ``cache_creation_input_tokens`` and ``cache_read_input_tokens``. Errors are
``{"type": "error", "error": {"type", "message"}}``; an overload is HTTP 529
``overloaded_error``. LiteLLM (1.110.2) sends ``extra_body`` nested under an ``extra_body``
key instead of merging it: the script is read from either place.
"""

from __future__ import annotations

import json
from typing import Any

from pipeline.models.routes import CALL_TAG_KEY
from pipeline.reference.reference import SCRIPT_ERROR_TYPE, SCRIPT_KEY
from pipeline.reference.scripts import SCRIPT_ID_KEY
from pipeline.reference.wire.base import CONTEXT_WORDS, RequestError, Wire, tool_arguments

MESSAGES_PATH = "/v1/messages"
STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error",
               403: "permission_error", 404: "not_found_error", 413: "request_too_large",
               429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}
OPTIONS = {"max_tokens": "max_tokens", "temperature": "temperature", "top_p": "top_p",
           "top_k": "top_k", "stop_sequences": "stop", "tool_choice": "tool_choice",
           "stream": "stream"}
"""Anthropic request field -> the chat body's name for it."""


class AnthropicWire(Wire):
    name = "anthropic"
    base_path = ""
    overloaded_status = 529

    def model_of(self, path: str) -> str | None:
        return "" if path == MESSAGES_PATH else None

    def to_chat(self, body: dict[str, Any], path_model: str) -> dict[str, Any]:
        messages = [*_system(body.get("system"))]
        raw = body.get("messages")
        if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
            raise RequestError(400, "messages: must be a list of objects")
        for message in raw:
            messages += _chat_messages(message)
        extra = body.get("extra_body")
        nested: dict[str, Any] = extra if isinstance(extra, dict) else {}
        chat: dict[str, Any] = {"model": body.get("model"), "messages": messages}
        chat.update({OPTIONS[k]: v for k, v in body.items() if k in OPTIONS})
        if body.get("tools"):
            chat["tools"] = [_chat_tool(t) for t in body["tools"]]
        for key in (SCRIPT_KEY, SCRIPT_ID_KEY, CALL_TAG_KEY):
            if key in body or key in nested:
                chat[key] = body.get(key, nested.get(key))
        return chat

    def from_chat(self, completion: dict[str, Any], cached: int) -> dict[str, Any]:
        choice = completion["choices"][0]
        message = choice["message"]
        content: list[dict[str, Any]] = []
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            content.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name"),
                            "input": tool_arguments(function.get("arguments"))})
        usage = completion["usage"]
        return {
            "id": "msg_" + completion["id"].removeprefix("chatcmpl-"),
            "type": "message",
            "role": "assistant",
            "model": completion["model"],
            "content": content,
            "stop_reason": STOP_REASONS.get(choice.get("finish_reason"), "end_turn"),
            "stop_sequence": None,
            "usage": {"input_tokens": usage["prompt_tokens"] - cached,
                      "output_tokens": usage["completion_tokens"],
                      "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": cached},
        }

    def error_body(self, exc: RequestError) -> dict[str, Any]:
        kind = (exc.error_type if exc.error_type == SCRIPT_ERROR_TYPE
                else ERROR_TYPES.get(exc.status, "api_error" if exc.status >= 500
                                     else "invalid_request_error"))
        return {"type": "error", "error": {"type": kind, "message": exc.message()}}

    def context_message(self, prompt_words: int) -> str:
        return f"prompt is too long: {prompt_words} tokens > {CONTEXT_WORDS} maximum"


def _system(system: Any) -> list[dict[str, Any]]:
    if not system:
        return []
    text = system if isinstance(system, str) else "\n".join(_texts(system))
    return [{"role": "system", "content": text}]


def _texts(blocks: Any) -> list[str]:
    if isinstance(blocks, str):
        return [blocks]
    if not isinstance(blocks, list):
        raise RequestError(400, "content: must be a string or a list of blocks")
    return [str(b.get("text", "")) for b in blocks
            if isinstance(b, dict) and b.get("type") == "text"]


def _chat_messages(message: dict[str, Any]) -> list[dict[str, Any]]:
    role, content = message.get("role"), message.get("content")
    if role not in ("user", "assistant"):
        raise RequestError(400, f"messages: role must be 'user' or 'assistant', not {role!r}")
    blocks = content if isinstance(content, list) else []
    if role == "assistant":
        calls = [{"id": b.get("id"), "type": "function",
                  "function": {"name": b.get("name"),
                               "arguments": json.dumps(b.get("input") or {},
                                                       ensure_ascii=False)}}
                 for b in blocks if isinstance(b, dict) and b.get("type") == "tool_use"]
        out: dict[str, Any] = {"role": "assistant", "content": "\n".join(_texts(content)) or None}
        return [{**out, "tool_calls": calls} if calls else out]
    results = [{"role": "tool", "tool_call_id": b.get("tool_use_id"),
                "content": "\n".join(_texts(b.get("content") or ""))}
               for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
    texts = _texts(content)
    return [*results, *([{"role": "user", "content": "\n".join(texts)}] if texts else [])]


def _chat_tool(tool: Any) -> dict[str, Any]:
    if not isinstance(tool, dict) or not tool.get("name"):
        raise RequestError(400, "tools: each tool needs a name")
    return {"type": "function", "function": {
        "name": tool["name"], "description": tool.get("description", ""),
        "parameters": tool.get("input_schema") or {"type": "object"}}}
