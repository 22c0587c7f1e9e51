"""Opt-in: the same sweep path against a real provider (``pytest --live``, never in CI).

Set ``AGENTSWEEP_LIVE_MODEL`` to a LiteLLM model string and the provider's usual key, e.g.
``AGENTSWEEP_LIVE_MODEL=openai/gpt-4o-mini OPENAI_API_KEY=...`` or
``AGENTSWEEP_LIVE_MODEL=anthropic/claude-3-5-haiku-latest ANTHROPIC_API_KEY=...``;
optionally ``AGENTSWEEP_LIVE_API_BASE`` for an OpenAI-compatible endpoint.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import MEETING_SUITE

from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.stages import execute_plan, plan
from warehouse.query import run_sql

pytestmark = pytest.mark.live


def test_a_small_suite_runs_against_the_real_provider(ray_local: Any, tmp_path: Path) -> None:
    model = os.environ.get("AGENTSWEEP_LIVE_MODEL")
    if not model:
        pytest.fail("set AGENTSWEEP_LIVE_MODEL (and the provider's key) for --live")
    settings = ModelConfig(model, api_base=os.environ.get("AGENTSWEEP_LIVE_API_BASE"),
                           temperature=0.0)
    root = tmp_path / "warehouse"
    config = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1", "F1"], models=[settings],
                         memory_modes=["chat", "structured"],
                         repeats=1, run_id="live", warehouse=root)
    statuses = execute_plan(config, plan(config))
    assert sum(statuses.values()) == 4 and "incomplete" not in statuses, statuses
    rows = run_sql(root, "select count(*) filter (where model_version is not null), "
                         "count(*) filter (where input_tokens > 0) from trials").rows
    assert rows == [(4, 4)]
    keys = [v for k, v in os.environ.items() if k.endswith("_API_KEY") and len(v) >= 8]
    for key in keys:
        found = subprocess.run(["grep", "-r", "-l", "-F", key, str(root)], capture_output=True,
                               text=True, check=False)
        assert found.stdout == "", "a key landed in the warehouse"
