"""Per-model temperature, params and seed in a spec: `agentsweep run --spec` runs it, the values
land in `trials` (and `runs.config_json`), and they were sent on every model call, planner and
memory alike: the reference server records what LiteLLM really put on the wire, and the
in-process reference provider what LiteLLM handed it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.models.client import LiteLLMClient, litellm_module
from pipeline.models.config import ModelConfig
from pipeline.models.routes import CALL_TAG_KEY
from pipeline.reference.reference import reference_call_params
from pipeline.reference.server import ServerHandle, start_server
from warehouse.query import run_sql

BIN = Path(sys.executable).parent
SPEC = """\
run_id: per-model
suites: [{suite}]
scenarios: [V1]
memory_modes: [chat, summary]
repeats: 2
models:
  - name: reference/golden
    temperature: 0.3
    seed: 7
    params: {{top_p: 0.5}}
  - name: reference-http/golden
    api_base: {api_base}
    temperature: 0.6
    seed: 40
    params: {{top_p: 0.9, max_tokens: 300}}
"""


@pytest.fixture
def server() -> Iterator[ServerHandle]:
    with start_server() as handle:
        yield handle


def _run(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0")
    return subprocess.run([str(BIN / "agentsweep"), *args], env=env, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.mark.slow
def test_a_spec_with_per_model_values_runs_and_records_and_applies_them(
        tmp_path: Path, server: ServerHandle) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(SPEC.format(suite=MEETING_SUITE, api_base=server.api_base), "utf-8")
    home = tmp_path / "home"
    run = _run(home, "run", "--spec", str(spec))
    assert run.returncode == 0, run.stdout + run.stderr

    rows = run_sql(home / "warehouse", """
        select model, provider, memory_mode, repeat, temperature, seed, generation_params,
               status, passed
        from trials where run_id = $run_id order by model, memory_mode, repeat""",
                   {"run_id": "per-model"}).rows
    expected = []
    for model, provider, temperature, seed, params in (
            ("reference-http/golden", "reference-http", 0.6, 40, {"top_p": 0.9, "max_tokens": 300}),
            ("reference/golden", "reference", 0.3, 7, {"top_p": 0.5})):
        for mode in ("chat", "summary"):
            for repeat in (0, 1):
                generation = {"temperature": temperature, **params, "seed": seed + repeat}
                expected.append((model, provider, mode, repeat, temperature, seed + repeat,
                                 generation, "complete", True))
    assert [(*row[:6], json.loads(row[6]), *row[7:]) for row in rows] == expected

    (config,) = run_sql(home / "warehouse", "select config_json from runs where run_id = "
                        "$run_id and finished_at is not null", {"run_id": "per-model"}).rows[0]
    recorded = {m["name"]: m for m in json.loads(config)["models"]}
    assert (recorded["reference/golden"]["temperature"], recorded["reference/golden"]["seed"],
            recorded["reference/golden"]["params"]) == (0.3, 7, {"top_p": 0.5})
    assert recorded["reference-http/golden"]["params"] == {"top_p": 0.9, "max_tokens": 300}

    sent = server.received
    assert sent, "no call reached the reference server"
    assert {(r["temperature"], r["top_p"], r["max_tokens"]) for r in sent} == {(0.6, 0.9, 300)}
    by_purpose = {(r[CALL_TAG_KEY]["purpose"], r["seed"]) for r in sent}
    assert by_purpose == {("planner", 40), ("planner", 41), ("summary", 40), ("summary", 41)}


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_the_in_process_reference_model_gets_the_values_on_every_call(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What LiteLLM hands the custom provider, for a planner and a memory call (the in-process
    path without LiteLLM: tests/unit/reference/test_in_process.py)."""
    from pipeline.reference.provider import InProcessReference

    monkeypatch.setattr(InProcessReference, "answers_in_process", False)
    litellm = litellm_module()
    (entry,) = [p for p in litellm.custom_provider_map if p["provider"] == "reference"]
    handler = entry["custom_handler"]
    seen: list[dict[str, Any]] = []
    original = type(handler).completion

    def spy(self: Any, model: str, messages: list[dict[str, Any]], *args: Any,
            **kwargs: Any) -> Any:
        seen.append({k: v for k, v in kwargs["optional_params"].items() if k != "max_retries"})
        return original(self, model, messages, *args, **kwargs)

    monkeypatch.setattr(type(handler), "completion", spy)
    scenario = next(s.scenario for s in load_suite(MEETING_SUITE).scenarios
                    if s.scenario.id == "V1")
    model = ModelConfig("reference/golden", temperature=0.3, seed=8,
                        params={"top_p": 0.5}).resolved()
    client = LiteLLMClient(model, reference_call_params("metadata", scenario))
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    client.complete(messages, None, purpose="summary", turn=1)
    client.complete(messages, None)
    assert seen == [{"temperature": 0.3, "top_p": 0.5, "seed": 8}] * 2
