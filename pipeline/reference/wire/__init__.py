"""The wire formats the reference server speaks: OpenAI's chat completions, Anthropic's
Messages API and Gemini's generateContent, each a translation in front of the same reference
models (``pipeline.reference.reference``)."""

from __future__ import annotations

from typing import get_args

from pipeline.reference.wire.anthropic import AnthropicWire
from pipeline.reference.wire.base import (
    SERVED_VERSION,
    RequestError,
    Wire,
    WireName,
    cached_words,
    count_words,
)
from pipeline.reference.wire.gemini import GeminiWire
from pipeline.reference.wire.openai import OpenAIWire, chat_completion

WIRE_NAMES: tuple[WireName, ...] = get_args(WireName)


def wire_named(name: str) -> Wire:
    """The wire format called ``name``; ValueError for another name."""
    wires: dict[str, type[Wire]] = {"openai": OpenAIWire, "anthropic": AnthropicWire,
                                    "gemini": GeminiWire}
    if name not in wires:
        raise ValueError(f"unknown wire format {name!r}; known: {', '.join(WIRE_NAMES)}")
    return wires[name]()


__all__ = ["SERVED_VERSION", "WIRE_NAMES", "RequestError", "Wire", "WireName", "cached_words",
           "chat_completion", "count_words", "wire_named"]
