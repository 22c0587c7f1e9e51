"""rpm, tpm and spend caps in a sweep spec: a mistake names the file, line and field before
anything runs; a cap over a model of unknown cost is refused unless ``unknown_cost: allow``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipeline.catalog import CatalogError
from pipeline.models.config import ModelConfig
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.preflight import BadInput, check
from pipeline.sweep.spec import load_spec


def _load(tmp_path: Path, text: str) -> SweepConfig:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(text), "utf-8")
    return load_spec(path, tmp_path / "wh")


def _error(tmp_path: Path, text: str) -> CatalogError:
    with pytest.raises(CatalogError) as caught:
        _load(tmp_path, text)
    return caught.value


def test_rpm_tpm_and_caps_reach_the_config(tmp_path: Path) -> None:
    config = _load(tmp_path, """\
        max_cost_usd: 2.5
        models:
          - name: openai/gpt-4o-mini
            rpm: 500
            tpm: 40000
            max_cost_usd: 1
          - name: openai/gpt-4o
            tpm: 40000
        """)
    assert config.max_cost_usd == 2.5 and config.unknown_cost == "refuse"
    assert config.models[0] == ModelConfig("openai/gpt-4o-mini", rpm=500, tpm=40000,
                                           max_cost_usd=1.0)


@pytest.mark.parametrize(("text", "line", "field", "words"), [
    ("models:\n  - name: openai/a\n    tpm: 4000\n  - name: openai/b\n    tpm: 2000\n", 5,
     "models.1.tpm", "provider group 'openai' already has tpm 4000 (models.0)"),
    ("models:\n  - name: openai/a\n    rpm: 0\n", 3, "models.0.rpm", "greater than or equal to 1"),
    ("models: [reference/golden]\nmax_cost_usd: -1\n", 2, "max_cost_usd", "greater than 0"),
    ("models: [reference/golden]\nmax_cost_usd: 1\nunknown_cost: ignore\n", 3, "unknown_cost",
     "'ignore' is not one of refuse, allow"),
    ("max_cost_usd: 1\nmodels:\n  - openai/gpt-4o-mini\n  - reference/golden\n", 4,
     "models.1.name", "the cost of reference/golden is unknown"),
    ("models:\n  - name: openai/gpt-4o-mini\n    max_cost_usd: 1\n  - name: local/default\n"
     "    max_cost_usd: 1\n", 4, "models.1.name",
     "so local/default's max_cost_usd cannot count it; set unknown_cost: allow"),
])
def test_a_broken_limit_or_cap_names_line_and_field(tmp_path: Path, text: str, line: int,
                                                    field: str, words: str) -> None:
    error = _error(tmp_path, text)
    assert (error.line, error.field) == (line, field), str(error)
    assert words in error.message, error.message
    assert str(error).startswith(f"{tmp_path / 'spec.yaml'}:{line}: {field}: ")


def test_unknown_cost_allow_runs_a_cap_over_an_unpriced_model(tmp_path: Path) -> None:
    config = _load(tmp_path, "max_cost_usd: 1\nunknown_cost: allow\nmodels: [reference/golden]\n")
    assert config.unknown_cost == "allow"


def test_a_model_without_a_cap_of_its_own_is_not_asked_for_a_price(tmp_path: Path) -> None:
    config = _load(tmp_path, "models:\n  - name: openai/gpt-4o-mini\n    max_cost_usd: 1\n"
                             "  - name: reference/golden\n")
    assert [m.max_cost_usd for m in config.models] == [1.0, None]


def test_preflight_refuses_a_cap_over_an_unknown_cost_from_any_door(tmp_path: Path) -> None:
    """A config that did not come from a spec (a deployment's) is checked by preflight."""
    from conftest import MEETING_SUITE

    config = SweepConfig(suites=[MEETING_SUITE], models=["reference/golden"], max_cost_usd=1.0,
                         memory_modes=["chat"], warehouse=tmp_path / "wh", repeats=1)
    with pytest.raises(BadInput, match="max_cost_usd: the cost of reference/golden is unknown"):
        check(config, append=False, reach=False)
    check(config.model_copy(update={"unknown_cost": "allow"}), append=False, reach=False)


def test_the_command_line_cap_wins_over_the_spec(tmp_path: Path) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text("max_cost_usd: 1\nmodels: [openai/gpt-4o-mini]\n", "utf-8")
    assert load_spec(path, tmp_path / "wh", {"max_cost_usd": 3.0}).max_cost_usd == 3.0


@pytest.mark.slow  # starts an agentsweep process
def test_agentsweep_run_refuses_a_cap_over_an_unknown_cost_with_exit_2(tmp_path: Path) -> None:
    from conftest import MEETING_SUITE
    from helpers.commands import agentsweep

    home = tmp_path / "home"
    result = agentsweep(home, "run", "--suite", str(MEETING_SUITE), "--repeats", "1",
                        "--memory-mode", "chat", "--max-cost-usd", "0.5")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: max_cost_usd: the cost of reference/golden is unknown"), line
    assert "unknown_cost: allow" in line
    assert not (home / "warehouse" / "trials").exists()  # nothing ran, nothing written
