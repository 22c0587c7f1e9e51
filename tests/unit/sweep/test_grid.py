from __future__ import annotations

from conftest import MEETING_SUITE

from pipeline.catalog import load_suite
from pipeline.sweep.grid import AgentRef, ModelConfig, expand, grid_size, trial_id_for


def test_grid_expands_every_combination_with_unique_stable_ids() -> None:
    suite = load_suite(MEETING_SUITE)
    models = [ModelConfig("reference/golden"), ModelConfig("reference/golden", temperature=0.7)]
    specs = list(expand([suite], models, ["default"], ["chat"], repeats=3))
    assert len(specs) == grid_size([suite], 2, 1, ["chat"], 3) == len(suite.scenarios) * 2 * 3
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
        trial_id_for(scenario, digest, model, "p", "own", 0, agent="my_agent.py:make"),
    ]
    assert base not in variants
    assert len(set(variants)) == len(variants)


def replace_version(scenario):  # type: ignore[no-untyped-def]
    return scenario.model_copy(update={"version": scenario.version + 1})


# trial_id_for(V1 version 2, "scenario-sha", model, "prompt-sha", "chat", repeat), computed with
# the model types that came before ModelConfig (grid.ModelConfig, settings.ModelSettings): the
# same values must keep the same ids, or --resume of older runs would run everything again.
PINNED_IDS = [
    (ModelConfig("reference/golden"), 0, "cb4ff2bd9f85df3840d5880544af44e6"),
    (ModelConfig("reference/golden"), 1, "7a3d404097c95c51179c04451045f22d"),
    (ModelConfig("openai/gpt-4o-mini", temperature=0.7, seed=40,
                 params={"top_p": 0.9, "max_tokens": 64}), 0, "0fd41329f466a2362cd9822725fdcbb5"),
    (ModelConfig("openai/gpt-4o-mini", temperature=0.7, seed=40,
                 params={"max_tokens": 64, "top_p": 0.9}), 1, "eb59935e261d4716317fa2439e8496d6"),
    (ModelConfig("local/default"), 0, "ad88bef462e4ad24e55536760a961314"),
    (ModelConfig("local/default"), 1, "6eb7f5cd733b3b6c39e69b88587eaf94"),
]


def test_trial_ids_of_existing_configurations_do_not_change() -> None:
    loaded = load_suite(MEETING_SUITE).scenarios[0]
    scenario = loaded.scenario.model_copy(update={"id": "V1", "version": 2})
    for model, repeat, expected in PINNED_IDS:
        # how a sweep's grid gets it: resolved (the route's default params), then per repeat
        seeded = model.resolved().for_repeat(repeat)
        assert trial_id_for(scenario, "scenario-sha", seeded, "prompt-sha", "chat",
                            repeat) == expected, (model.name, repeat)
    # what is not identity (how the model is reached) leaves the id alone
    reached = ModelConfig("reference/golden", concurrency=2, timeout_s=5, api_key_env="K")
    assert trial_id_for(scenario, "scenario-sha", reached, "prompt-sha", "chat", 0) == \
        PINNED_IDS[0][2]


def test_an_external_agent_runs_in_its_own_memory_beside_the_builtin_modes() -> None:
    suite = load_suite(MEETING_SUITE)
    agents = [AgentRef(), AgentRef("/somewhere/my_agent.py:make")]
    specs = list(expand([suite], [ModelConfig("reference/golden")], ["default"],
                        ["chat", "summary"], repeats=2, agents=agents))
    assert len(specs) == grid_size([suite], 1, 1, ["chat", "summary"], 2, agents) == \
        len(suite.scenarios) * (2 + 1) * 2
    external = [s for s in specs if not s.agent.builtin]
    assert {s.memory_mode for s in external} == {"own"}
    builtin_ids = {s.trial_id for s in specs if s.agent.builtin}
    assert builtin_ids == {s.trial_id for s in expand(
        [suite], [ModelConfig("reference/golden")], ["default"], ["chat", "summary"], 2)}
    elsewhere = expand([suite], [ModelConfig("reference/golden")], ["default"], ["chat"], 2,
                       agents=[AgentRef("agents/my_agent.py:make")])
    assert [s.trial_id for s in elsewhere] == [s.trial_id for s in external]
