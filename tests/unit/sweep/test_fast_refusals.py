"""Refusals that need no provider arrive before LiteLLM is imported (its import costs seconds):
an unknown LiteLLM prefix, an unknown reference model, a missing key. Each runs the command line
in a fresh interpreter (this one has LiteLLM loaded already) and reads its ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.commands import clean_env

from pipeline.models.litellm_prefixes import LITELLM_PREFIXES, unknown_prefix

PROBE = """
import sys
from typer.testing import CliRunner
from pipeline.cli import app
result = CliRunner().invoke(app.app, ["run", "--model", sys.argv[1]])
print(result.exit_code, "litellm" in sys.modules)
print(result.stderr)
"""


@pytest.mark.parametrize(("model", "said"), [
    ("nosuchprovider/x", "--model nosuchprovider/x: LiteLLM knows no provider for it"),
    ("reference/nosuch", "unknown reference model 'reference/nosuch'"),
    ("openai/gpt-4o-mini", "--model openai/gpt-4o-mini: set OPENAI_API_KEY in the environment"),
])
def test_a_refusal_needing_no_provider_never_imports_litellm(tmp_path: Path, model: str,
                                                             said: str) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, model], env=clean_env(tmp_path / "home"),
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    first, _, err = done.stdout.partition("\n")
    assert first == "2 False", done.stdout + done.stderr
    assert said in " ".join(err.split())


def test_the_prefix_table_agrees_with_litellm() -> None:
    """Every provider LiteLLM knows, and nothing else: regenerate the table after an upgrade."""
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    JSONProviderRegistry.load()
    # LiteLLM adds each custom handler installed in this process (ours: the reference models,
    # once an earlier test used them) to its provider_list: those are not its own providers
    custom = {item["provider"] for item in litellm.custom_provider_map}
    known = {getattr(p, "value", p) for p in litellm.provider_list} - custom
    assert LITELLM_PREFIXES == known | set(JSONProviderRegistry._providers)
    assert unknown_prefix("nosuchprovider/x") == "nosuchprovider"
    assert unknown_prefix("openai/gpt-4o-mini") is None and unknown_prefix("gpt-4o") is None


def _finished_http_run(home: Path) -> str:
    """A finished one-trial run of ``reference-http/golden``, its server stopped since."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from pipeline.models.call_params import call_params_of
    from pipeline.reference.server import start_server
    from pipeline.sweep.config import SweepConfig
    from pipeline.sweep.stages import plan, record_run
    from pipeline.trial.run import RunContext, run_trial, tables_of
    from warehouse.writer import WarehouseWriter

    with start_server() as server:
        config = SweepConfig.model_validate({
            "suites": [REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"],
            "scenarios": ["V1"], "memory_modes": ["chat"], "repeats": 1, "run_id": "finished",
            "models": [{"name": "reference-http/golden", "api_base": server.api_base}],
            "warehouse": home / "warehouse"})
        sweep_plan = plan(config)
        results = [run_trial(replace(spec, extra=call_params_of(spec.model)),
                             RunContext("finished", "test")) for spec in sweep_plan.pending]
    assert [r.trial.status for r in results] == ["complete"]
    WarehouseWriter(config.warehouse, "finished").write_batch(tables_of(results))
    record_run(config, sweep_plan, datetime.now(UTC), len(results), "first")
    return config.run_id


def test_a_resume_with_nothing_left_calls_no_provider(tmp_path: Path) -> None:
    """Its endpoint is down and LiteLLM stays unimported: no model would be called."""
    home = tmp_path / "home"
    run_id = _finished_http_run(home)
    probe = PROBE.replace('["run", "--model", sys.argv[1]]', '["run", "--run-id", sys.argv[1], '
                          '"--resume"]')
    done = subprocess.run([sys.executable, "-c", probe, run_id], env=clean_env(home),
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.partition("\n")[0] == "0 False", done.stdout + done.stderr


def test_a_model_with_its_own_endpoint_is_checked_without_litellm(tmp_path: Path) -> None:
    """A known prefix with an ``--api-base`` (the reference server, a local server): LiteLLM
    adds nothing to the check, and its import would cost the driver seconds before the first
    trial. The endpoint is still probed: nothing listens on port 9."""
    probe = PROBE.replace('["run", "--model", sys.argv[1]]',
                          '["run", "--model", sys.argv[1], "--api-base", "http://127.0.0.1:9/v1"]')
    done = subprocess.run([sys.executable, "-c", probe, "reference-http/golden"],
                          env=clean_env(tmp_path / "home"), cwd=REPO, capture_output=True,
                          text=True, timeout=120, check=False)
    first, _, err = done.stdout.partition("\n")
    assert first == "2 False", done.stdout + done.stderr
    assert "api_base http://127.0.0.1:9 is not reachable" in " ".join(err.split())
