"""Sweep spec files: a valid spec becomes the expected SweepConfig; a broken one names the file,
the line of the offending key and the field; the CLI refuses it with exit 2 and writes nothing."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from conftest import MEETING_SUITE, REPO
from pydantic import ValidationError
from typer.testing import CliRunner

from pipeline.catalog import CatalogError, bundled_suites
from pipeline.execution.retry import RetryPolicy
from pipeline.models.config import ModelConfig
from pipeline.models.faults import FaultProfile
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.preflight import BadInput
from pipeline.sweep.spec import load_spec

VALID = """\
# a comment line
run_id: spec-run
suites:
  - suites/mine.jsonl
  - guest_pass
models:
  - name: reference/golden
    temperature: 0.0
    concurrency: 4
    faults:
      latency_ms: 5
      rate_limit: 0.1
  - name: openai/golden
    api_base: http://127.0.0.1:8765/v1
    concurrency: 2
prompts: [default]
memory_modes: [chat, structured]
repeats: 2
step_limit: 6
retry:
  max_attempts: 5
  backoff_base_s: 0.25
  backoff_max_s: 4
batch_size: 10
max_in_flight: 7
"""


def _write(tmp_path: Path, text: str, name: str = "spec.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), "utf-8")
    return path


@pytest.fixture
def spec_dir(tmp_path: Path) -> Path:
    (tmp_path / "suites").mkdir()
    (tmp_path / "suites" / "mine.jsonl").write_bytes(MEETING_SUITE.read_bytes())
    return tmp_path


def test_a_valid_spec_loads_into_the_expected_config(spec_dir: Path) -> None:
    warehouse = spec_dir / "wh"
    config = load_spec(_write(spec_dir, VALID), warehouse)
    guest = next(p for p in bundled_suites() if p.stem == "guest_pass")
    assert config.suites == [(spec_dir / "suites" / "mine.jsonl").resolve(), guest]
    assert config.model_names() == ["reference/golden", "openai/golden"]
    assert config.models == [
        ModelConfig("reference/golden", concurrency=4,
                    faults=FaultProfile(latency_ms=5, rate_limit=0.1)),
        ModelConfig("openai/golden", api_base="http://127.0.0.1:8765/v1", concurrency=2),
    ]
    assert config.retry == RetryPolicy(max_attempts=5, backoff_base_s=0.25, backoff_max_s=4)
    assert (config.run_id, config.models[0].temperature, config.prompts, config.memory_modes) == (
        "spec-run", 0.0, ["default"], ["chat", "structured"])
    assert (config.repeats, config.step_limit, config.batch_size, config.max_in_flight) == (
        2, 6, 10, 7)
    assert (config.resume, config.ray_address, config.warehouse) == (False, None, warehouse)


def test_an_overridden_run_id_is_checked_where_it_enters_and_names_the_option(
        spec_dir: Path) -> None:
    """A run id is checked once, as it enters: a spec's on its line (below), an override (a
    program's --run-id) naming the option; a SweepConfig never holds an unusable one."""
    path = _write(spec_dir, VALID)
    with pytest.raises(BadInput) as refused:
        load_spec(path, spec_dir / "wh", {"run_id": "../up"})
    assert str(refused.value) == ("--run-id: run id '../up': use letters, digits, '.', '_' or "
                                  "'-' (at most 128 characters)")
    with pytest.raises(ValidationError, match="run id 'a b'"):
        SweepConfig(run_id="a b", warehouse=spec_dir / "wh")


def test_overrides_win_and_a_spec_without_run_id_gets_a_fresh_one(spec_dir: Path) -> None:
    path = _write(spec_dir, VALID)
    config = load_spec(path, spec_dir / "wh", {"run_id": "other", "resume": True,
                                               "repeats": 9, "ray_address": "127.0.0.1:6379"})
    assert (config.run_id, config.resume, config.repeats, config.ray_address) == (
        "other", True, 9, "127.0.0.1:6379")
    minimal = load_spec(_write(spec_dir, "models: [{name: reference/golden}]\n", "min.yaml"),
                        spec_dir / "wh")
    defaults = SweepConfig(warehouse=spec_dir / "wh")
    assert minimal.suites == [] and minimal.repeats == 3 and "run_id" not in \
        minimal.model_fields_set and minimal.retry == RetryPolicy()
    assert (minimal.prompts, minimal.memory_modes) == (defaults.prompts, defaults.memory_modes)


def test_the_shipped_specs_load() -> None:
    nightly = load_spec(REPO / "infra" / "sweeps" / "nightly.yaml", Path("/nonexistent"))
    assert nightly.model_names() == ["reference/golden"] and len(nightly.suites) == 2
    swap = load_spec(REPO / "infra" / "sweeps" / "model_swap.yaml", Path("/nonexistent"))
    assert len(swap.models) == 2 and swap.run_id == "model-swap"


def test_the_cases_spec_carries_runs_per_case_tools_and_thresholds_into_the_run() -> None:
    from pipeline.sweep.config import config_json

    config = load_spec(REPO / "infra" / "sweeps" / "cases.yaml", Path("/nonexistent"))
    assert (config.repeats, config.tools, config.memory_modes) == (3, "mock", ["chat"])
    stored = json.loads(config_json(config))
    assert stored["tools"] == "mock"
    assert stored["thresholds"] == {"critical_pass_rate": 1.0, "overall_pass_rate": 0.98,
                                    "max_latency_regression_percent": 20.0,
                                    "max_cost_usd": 5.0, "max_cost_regression_percent": None}
    resumed = SweepConfig(**{**stored, "warehouse": Path("/nonexistent")})
    assert (resumed.thresholds, resumed.tools) == (config.thresholds, "mock")
    assert load_spec(REPO / "infra" / "sweeps" / "nightly.yaml",
                     Path("/nonexistent")).thresholds.overall_pass_rate is None


BROKEN = [
    # (file text, line, field, words in the message)
    ("models: [{name: reference/golden}]\nrepeats: 0\n", 2, "repeats", "greater than"),
    ("models:\n  - name: reference/golden\n    temprature: 0.2\n", 3, "models.0.temprature",
     "unknown key; did you mean 'temperature'?"),
    ("suites: [intent_change]\n", 1, "models", "missing: this key is required"),
    ("models:\n  - name: reference/golden\nmemory_modes:\n  - chat\n  - sumary\n", 5,
     "memory_modes.1", "'sumary' is not one of chat, summary, structured; did you mean "
     "'summary'?"),
    ("models:\n  - name: openai/gpt-4o-mini\n    faults: {rate_limit: 0.5}\n", 2, "models.0",
     "only for reference models"),
    ("models:\n  - name: reference/golden\n    faults:\n      rate_limit: 0.7\n"
     "      server_error: 0.7\n", 3, "models.0.faults", "sum to 1.4"),
    ("models: [{name: reference/golden}]\nretry:\n  backoff_base_s: 9\n  backoff_max_s: 1\n"
     "  max_atempts: 2\n", 5, "retry.max_atempts", "did you mean 'max_attempts'?"),
    ("models: [{name: reference/golden}]\nsuites:\n  - intent_change\n  - nope\n", 4,
     "suites.1", "unknown bundled suite 'nope'"),
    ("models: [{name: reference/golden}]\nsuites:\n  - missing/file.jsonl\n", 3, "suites.0",
     "no such suite file"),
    ("run_id: has space\nmodels: [{name: reference/golden}]\n", 1, "run_id", "run id"),
    ("models:\n  - name: reference/golden\n  - name: reference/golden\n", 3, "models.1.name",
     "listed twice"),
    ("models:\n  - name: openai/a\n    concurrency: 4\n  - name: openai/b\n    concurrency: 2\n",
     5, "models.1.concurrency", "already has concurrency 4"),
    ("models:\n  - name: reference/golden\n  - name: local/nosuch\n", 3, "models.1.name",
     "unknown local model 'local/nosuch'; known: local/default"),
    ("models:\n  - name: reference/golden\n    params: {temperature: 0.9}\n", 3,
     "models.0.params", "temperature cannot be set in params"),
    ("models: [{name: reference/golden}]\nrepeats: 2\nrepeats: 3\n", 3, "repeats",
     "duplicate key (first on line 2)"),
    ("models: [{name: reference/golden}\nrepeats: 2\n", 2, "", "invalid YAML"),
    ("- just\n- a list\n", 1, "", "a sweep spec is a mapping"),
    ("models: [{name: reference/golden}]\nthresholds:\n  critical_pass_rate: 1.5\n", 3,
     "thresholds.critical_pass_rate", "less than or equal to 1"),
    ("models: [{name: reference/golden}]\nthresholds:\n  overall_pass_rate: -0.1\n", 3,
     "thresholds.overall_pass_rate", "greater than or equal to 0"),
    ("models: [{name: reference/golden}]\nthresholds:\n  max_latency_regression_percent: -5\n",
     3, "thresholds.max_latency_regression_percent", "greater than or equal to 0"),
    ("models: [{name: reference/golden}]\nthresholds:\n  max_cost_usd: .nan\n", 3,
     "thresholds.max_cost_usd", "finite number"),
    ("models: [{name: reference/golden}]\nthresholds:\n  max_cost: 5\n", 3,
     "thresholds.max_cost", "unknown key; did you mean 'max_cost_usd'?"),
    ("models: [{name: reference/golden}]\nruns_per_case: 0\n", 2, "runs_per_case",
     "greater than"),
    ("models: [{name: reference/golden}]\nrepeats: 2\nruns_per_case: 3\n", 3,
     "runs_per_case", "another name for repeats"),
    ("models: [{name: reference/golden}]\ntools: live\n", 2, "tools",
     "'live' is not one of sandbox, mock"),
    ("models: [{name: reference/golden}]\nmax_in_flight: 8\nin_flight_per_node: 4\n", 3,
     "in_flight_per_node", "replaces max_in_flight: give one of them"),
]


@pytest.mark.parametrize(("text", "line", "field", "words"), BROKEN)
def test_a_broken_spec_names_line_and_field(tmp_path: Path, text: str, line: int, field: str,
                                            words: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(CatalogError) as caught:
        load_spec(path, tmp_path / "wh")
    error = caught.value
    assert (error.path, error.line, error.field) == (str(path), line, field), str(error)
    assert words in error.message
    assert str(error).startswith(f"{path}:{line}: {field}: " if field else f"{path}:{line}: ")
    assert ": -:" not in str(error) and "Input should be a valid" not in str(error)


def test_the_cli_refuses_a_broken_spec_with_exit_2_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    home = tmp_path / "home"
    monkeypatch.setenv("AGENTSWEEP_HOME", str(home))
    path = _write(tmp_path, "models:\n  - name: reference/golden\n    concurrency: -1\n")
    runner = CliRunner()
    result = runner.invoke(cli.app, ["run", "--spec", str(path)])
    assert result.exit_code == 2, result.output
    assert f"{path}:3: models.0.concurrency: must be greater than or equal to 1, got -1" in \
        result.stderr
    assert not home.exists()

    both = runner.invoke(cli.app, ["run", "--spec", str(path), "--model", "reference/golden"])
    assert both.exit_code == 2 and "--spec" in both.stderr
    resume = _write(tmp_path, "models: [{name: reference/golden}]\n", "ok.yaml")
    no_id = runner.invoke(cli.app, ["run", "--spec", str(resume), "--resume"])
    assert no_id.exit_code == 2 and "--resume needs --run-id" in no_id.stderr
    assert not home.exists()


def test_per_model_settings_reach_the_grid_and_the_seed_moves_per_repeat(tmp_path: Path) -> None:
    from pipeline.sweep.grid import expand
    from pipeline.sweep.stages import load_plan_suites

    path = _write(tmp_path, "suites: [intent_change]\nrepeats: 2\nmemory_modes: [chat]\n"
                            "models:\n  - name: reference/golden\n"
                            "  - name: openai/gpt-4o-mini\n    temperature: 0.7\n"
                            "    seed: 40\n    params: {top_p: 0.9}\n")
    config = load_spec(path, tmp_path / "wh")
    golden, remote = config.resolved_models()
    assert (golden.temperature, golden.seed, golden.params) == (0.0, None, {})
    assert (remote.temperature, remote.seed, dict(remote.params)) == (0.7, 40, {"top_p": 0.9})
    specs = [s for s in expand(load_plan_suites(config), [remote], ["default"], ["chat"], 2)
             if s.scenario.id == "R1"]
    assert [s.model.seed for s in specs] == [40, 41]
    assert [s.model.generation_params() for s in specs] == [
        {"temperature": 0.7, "top_p": 0.9, "seed": 40},
        {"temperature": 0.7, "top_p": 0.9, "seed": 41}]
    assert len({s.trial_id for s in specs}) == 2


def test_a_local_model_gets_its_route_and_default_params(tmp_path: Path) -> None:
    path = _write(tmp_path, "models:\n  - name: local/default\n    params: {top_p: 0.5}\n")
    (local,) = load_spec(path, tmp_path / "wh").resolved_models()
    assert local.route is not None and local.route.litellm_model == "openai/qwen2.5-coder-1.5b"
    assert local.route.node_service == "local-model:qwen2.5-coder-1.5b"
    assert dict(local.params) == {"max_tokens": 768, "top_p": 0.5}


def test_a_config_recorded_before_model_config_resumes_the_same_grid(tmp_path: Path) -> None:
    """runs.config_json of an older run (model names, the CLI's temperature and seed, a spec's
    model_settings apart) is read back as the same models, so the same trial ids."""
    from pipeline.sweep.config import upgrade_recorded
    from pipeline.sweep.stages import plan

    old = {"suites": [str(MEETING_SUITE)], "scenarios": ["V1"], "memory_modes": ["chat"],
           "models": ["reference/golden", "openai/x"], "temperature": 0.5, "seed": 3,
           "timeout_s": 9.0, "repeats": 2, "run_id": "old",
           "model_settings": [{"name": "openai/x", "temperature": 0.2, "params": {"top_p": 1},
                               "seed": None, "concurrency": 2, "api_base": None,
                               "api_key_env": None, "timeout_s": None, "faults": None}]}
    config = SweepConfig(**upgrade_recorded(old), warehouse=tmp_path / "wh")
    assert config.models == [
        ModelConfig("reference/golden", temperature=0.5, seed=3, timeout_s=9.0),
        ModelConfig("openai/x", temperature=0.2, params={"top_p": 1}, concurrency=2,
                    timeout_s=9.0)]
    today = SweepConfig(suites=[MEETING_SUITE], scenarios=["V1"], memory_modes=["chat"],
                        repeats=2, run_id="old", warehouse=tmp_path / "wh", models=[
                            ModelConfig("reference/golden", temperature=0.5, seed=3),
                            ModelConfig("openai/x", temperature=0.2, params={"top_p": 1})])
    assert [s.trial_id for s in plan(config).pending] == [s.trial_id for s in
                                                          plan(today).pending]
    assert upgrade_recorded({"models": [{"name": "reference/golden"}]}) == {
        "models": [{"name": "reference/golden"}]}  # today's shape is left alone


THREE_MISTAKES = """\
suites: [intent_change]
models:
  - name: reference/golden
    temprature: 0.2
memory_modes: [chat, sumary]
repeat: 2
"""


def test_three_mistakes_are_three_errors_in_one_pass_each_with_a_suggestion(
        tmp_path: Path) -> None:
    path = _write(tmp_path, THREE_MISTAKES)
    with pytest.raises(CatalogError) as caught:
        load_spec(path, tmp_path / "wh")
    assert str(caught.value).splitlines() == [
        f"{path}:4: models.0.temprature: unknown key; did you mean 'temperature'?",
        f"{path}:5: memory_modes.1: 'sumary' is not one of chat, summary, structured; did you "
        "mean 'summary'?",
        f"{path}:6: repeat: unknown key; did you mean 'repeats'?"]


def test_mistakes_past_the_shape_are_collected_too(tmp_path: Path) -> None:
    """Suites, scenarios and repeats are checked after the shape: all of theirs at once."""
    path = _write(tmp_path, "suites: [intent_chnge, guest_pass]\nmodels: [reference/golden]\n"
                            "scenarios: [V1]\nrepeats: 2\nruns_per_case: 2\n")
    with pytest.raises(CatalogError) as caught:
        load_spec(path, tmp_path / "wh")
    lines = str(caught.value).splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{path}:1: suites.0: unknown bundled suite 'intent_chnge'; did "
                               "you mean 'intent_change'?")
    assert lines[1].startswith(f"{path}:5: runs_per_case: ")
    path = _write(tmp_path, "models: [reference/golden]\nscenarios: [V1x, F1]\n", "ids.yaml")
    with pytest.raises(CatalogError, match=r"ids.yaml:2: scenarios.0: no scenario 'V1x' in the "
                                           r"suites; did you mean 'V1'\?"):
        load_spec(path, tmp_path / "wh")


def test_a_model_may_be_given_by_its_name_as_on_the_command_line(tmp_path: Path) -> None:
    path = _write(tmp_path, "models: [reference/golden, {name: reference/mutant-stale-value, "
                            "temperature: 0.5}]\nuser_model: reference/golden\n")
    config = load_spec(path, tmp_path / "wh")
    assert [(m.name, m.temperature) for m in config.models] == [
        ("reference/golden", 0.0), ("reference/mutant-stale-value", 0.5)]
    assert config.user_model == ModelConfig("reference/golden")


def test_the_cli_prints_every_mistake_of_a_spec(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.cli import app as cli
    monkeypatch.setenv("AGENTSWEEP_HOME", str(tmp_path / "home"))
    path = _write(tmp_path, THREE_MISTAKES)
    result = CliRunner().invoke(cli.app, ["run", "--spec", str(path)])
    assert result.exit_code == 2
    lines = result.stderr.removeprefix("error: ").splitlines()
    assert all(line.startswith(f"{path}:") for line in lines), lines
    assert [line.split(": ", 2)[1] for line in lines] == [
        "models.0.temprature", "memory_modes.1", "repeat"]
