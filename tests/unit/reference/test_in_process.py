"""The in-process reference models answer without LiteLLM (issue 26: LiteLLM only where it
earns its cost), and give exactly the trials they gave through LiteLLM's custom-handler path."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from typing import Any

import pytest
from conftest import MEETING_SUITE, REPO, loaded_suite

from pipeline.errors import InfraError
from pipeline.models.client import LiteLLMClient
from pipeline.reference.provider import InProcessReference
from pipeline.reference.reference import reference_call_params
from pipeline.sweep.grid import ModelConfig, expand
from pipeline.trial.run import RunContext, TrialResult, run_trial

VARIANTS = ["reference/golden", "reference/mutant-ignores-switch", "reference/mutant-false-claim",
            "reference/broken-bad-json", "reference/broken-empty", "reference/broken-truncated",
            "reference/broken-unknown-tool", "reference/broken-wrong-language"]
TIMES = {"latency_ms", "started_at", "finished_at", "attempt_id"}
"""What differs between two runs of the same trial whatever answers it."""


def _timeless(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _timeless(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name not in TIMES}
    if isinstance(value, tuple | list):
        return [_timeless(v) for v in value]
    return value


def _trials() -> list[TrialResult]:
    specs = expand([loaded_suite(MEETING_SUITE)], [ModelConfig(v) for v in VARIANTS],
                   ["default"], ["chat", "summary"], 1)
    return [run_trial(spec, RunContext("parity", "test")) for spec in specs]


@pytest.mark.slow  # over a second (the fast tier stays under a minute)
def test_in_process_answers_give_the_trials_litellm_gave(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    direct = _trials()
    monkeypatch.setattr(InProcessReference, "answers_in_process", False)
    through_litellm = _trials()
    assert len(direct) == len(VARIANTS) * 2 * len(loaded_suite(MEETING_SUITE).scenarios)
    assert {r.trial.status for r in direct} >= {"complete", "agent_error"}
    assert [_timeless(r) for r in direct] == [_timeless(r) for r in through_litellm]


def test_a_run_of_reference_models_never_imports_litellm(tmp_path: Any) -> None:
    program = (
        "import sys\n"
        "from pipeline.runtime import hygiene\n"
        "hygiene.apply()\n"
        "from pathlib import Path\n"
        "from pipeline.catalog import load_suite\n"
        "from pipeline.sweep.grid import ModelConfig, expand\n"
        "from pipeline.trial.run import RunContext, run_trial\n"
        f"suite = load_suite(Path({str(MEETING_SUITE)!r}))\n"
        "spec = next(iter(expand([suite], [ModelConfig('reference/golden')], ['default'],"
        " ['summary'], 1)))\n"
        "assert run_trial(spec, RunContext('r', 'test')).trial.passed\n"
        "print('litellm' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True,
                          cwd=REPO, env={"AGENTSWEEP_HOME": str(tmp_path), "PATH": "/usr/bin"},
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_call_without_a_script_is_our_harness_error() -> None:
    client = LiteLLMClient(ModelConfig("reference/golden"), {})
    with pytest.raises(InfraError) as caught:
        client.complete([{"role": "user", "content": "x"}], None)
    assert caught.value.kind == "harness_error" and "no script" in str(caught.value)


def test_the_options_reach_the_in_process_model(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[dict[str, Any]] = []
    original = InProcessReference.answer

    def spy(self: InProcessReference, route: Any, messages: Any, options: dict[str, Any]
            ) -> Any:
        seen.append({k: v for k, v in options.items() if k in ("temperature", "top_p", "seed")})
        return original(self, route, messages, options)

    monkeypatch.setattr(InProcessReference, "answer", spy)
    scenario = next(s.scenario for s in loaded_suite(MEETING_SUITE).scenarios
                    if s.scenario.id == "V1")
    model = ModelConfig("reference/golden", temperature=0.3, seed=8,
                        params={"top_p": 0.5}).resolved()
    client = LiteLLMClient(model, reference_call_params("metadata", scenario))
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    client.complete(messages, None, purpose="summary", turn=1)
    client.complete(messages, None)
    assert seen == [{"temperature": 0.3, "top_p": 0.5, "seed": 8}] * 2
