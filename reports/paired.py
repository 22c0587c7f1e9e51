"""Pair two runs' trials: (scenario id, prompt, memory mode, repeat index), and the model too
when both runs hold the same models (a model swap pairs model A's trial with model B's).

An agent swap is the same kind of study: when an external agent ran on either side, the agent
joins the model in what is compared (``my_agent.py:make · reference/golden``), and when the
agents differ, one memory mode of each side is paired (the built-in agent's ``chat`` with an
external agent's ``own``: the column reads ``chat→own``).

The rows come from ``warehouse/sql/paired_trials.sql`` as polars frames; a pair counts in a
rate only when both of its trials have a final outcome (``incomplete`` is infrastructure, never
a failure of the agent).
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from warehouse.frames import frame_named
from warehouse.location import Root
from warehouse.query import unknown_run

CELL = ("scenario_id", "prompt_id", "memory_mode")
SUFFIX = "_cand"


class ComparisonInputError(ValueError):
    """The two runs cannot be compared (a missing run, nothing shared, mixed model sets)."""


@dataclass(frozen=True, eq=False)
class PairedRuns:
    baseline: str
    candidate: str
    base: pl.DataFrame
    """Every final trial row of the baseline run (paired_trials.sql columns)."""
    cand: pl.DataFrame
    pairs: pl.DataFrame
    """One row per pair: the baseline's columns, the candidate's with the suffix ``_cand``."""
    by_model: bool
    """Whether the model is part of the pairing key (both runs hold the same models)."""

    @property
    def cell_key(self) -> list[str]:
        return [*CELL, "model"] if self.by_model else list(CELL)

    def final_pairs(self) -> pl.DataFrame:
        """Pairs whose two trials both have a final outcome."""
        return self.pairs.filter((pl.col("status") != "incomplete")
                                 & (pl.col(f"status{SUFFIX}") != "incomplete"))


def _check_run(root: Root, run_id: str) -> None:
    problem = unknown_run(root, run_id)
    if problem is not None:
        raise ComparisonInputError(problem)


def pair_runs(root: Root, baseline: str, candidate: str) -> PairedRuns:
    """Both runs' trials and their pairs; ComparisonInputError when they cannot be paired."""
    for run_id in (baseline, candidate):
        _check_run(root, run_id)
    if baseline == candidate:
        raise ComparisonInputError(f"baseline and candidate are the same run {baseline!r}")
    rows = frame_named(root, "paired_trials", {"baseline": baseline, "candidate": candidate})
    base = rows.filter(pl.col("run_id") == baseline)
    cand = rows.filter(pl.col("run_id") == candidate)
    for run_id, frame in ((baseline, base), (candidate, cand)):
        if frame.is_empty():
            raise ComparisonInputError(f"run {run_id!r} has no trials to compare")
    base, cand = _agents_compared(base, cand)
    return PairedRuns(baseline, candidate, base, cand, *_join(base, cand))


BUILTIN_AGENT = "builtin"
FILE_AGENT = r"^.*[/\\]([^/\\]+\.py:[A-Za-z_][A-Za-z0-9_]*)$"
"""A file agent's name: its folder is left out of the label."""


def _agents_compared(base: pl.DataFrame, cand: pl.DataFrame
                     ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Both sides with the agent in the model's label when an external agent ran, and one
    memory mode each paired when the agents differ."""
    agents = {*base["agent"].to_list(), *cand["agent"].to_list()}
    if agents <= {BUILTIN_AGENT}:
        return base, cand
    label = (pl.when(pl.col("agent") == BUILTIN_AGENT).then(pl.col("model"))
             .otherwise(pl.col("agent").str.replace(FILE_AGENT, "$1") + " · " + pl.col("model")))
    base, cand = (f.with_columns(label.alias("model")) for f in (base, cand))
    if set(base["agent"].to_list()) == set(cand["agent"].to_list()):
        return base, cand
    modes = []
    for frame in (base, cand):
        held = sorted(set(frame["memory_mode"].to_list()))
        if len(held) > 1:
            raise ComparisonInputError(
                f"an agent swap pairs one memory mode of each side: run "
                f"{frame['run_id'][0]!r} holds {', '.join(held)} (run it with one "
                "--memory-mode)")
        modes.append(held[0])
    paired = modes[0] if modes[0] == modes[1] else f"{modes[0]}→{modes[1]}"
    return base.with_columns(pl.lit(paired).alias("memory_mode")), cand.with_columns(
        pl.lit(paired).alias("memory_mode"))


def _refuse_ambiguous_keys(frame: pl.DataFrame, key: list[str]) -> None:
    """Two trials of one run on one pairing key (two grids of the same model with different
    parameters, or one scenario id in two suites) cannot be paired with anything."""
    repeated = frame.group_by(key).len().filter(pl.col("len") > 1)
    if not repeated.is_empty():
        first = repeated.row(0, named=True)
        raise ComparisonInputError(
            f"run {frame['run_id'][0]!r} has {first['len']} trials on one pairing key "
            f"({', '.join(f'{k}={first[k]}' for k in key)}): compare runs of one grid per model")


def only_in(paired: PairedRuns) -> tuple[list[str], list[str]]:
    """Scenario ids only the baseline ran, and only the candidate ran."""
    base = set(paired.base["scenario_id"].to_list())
    cand = set(paired.cand["scenario_id"].to_list())
    return sorted(base - cand), sorted(cand - base)


def _join(base: pl.DataFrame, cand: pl.DataFrame) -> tuple[pl.DataFrame, bool]:
    base_models = set(base["model"].to_list())
    cand_models = set(cand["model"].to_list())
    by_model = base_models == cand_models
    if not by_model and not (len(base_models) == 1 and len(cand_models) == 1):
        raise ComparisonInputError(
            f"the runs hold different model sets ({sorted(base_models)} vs "
            f"{sorted(cand_models)}): compare runs of the same models, or one model each "
            "(a model swap)")
    key = [*CELL, "repeat", *(["model"] if by_model else [])]
    for frame in (base, cand):
        _refuse_ambiguous_keys(frame, key)
    pairs = base.join(cand, on=key, how="inner", suffix=SUFFIX)
    if pairs.is_empty():
        shared = set(base["scenario_id"].to_list()) & set(cand["scenario_id"].to_list())
        what = ("no shared scenarios" if not shared else
                "no trial shares its scenario, prompt, memory mode and repeat index")
        raise ComparisonInputError(f"nothing to compare: {what} between the runs")
    if by_model:  # the model is in the key: the candidate's is the same
        pairs = pairs.with_columns(pl.col("model").alias(f"model{SUFFIX}"))
    return pairs, by_model
