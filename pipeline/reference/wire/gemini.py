"""The Gemini API's ``generateContent`` in front of the reference models.

Written from Google's public Gemini API reference: ``POST /v1beta/models/{model}:generateContent``
with ``contents`` (role ``user`` or ``model``, ``parts``: ``text``, ``functionCall``,
``functionResponse``), ``systemInstruction``, ``tools[].functionDeclarations`` and
``generationConfig``; the answer has ``candidates[0].content.parts``, a ``finishReason``,
``usageMetadata`` (``promptTokenCount``, which includes the cached part,
``candidatesTokenCount``, ``totalTokenCount``, and ``cachedContentTokenCount`` only when some
of the prompt came from the cache) and the ``modelVersion``. Errors are
``{"error": {"code", "message", "status"}}`` (``RESOURCE_EXHAUSTED`` for a 429, with a
``RetryInfo`` detail, ``UNAVAILABLE`` for an overload). Requests are read in both of the API's
JSON spellings (``functionCall`` and ``function_call``: LiteLLM sends the latter).
"""

from __future__ import annotations

import json
import re
from typing import Any

from pipeline.models.routes import CALL_TAG_KEY
from pipeline.reference.reference import SCRIPT_ERROR_TYPE, SCRIPT_KEY
from pipeline.reference.scripts import SCRIPT_ID_KEY
from pipeline.reference.wire.base import CONTEXT_WORDS, RequestError, Wire, tool_arguments

_ROUTE = re.compile(r"^/v1(?:beta)?/models/(?P<model>[^/:]+):(?P<method>\w+)$")
FINISH_REASONS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS",
                  "content_filter": "SAFETY"}
STATUSES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
            404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE",
            504: "DEADLINE_EXCEEDED"}
OPTIONS = {"temperature": "temperature", "topP": "top_p", "topK": "top_k", "seed": "seed",
           "maxOutputTokens": "max_tokens", "stopSequences": "stop"}
"""generationConfig field (camelCase) -> the chat body's name for it."""


def _get(value: dict[str, Any], camel: str) -> Any:
    """A field in either JSON spelling of the API (``functionCall`` or ``function_call``)."""
    snake = re.sub(r"[A-Z]", lambda m: "_" + m.group().lower(), camel)
    return value.get(camel, value.get(snake))


class GeminiWire(Wire):
    name = "gemini"
    base_path = "/v1beta"

    def model_of(self, path: str) -> str | None:
        match = _ROUTE.match(path)
        if match is None:
            return None
        if match["method"] != "generateContent":
            raise RequestError(400 if match["method"] == "streamGenerateContent" else 404,
                               f"{match['method']} is not served (only generateContent)")
        return match["model"]

    def to_chat(self, body: dict[str, Any], path_model: str) -> dict[str, Any]:
        messages = [*_system(_get(body, "systemInstruction"))]
        contents = body.get("contents")
        if not isinstance(contents, list) or not all(isinstance(c, dict) for c in contents):
            raise RequestError(400, "contents: must be a list of objects")
        for index, content in enumerate(contents):
            messages += _chat_messages(content, index)
        chat: dict[str, Any] = {"model": path_model, "messages": messages}
        config = _get(body, "generationConfig") or {}
        for camel, name in OPTIONS.items():
            if _get(config, camel) is not None:
                chat[name] = _get(config, camel)
        tools = [_chat_tool(d) for t in body.get("tools") or []
                 for d in _get(t, "functionDeclarations") or []]
        if tools:
            chat["tools"] = tools
        chat.update({k: body[k] for k in (SCRIPT_KEY, SCRIPT_ID_KEY, CALL_TAG_KEY)
                     if k in body})
        return chat

    def from_chat(self, completion: dict[str, Any], cached: int) -> dict[str, Any]:
        choice = completion["choices"][0]
        message = choice["message"]
        parts: list[dict[str, Any]] = []
        if message.get("content"):
            parts.append({"text": message["content"]})
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            parts.append({"functionCall": {"id": call.get("id"), "name": function.get("name"),
                                           "args": tool_arguments(function.get("arguments"))}})
        usage = completion["usage"]
        metadata = {"promptTokenCount": usage["prompt_tokens"],
                    "candidatesTokenCount": usage["completion_tokens"],
                    "totalTokenCount": usage["total_tokens"]}
        if cached:
            metadata["cachedContentTokenCount"] = cached
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "index": 0,
                            "finishReason": FINISH_REASONS.get(choice.get("finish_reason"),
                                                               "OTHER")}],
            "usageMetadata": metadata,
            "modelVersion": completion["model"],
            "responseId": completion["id"].removeprefix("chatcmpl-"),
        }

    def error_body(self, exc: RequestError) -> dict[str, Any]:
        status = STATUSES.get(exc.status, "INTERNAL" if exc.status >= 500 else "INVALID_ARGUMENT")
        error: dict[str, Any] = {"code": exc.status, "message": exc.message(), "status": status}
        if exc.error_type == SCRIPT_ERROR_TYPE:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                 "reason": SCRIPT_ERROR_TYPE, "domain": "agentsweep"}]
        retry = exc.headers.get("Retry-After")
        if retry is not None:
            error["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo",
                                 "retryDelay": f"{retry}s"}]
        return {"error": error}

    def context_message(self, prompt_words: int) -> str:
        return (f"The input token count ({prompt_words}) exceeds the maximum number of tokens "
                f"allowed ({CONTEXT_WORDS}).")


def _system(instruction: Any) -> list[dict[str, Any]]:
    if not isinstance(instruction, dict):
        return []
    text = "\n".join(str(p.get("text", "")) for p in instruction.get("parts") or []
                     if isinstance(p, dict))
    return [{"role": "system", "content": text}] if text else []


def _chat_messages(content: dict[str, Any], index: int) -> list[dict[str, Any]]:
    role = content.get("role", "user")
    parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
    texts = [str(p["text"]) for p in parts if "text" in p]
    if role == "model":
        calls = [_chat_call(_get(p, "functionCall"), index, n)
                 for n, p in enumerate(parts) if _get(p, "functionCall")]
        out: dict[str, Any] = {"role": "assistant", "content": "\n".join(texts) or None}
        return [{**out, "tool_calls": calls} if calls else out]
    if role != "user":
        raise RequestError(400, f"contents[{index}].role: must be 'user' or 'model'")
    results = [_chat_result(_get(p, "functionResponse")) for p in parts
               if _get(p, "functionResponse")]
    return [*results, *([{"role": "user", "content": "\n".join(texts)}] if texts else [])]


def _chat_call(call: dict[str, Any], index: int, number: int) -> dict[str, Any]:
    return {"id": call.get("id") or f"call_{index}_{number}", "type": "function",
            "function": {"name": call.get("name"),
                         "arguments": json.dumps(call.get("args") or {}, ensure_ascii=False)}}


def _chat_result(result: dict[str, Any]) -> dict[str, Any]:
    response = result.get("response")
    return {"role": "tool", "tool_call_id": result.get("id") or result.get("name"),
            "content": json.dumps(response, ensure_ascii=False)}


def _chat_tool(declaration: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": declaration.get("name"), "description": declaration.get("description", ""),
        "parameters": declaration.get("parameters") or {"type": "object"}}}
