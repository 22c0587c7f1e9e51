"""Secrets never land: redact API keys and bearer tokens from anything written or printed."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

MASK = "[REDACTED]"
_SECRET_ENV = re.compile(r"(API_KEY|_TOKEN|_SECRET|PASSWORD|_KEY)$", re.IGNORECASE)
_PATTERNS = [
    re.compile(r"\bsk-[A-Za-z0-9_\-]{12,}"),
    re.compile(r"\b(?:gh[pousr]|xox[abp]|AKIA)[A-Za-z0-9_\-]{12,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(r"(?i)((?:api[_-]?key|token|secret|password)[\"']?\s*[:=]\s*[\"']?)"
               r"[^\s\"',}]{6,}"),
    # credentials in a URL: scheme://user:password@host -> scheme://user:[REDACTED]@host
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/:@]*:)[^\s/@]+(?=@)"),
]


_Snapshot = tuple[dict[Any, Any] | None, list[str]]
_secrets: _Snapshot | None = None
"""The environment as last read (what ``os.environ`` writes through to) and its secrets."""


def _env_secrets() -> list[str]:
    """Values of secret-named variables (8+ characters), longest first. Read once per process
    and again only when the environment changed since (a key added, removed or changed through
    ``os.environ``): the check is one dict comparison, the read scans every variable."""
    global _secrets
    data: dict[Any, Any] | None = getattr(os.environ, "_data", None)  # CPython's store
    seen = _secrets
    if seen is not None and data is not None and seen[0] == data:
        return seen[1]
    # The snapshot is taken before the scan: a change made while scanning is then seen as a
    # change by the next call, never missed.
    snapshot = dict(data) if data is not None else None
    secrets = _scan_env()
    _secrets = (snapshot, secrets)
    return secrets


def _scan_env() -> list[str]:
    return sorted(
        (v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8),
        key=len,
        reverse=True,
    )


def _mask(match: re.Match[str]) -> str:
    return match.group(1) + MASK if match.re.groups else MASK


def _redact(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(_mask, text)
    return text


def redact(text: str) -> str:
    return _redact(text, _env_secrets())


def redactor() -> Callable[[str], str]:
    """``redact`` with the environment's secrets as they are now, for redacting many texts in
    one go (a report of 100k trials): not even the environment check per text."""
    secrets = _env_secrets()
    return lambda text: _redact(text, secrets)


def redact_optional(text: str | None) -> str | None:
    return None if text is None else redact(text)


def redact_value(value: Any) -> Any:
    """Redact every string inside a JSON-like value."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_value(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_value(v) for k, v in value.items()}
    return value
