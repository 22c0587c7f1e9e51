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
    # a key in a URL's query (Gemini's ?key=..., signed URLs): ?key=[REDACTED]
    re.compile(r"(?i)([?&][a-z0-9_.\-]*(?:key|token|secret|signature|sig|password|auth)"
               r"[a-z0-9_.\-]*=)[^&#\s\"'<>]+"),
]
SECRET_FIELD = re.compile(r"(?i)(key(?!s)|token(?!s)|secret|passw|authoriz|^auth|credential|"
                          r"cookie|signature)")
"""A field whose name says it holds a secret: its value is redacted whatever it looks like
(``max_tokens``, ``stop_keys``: counts and lists, not secrets, are not)."""
HEADER_FIELDS = frozenset({"extra_headers", "headers", "default_headers"})
"""Fields that hold HTTP headers: every header's value is redacted (a gateway's token may be
named anything)."""


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


def redact_url(url: str) -> str:
    """A URL with its userinfo's password and every query value redacted (an endpoint's query
    is where a key rides: ``?key=``, signed URLs)."""
    from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

    parts = urlsplit(url)
    if parts.query:
        query = urlencode([(k, MASK) for k, _ in parse_qsl(parts.query, keep_blank_values=True)],
                          safe="[]")
        url = urlunsplit(parts._replace(query=query))
    return redact(url)


def redact_fields(value: Any) -> Any:
    """A JSON-like value with secrets redacted by field: the value of every field whose name
    says secret (``SECRET_FIELD``) and of every header (``HEADER_FIELDS``), whatever it is; the
    other strings as ``redact`` does."""
    if isinstance(value, dict):
        return {k: _redacted_field(str(k), v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact_fields(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    return value


def _redacted_field(name: str, value: Any) -> Any:
    if name in HEADER_FIELDS and isinstance(value, dict):
        return {k: MASK for k in value}
    if SECRET_FIELD.search(name) and value not in (None, "", [], {}):
        return MASK if not isinstance(value, dict | list) else _masked(value)
    return redact_fields(value)


def _masked(value: Any) -> Any:
    """Every leaf of a secret field's structured value redacted."""
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked(v) for v in value]
    return MASK if value not in (None, "") else value


def masked(value: Any) -> bool:
    """Whether a value holds a redaction (``MASK``) anywhere: a secret that was concealed."""
    if isinstance(value, str):
        return MASK in value
    if isinstance(value, dict):
        return any(masked(v) for v in value.values())
    if isinstance(value, list):
        return any(masked(v) for v in value)
    return False
