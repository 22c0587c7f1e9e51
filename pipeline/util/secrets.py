"""Secrets a sweep needs but nothing may record: kept in this process, out of its config.

A sweep's config travels to Prefect as flow parameters (stored in its database) and lands in
the warehouse (``runs.config_json``). Before that, ``conceal`` replaces every ``api_base``
that carries credentials (``https://user:password@host``) with its redacted form and keeps the
real one here; ``reveal`` gives it back where the call is made. A key a model needs is named
by its environment variable (``api_key_env``), never written as a value.
"""

from __future__ import annotations

import os

from pipeline.util.redact import redact

_real: dict[str, str] = {}


def conceal(url: str | None) -> str | None:
    if url is None:
        return None
    shown = redact(url)
    if shown != url:
        _real[shown] = url
    return shown


def reveal(url: str) -> str:
    return _real.get(url, url)


def key_from_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"api_key_env: {name} is not set in the environment")
    return value
