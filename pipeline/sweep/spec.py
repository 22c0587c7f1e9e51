"""Sweep spec files: a YAML description of a sweep, validated with line-precise errors.

A spec names suites (paths relative to the spec file, or bundled suite ids such as
``intent_change``), models with their settings, prompts, memory modes, repeats, the retry
policy, batch size and ``max_in_flight``; ``run_id`` and ``ray_address`` are optional;
``runs_per_case`` (the regression-suite method's name for ``repeats``), ``tools`` (sandbox | mock)
and the release
``thresholds`` (pipeline.sweep.thresholds, stored in ``runs.config_json`` for the gate), the
spend caps ``max_cost_usd`` (of the sweep; a model's own caps it alone) and ``unknown_cost``
(pipeline.sweep.spend_cap); a model's ``concurrency``, ``rpm`` and ``tpm`` are its provider
group's, agreed by its models. The file
is parsed with PyYAML keeping the line of every key, validated with pydantic
(``extra='forbid'``), and turned into a ``SweepConfig``. Every problem the file's shape shows,
or else every problem its suites, models and scenarios show, is raised at once
(``CatalogErrors``, one ``path:line: field: message`` each, with "did you mean" for a
misspelt key or value), before anything runs or is written. A model is a mapping, or just its
name (``models: [reference/golden]``) as ``--model`` takes it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from pipeline.catalog import CatalogError, bundled_suites, known_suites, set_extra_roots
from pipeline.catalog.errors import format_location, raise_all
from pipeline.catalog.located import (
    Location,
    line_of,
    read_yaml_mapping,
    validate_located,
)
from pipeline.catalog.plain import did_you_mean
from pipeline.environment.sandbox import ToolsMode
from pipeline.execution.retry import RetryPolicy
from pipeline.models.config import ModelConfig
from pipeline.sweep.config import CheckedRunId, SweepConfig, TrialsAs, UnknownCost
from pipeline.sweep.grid import BuiltinMemoryMode
from pipeline.sweep.preflight import BadInput, option_error
from pipeline.sweep.thresholds import Thresholds
from pipeline.user.prompt import USER_MAX_TURNS
from warehouse.location import LocationError, Root, parse_location

OVERRIDABLE = frozenset({"run_id", "resume", "ray_address", "repeats", "max_cost_usd",
                         "shard"})


class SweepSpec(BaseModel):
    """The shape of a sweep spec file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    run_id: CheckedRunId | None = None
    """Default: generated per invocation (a nightly spec leaves it out)."""
    catalogs: list[str] = Field(default_factory=list)
    """Catalog roots (folders of domain folders), relative to the spec, searched before the
    bundled one."""
    suites: list[str] = Field(default_factory=list)
    """Suite files (``.jsonl``, relative to the spec) or bundled suite ids; empty = all bundled."""
    scenarios: list[str] = Field(default_factory=list)
    """Scenario ids to keep from the suites; empty = every scenario."""
    models: list[ModelConfig] = Field(min_length=1)
    """Each model with its own temperature, params, seed, limits and endpoint."""
    user_model: ModelConfig | None = None
    """The user simulator's model, for scenarios with a simulated user."""
    user_max_turns: int = Field(default=USER_MAX_TURNS, ge=1)
    """Turns a simulated user may speak; past them the dialog ends as ``turn_limit``."""
    prompts: list[str] | None = Field(default=None, min_length=1)
    """Default: SweepConfig's (the domain's ``default`` prompt)."""
    memory_modes: list[BuiltinMemoryMode] | None = Field(default=None, min_length=1)
    """Default: SweepConfig's (every memory mode); the built-in agent's only."""
    agents: list[str] | None = Field(default=None, min_length=1)
    """The agents under test (docs/agents.md); a ``file.py:attribute`` relative to the spec.
    Default: the built-in agent."""
    repeats: int = Field(default=3, ge=1)
    runs_per_case: int | None = Field(default=None, ge=1)
    """The regression-suite method's name for ``repeats`` (runs of every case or scenario); give
    one of the two."""
    step_limit: int = Field(default=8, ge=1)
    tools: ToolsMode = "sandbox"
    """``mock``: every tool answers from the cases' recorded results."""
    thresholds: Thresholds = Field(default_factory=Thresholds)
    """Release thresholds the gate reads (stored in ``runs.config_json``)."""
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Spend cap of the sweep in USD (a model's own ``max_cost_usd`` caps it alone): at the
    cap no new attempt starts, exit 3; ``--resume`` with a higher cap goes on."""
    unknown_cost: UnknownCost = "refuse"
    """With a cap, a model whose cost is unknown is refused unless this says ``allow``."""
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    batch_size: int = Field(default=500, ge=1)
    flush_interval_s: float = Field(default=5.0, gt=0, allow_inf_nan=False)
    """Finished trials are written at least this often (seconds)."""
    max_in_flight: int = Field(default=64, ge=1)
    trials_as: TrialsAs = "coroutines"
    """How workers run the trials: coroutines, or threads (``SweepConfig.trials_as``)."""
    in_flight_per_node: int | None = Field(default=None, ge=1)
    """Trials in flight per alive node with a CPU (the limit grows with the cluster); given,
    it replaces ``max_in_flight`` (giving both is refused)."""
    timeout_s: float | None = Field(default=None, gt=0, allow_inf_nan=False)
    """Default time limit of one model call (a model's own ``timeout_s`` wins); folded into
    each model's ``timeout_s`` when the spec is loaded."""
    trial_timeout_s: float = Field(default=1800.0, gt=0, allow_inf_nan=False)
    ray_address: str | None = None
    """Default: ``RAY_ADDRESS`` or a local Ray."""
    warehouse: str | None = None
    """Where this sweep writes: a folder (relative to the spec) or ``s3://bucket/prefix``.
    Default: ``AGENTSWEEP_WAREHOUSE``, else ``AGENTSWEEP_HOME/warehouse``."""

    @field_validator("models", mode="before")
    @classmethod
    def _named_models(cls, value: Any) -> Any:
        """A model given by its name alone, as ``--model`` gives it."""
        if isinstance(value, list):
            return [_named(item) for item in value]
        return value

    @field_validator("user_model", mode="before")
    @classmethod
    def _named_user_model(cls, value: Any) -> Any:
        return _named(value)


def _warehouse(named: str | None, base: Path, fail: _Locator) -> Root | None:
    """The spec's ``warehouse:`` (a folder relative to the spec, or an S3 location)."""
    if named is None:
        return None
    try:
        found = parse_location(named)
    except LocationError as exc:
        fail(("warehouse",), str(exc))
        return None
    return (base / found).resolve() if isinstance(found, Path) else found


def _resolve_agent(entry: str, base: Path, fail: _Locator, index: int) -> str | None:
    """An agent of the spec as the sweep names it (a file made absolute), found and imported
    now, so a mistake is named at its line."""
    from pipeline.trial.external.refs import AgentRefError, resolve

    try:
        ref = resolve(entry, base)
    except AgentRefError as exc:
        fail(("agents", index), str(exc))
        return None
    return f"{ref.path}:{entry.rpartition(':')[2]}" if ref.path else entry


def _named(value: Any) -> Any:
    """``reference/golden`` -> ``{name: reference/golden}``; anything else as it is."""
    return {"name": value} if isinstance(value, str) else value


def read_spec(path: Path) -> tuple[SweepSpec, dict[Location, int]]:
    """Parse and validate a spec file; also returns the line of every key."""
    data, lines = read_yaml_mapping(path, "a sweep spec")
    return validate_located(SweepSpec, data, path, lines), lines


def load_spec(path: Path, warehouse: Root, overrides: Mapping[str, Any] | None = None
              ) -> SweepConfig:
    """The ``SweepConfig`` a spec file describes; ``overrides`` (run_id, resume, ray_address,
    repeats, max_cost_usd: explicit command-line values) win over the file. A mistake of the
    file is a ``CatalogError`` naming its line; of an override, ``BadInput`` naming the
    option."""
    unknown = sorted(set(overrides or {}) - OVERRIDABLE)
    if unknown:
        raise ValueError(f"not overridable: {', '.join(unknown)}")
    spec, lines = read_spec(path)
    fail = _Locator(str(path), lines)
    catalogs = [c for i, entry in enumerate(spec.catalogs)
                if (c := _resolve_catalog(entry, path.parent, fail, i)) is not None]
    set_extra_roots(catalogs)
    suites = [p for i, entry in enumerate(spec.suites)
              if (p := _resolve_suite(entry, path.parent, fail, i)) is not None]
    agents = [a for i, entry in enumerate(spec.agents or [])
              if (a := _resolve_agent(entry, path.parent, fail, i)) is not None]
    for key, values in (("suites", suites), ("prompts", spec.prompts or []), ("agents", agents),
                        ("memory_modes", spec.memory_modes or []),
                        ("models", [m.name for m in spec.models])):
        _refuse_duplicates(key, values, fail)
    _check_models(spec.models, fail)
    if not fail.errors:
        _check_spend_caps(spec, fail)
    if len(suites) == len(spec.suites):  # a missing suite's scenarios cannot be known
        _check_scenarios(spec.scenarios, suites, fail)
    repeats = _repeats(spec, fail)
    if spec.in_flight_per_node is not None and "max_in_flight" in spec.model_fields_set:
        fail(("in_flight_per_node",), "in_flight_per_node replaces max_in_flight: give one of "
             "them")
    warehouse = _warehouse(spec.warehouse, path.parent, fail) or warehouse
    raise_all(fail.errors)
    args: dict[str, Any] = {
        "catalogs": catalogs,
        "suites": suites,
        "scenarios": list(spec.scenarios),
        "models": [_with_default_timeout(m, spec.timeout_s) for m in spec.models],
        "repeats": repeats,
        "step_limit": spec.step_limit,
        "tools": spec.tools,
        "user_model": spec.user_model,
        "user_max_turns": spec.user_max_turns,
        "thresholds": spec.thresholds,
        "max_cost_usd": spec.max_cost_usd,
        "unknown_cost": spec.unknown_cost,
        "retry": spec.retry,
        "batch_size": spec.batch_size,
        "flush_interval_s": spec.flush_interval_s,
        "max_in_flight": spec.max_in_flight,
        "in_flight_per_node": spec.in_flight_per_node,
        "trials_as": spec.trials_as,
        "trial_timeout_s": spec.trial_timeout_s,
        "ray_address": spec.ray_address,
        "warehouse": warehouse,
    }
    for key in ("run_id", "prompts", "memory_modes"):
        if getattr(spec, key) is not None:
            args[key] = getattr(spec, key)
    if agents:
        args["agents"] = agents
    args.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return SweepConfig(**args)
    except ValidationError as exc:  # only an override can get here: the file was validated
        raise BadInput(option_error(exc)) from None


class _Locator:
    """Records a CatalogError for a location in the spec, with the line of its key: every
    mistake is collected, then raised together (``raise_all``)."""

    def __init__(self, path: str, lines: Mapping[Location, int]) -> None:
        self.path = path
        self.lines = lines
        self.errors: list[CatalogError] = []

    def __call__(self, loc: Location, message: str) -> None:
        self.errors.append(CatalogError(self.path, line_of(loc, self.lines),
                                        format_location(list(loc)), message))


def _repeats(spec: SweepSpec, fail: _Locator) -> int:
    """``runs_per_case`` or ``repeats`` (the same setting under two names)."""
    if spec.runs_per_case is None:
        return spec.repeats
    if "repeats" in spec.model_fields_set:
        fail(("runs_per_case",), "runs_per_case is another name for repeats: give one of them")
    return spec.runs_per_case


def _resolve_suite(entry: str, base: Path, fail: _Locator, index: int) -> Path | None:
    """A suite file (``.jsonl`` or a path, relative to the spec's folder) or a bundled id;
    None (a mistake recorded) when it names none."""
    if entry.endswith(".jsonl") or "/" in entry:
        path = Path(entry).expanduser()
        path = (path if path.is_absolute() else base / path).resolve()
        if not path.is_file():
            fail(("suites", index), f"no such suite file: {path}")
            return None
        return path
    known = known_suites()
    if entry not in known:
        hint = did_you_mean(entry, known)
        fail(("suites", index), f"unknown bundled suite {entry!r}{hint}"
             + ("" if hint else f"; known: {', '.join(sorted(known))}")
             + " (a file needs the .jsonl suffix)")
        return None
    return known[entry]


def _resolve_catalog(entry: str, base: Path, fail: _Locator, index: int) -> Path | None:
    path = Path(entry).expanduser()
    path = (path if path.is_absolute() else base / path).resolve()
    if not path.is_dir():
        fail(("catalogs", index), f"no such catalog folder: {path}")
        return None
    return path


def _refuse_duplicates(key: str, values: Sequence[object], fail: _Locator) -> None:
    seen: dict[object, int] = {}
    for index, value in enumerate(values):
        if value in seen:
            loc: Location = (key, index, "name") if key == "models" else (key, index)
            fail(loc, f"{value!s} is listed twice (first as item {seen[value]})")
            continue
        seen[value] = index


def _with_default_timeout(model: ModelConfig, timeout_s: float | None) -> ModelConfig:
    """The model with the spec's default call time limit unless it has its own."""
    if model.timeout_s is not None or timeout_s is None:
        return model
    return model.model_copy(update={"timeout_s": timeout_s})


GROUP_LIMITS = ("concurrency", "rpm", "tpm")
"""Limits of a whole provider group, given on any of its models: its models must agree."""


def _check_models(models: Sequence[ModelConfig], fail: _Locator) -> None:
    """Provider groups agree on their limits; every model name resolves to a route."""
    limits: dict[tuple[str, str], tuple[int, int]] = {}
    for index, model in enumerate(models):
        for key in GROUP_LIMITS:
            value = getattr(model, key)
            if value is None:
                continue
            previous = limits.setdefault((model.provider, key), (value, index))
            if previous[0] != value:
                fail(("models", index, key),
                     f"provider group {model.provider!r} already has {key} "
                     f"{previous[0]} (models.{previous[1]})")
        try:
            model.resolved()
        except ValueError as exc:
            fail(("models", index, "name"), str(exc))


def _check_spend_caps(spec: SweepSpec, fail: _Locator) -> None:
    """A cap counts every model it covers: one of unknown cost is refused, unless
    ``unknown_cost: allow`` (checked only with a cap: LiteLLM's price table is imported)."""
    if spec.unknown_cost == "allow":
        return
    from pipeline.sweep.spend_cap import unpriced

    named: list[tuple[str, int | None, ModelConfig]] = [
        ("models", i, m) for i, m in enumerate(spec.models)]
    if spec.user_model is not None:
        named.append(("user_model", None, spec.user_model))
    for key, index, model in named:
        if spec.max_cost_usd is None and model.max_cost_usd is None:
            continue
        if unpriced([model]):
            cap = "max_cost_usd" if model.max_cost_usd is None else f"{model.name}'s max_cost_usd"
            loc: Location = (key, "name") if index is None else (key, index, "name")
            fail(loc, f"the cost of {model.name} is unknown (LiteLLM's price table has no "
                 f"price for it), so {cap} cannot count it; set unknown_cost: allow to run it "
                 "uncounted, or leave the cap out")


def _check_scenarios(ids: Sequence[str], suites: Sequence[Path], fail: _Locator) -> None:
    """Every id in ``scenarios`` names a scenario of the spec's suites."""
    if not ids:
        return
    from pipeline.catalog import load_suites

    known = {loaded.scenario.id for suite in load_suites(list(suites) or bundled_suites())
             for loaded in suite.scenarios}
    for index, scenario_id in enumerate(ids):
        if scenario_id not in known:
            hint = did_you_mean(scenario_id, known)
            fail(("scenarios", index), f"no scenario {scenario_id!r} in the suites{hint}"
                 + ("" if hint else f" (known: {', '.join(sorted(known))})"))


