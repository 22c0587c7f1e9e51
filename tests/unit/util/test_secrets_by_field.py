"""Secrets are redacted by field, not by how they look: every header value, every query value of
an endpoint, every key/token/secret-named param; the call still gets the real ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.models.call_params import call_params_of
from pipeline.models.client import CallOptions
from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig, conceal_config, config_json
from pipeline.util.redact import MASK, redact, redact_fields, redact_url

HEADER, PARAM, QUERY = "gw-4k2j8s9d", "prm-8s7d6f5g", "AIzaQ-1a2b3c4d"


def test_headers_secret_named_fields_and_query_values_are_redacted_by_field() -> None:
    params = {"extra_headers": {"X-Gateway-Token": HEADER, "X-Team": "evals"},
              "gateway_secret": PARAM, "max_tokens": 64, "top_p": 0.9}
    shown = redact_fields(params)
    assert shown == {"extra_headers": {"X-Gateway-Token": MASK, "X-Team": MASK},
                     "gateway_secret": MASK, "max_tokens": 64, "top_p": 0.9}
    assert redact_url(f"https://gw.example/v1?key={QUERY}&alt=sse") == (
        f"https://gw.example/v1?key={MASK}&alt={MASK}")
    assert QUERY not in redact(f"POST https://x.example/models/m:generate?key={QUERY} 400")


def test_a_trial_records_none_and_the_call_gets_them(tmp_path: Path) -> None:
    model = ModelConfig("reference-http/golden", api_base=f"http://127.0.0.1:9/v1?key={QUERY}",
                        params={"extra_headers": {"X-Gateway-Token": HEADER},
                                "gateway_secret": PARAM, "max_tokens": 64})
    recorded = str(model.generation_params())
    assert HEADER not in recorded and PARAM not in recorded and "max_tokens" in recorded
    config = conceal_config(SweepConfig(warehouse=tmp_path, models=[model]))
    stored = config_json(config) + config.model_dump_json()  # runs.config_json, Prefect's
    for secret in (HEADER, PARAM, QUERY):
        assert secret not in stored
    [concealed] = config.models
    options = CallOptions.of(concealed, call_params_of(concealed)).options
    assert options["extra_headers"] == {"X-Gateway-Token": HEADER}
    assert options["gateway_secret"] == PARAM and options["api_base"].endswith(QUERY)
    assert concealed.generation_params() == model.generation_params()  # the same trial ids


def test_a_resume_from_the_recorded_config_alone_names_the_redacted_field(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.sweep.preflight import BadInput, _check_concealed
    from pipeline.util import secrets

    monkeypatch.setattr(secrets, "_real_params", {})
    model = ModelConfig("reference-http/golden", params={"extra_headers": {"X-Token": MASK}})
    with pytest.raises(BadInput, match=r"params.extra_headers was redacted .* --spec SPEC"):
        _check_concealed(SweepConfig(warehouse=tmp_path, models=[model], run_id="r1"))
