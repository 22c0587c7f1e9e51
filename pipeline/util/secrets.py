"""Secrets a sweep needs but nothing may record: kept in this process, out of its config.

A sweep's config travels to Prefect as flow parameters (stored in its database) and lands in
the warehouse (``runs.config_json``). Before that, ``conceal`` replaces every ``api_base``
that carries credentials (``https://user:password@host``, a key in its query) with its redacted
form, and ``conceal_params`` every secret-bearing param of a model (headers, key/token/secret
fields), keeping the real ones here; ``reveal`` and ``revealed_params`` give them back where the
call options are made (on the driver: they travel to the workers with the trial, never
recorded). A key a model needs is named by its environment variable (``api_key_env``), never
written as a value.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pipeline.util.redact import masked, redact_fields, redact_url

_real: dict[str, str] = {}
_real_params: dict[str, dict[str, Any]] = {}


def conceal(url: str | None) -> str | None:
    if url is None:
        return None
    shown = redact_url(url)
    if shown != url:
        _real[shown] = url
    return shown


def conceal_params(model: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """``params`` with its secrets redacted by field; the real ones kept for ``model``."""
    shown: dict[str, Any] = redact_fields(dict(params))
    real = {k: v for k, v in params.items() if shown.get(k) != v and not masked(v)}
    if real:
        _real_params[model] = real
    return shown


def revealed_params(model: str) -> dict[str, Any]:
    """The real values of ``model``'s concealed params (empty when none were concealed)."""
    return dict(_real_params.get(model, {}))


def reveal(url: str) -> str:
    return _real.get(url, url)


def key_from_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise ValueError(f"api_key_env: {name} is not set in the environment")
    return value
