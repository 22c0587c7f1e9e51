from __future__ import annotations

from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.grid import ModelConfig, expand, grid_size, trial_id_for


def test_grid_expands_every_combination_with_unique_stable_ids() -> None:
    suite = load_suite(MEETING_SUITE)
    models = [ModelConfig("reference/golden"), ModelConfig("reference/golden", temperature=0.7)]
    specs = list(expand([suite], models, ["default"], ["chat"], repeats=3))
    assert len(specs) == grid_size([suite], 2, 1, 1, 3) == len(suite.scenarios) * 2 * 3
    ids = [s.trial_id for s in specs]
    assert len(set(ids)) == len(ids)
    again = [s.trial_id for s in expand([suite], models, ["default"], ["chat"], repeats=3)]
    assert again == ids


def test_trial_id_changes_with_each_part_of_the_identity() -> None:
    loaded = load_suite(MEETING_SUITE).scenarios[0]
    scenario, digest = loaded.scenario, loaded.sha256
    model = ModelConfig("reference/golden")
    base = trial_id_for(scenario, digest, model, "p", "chat", 0)
    variants = [
        trial_id_for(scenario, "other", model, "p", "chat", 0),
        trial_id_for(replace_version(scenario), digest, model, "p", "chat", 0),
        trial_id_for(scenario, digest, ModelConfig("openai/x"), "p", "chat", 0),
        trial_id_for(scenario, digest, model.model_copy(update={"temperature": 1.0}), "p", "chat",
                     0),
        trial_id_for(scenario, digest, model.model_copy(update={"seed": 7}), "p", "chat", 0),
        trial_id_for(scenario, digest, model, "q", "chat", 0),
        trial_id_for(scenario, digest, model, "p", "summary", 0),
        trial_id_for(scenario, digest, model, "p", "chat", 1),
    ]
    assert base not in variants
    assert len(set(variants)) == len(variants)


def replace_version(scenario):  # type: ignore[no-untyped-def]
    return scenario.model_copy(update={"version": scenario.version + 1})
