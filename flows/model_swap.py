"""The model-swap study: what breaks if we move from model A to model B?

    python -m flows.model_swap --spec swap.yaml [--gate gate.yaml] [--review review.yaml]

``swap.yaml`` is a sweep spec whose ``models`` list holds exactly two models: A (today's, the
baseline) then B (the candidate). The flow runs the one grid twice, once per model, so that
every trial of B has the identity of a trial of A except the model (same scenarios and hashes,
prompts, memory modes, repeats and seeds: paired), as runs ``<study>-a`` and ``<study>-b``; the
study is ``--run-id`` when given (``--resume`` continues it), else a fresh
``<spec's run_id, or swap>-<time>-<hex>`` per invocation. Then it compares them (transitions,
pass^k, usage deltas, paired bootstrap) and applies the gate (``agentsweep gate`` semantics;
without ``--gate`` the default gate). That one decision is everywhere: the ``comparisons``
table (the viewer), ``AGENTSWEEP_HOME/reports/<study>-b-vs-<study>-a.{decision.json,junit.xml,
html}``, the last printed line and the flow run's state in Prefect (Completed; Failed with the
verdict and its reasons; Cancelled when interrupted). Exit code: the gate's (0 admit, 1 block,
3 incomplete), 2 for bad input.

Both sweeps are prepared before Prefect starts, as ``agentsweep run`` prepares one
(pipeline.sweep.prepare): a missing key or any other mistake is refused in one line (exit 2)
with nothing written; with ``agentsweep up`` running, the flow runs on its stack. The last lines
are the gate's verdict and its reasons.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pipeline.runtime import hygiene

if __name__ == "__main__":
    hygiene.apply()  # as a program: before Prefect reads its settings (once, at import)

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402
from prefect.client.schemas.objects import State  # noqa: E402

from flows.programs import quiet_flow_logs  # noqa: E402
from flows.sweep import run_sweep, tags_of  # noqa: E402
from pipeline.catalog import CatalogError  # noqa: E402
from pipeline.decide.decision import DecideOptions, make_decision  # noqa: E402
from pipeline.decide.files import check_decision_files  # noqa: E402
from pipeline.decide.published import PublishedDecision, publish  # noqa: E402
from pipeline.errors import ExitCode  # noqa: E402
from pipeline.runtime.bounded_exit import exit_within  # noqa: E402
from pipeline.runtime.flow_runs import (  # noqa: E402
    interrupted_state,
    name_this_flow_run,
    outcome_of,
    verdict_state,
)
from pipeline.sweep.config import SweepConfig  # noqa: E402
from pipeline.sweep.handoff import Handed  # noqa: E402
from pipeline.sweep.preflight import BadInput  # noqa: E402
from pipeline.sweep.prepare import PreparedSweep, prepare, prepared_for  # noqa: E402
from pipeline.sweep.spec import load_spec  # noqa: E402
from pipeline.sweep.stages import SweepOutcome  # noqa: E402
from reports import Decision  # noqa: E402
from reports.decision import verdict_line  # noqa: E402
from warehouse.writer import RunId, WarehouseError, validate_run_id  # noqa: E402


class SwapSpecError(ValueError):
    """The spec does not describe a swap (it must name exactly two models)."""


@dataclass(frozen=True)
class SwapOutcome:
    baseline: str
    candidate: str
    sweeps: tuple[SweepOutcome, SweepOutcome]
    published: PublishedDecision
    """The decision (``agentsweep gate`` semantics) with its record, JUnit and HTML."""

    @property
    def decision(self) -> Decision:
        return self.published.decision

    @property
    def exit_code(self) -> int:
        return self.decision.gate.exit_code


def swap_run_id(prefix: str = "swap") -> str:
    return f"{prefix}-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def split_models(config: SweepConfig, run_id: str) -> tuple[SweepConfig, SweepConfig]:
    """The one grid under model A and under model B: everything but the model is shared."""
    if len(config.models) != 2:
        raise SwapSpecError(f"a model swap spec names exactly two models (A, then B), got "
                            f"{len(config.models)}: {', '.join(config.model_names())}")
    try:  # the study's runs are named here: their ids enter here
        run_a, run_b = (validate_run_id(f"{run_id}-{side}") for side in "ab")
    except WarehouseError as exc:
        raise SwapSpecError(f"--run-id: {exc}") from None
    model_a, model_b = config.models
    return (config.model_copy(update={"models": [model_a], "run_id": run_a}),
            config.model_copy(update={"models": [model_b], "run_id": run_b}))


def swap_configs(spec_path: str, run_id: str | None = None,
                 resume: bool = False) -> tuple[SweepConfig, SweepConfig]:
    """The spec's grid under model A and model B, as runs ``<study>-a`` and ``<study>-b``: the
    study is ``run_id`` when given, else a fresh ``<spec's run_id or swap>-<time>-<hex>`` (each
    invocation its own study); ``resume`` continues the study ``run_id``."""
    if resume and run_id is None:
        raise SwapSpecError("--resume continues a study: name it with --run-id")
    config = load_spec(Path(spec_path), hygiene.warehouse_root())
    if run_id is None:
        run_id = swap_run_id(config.run_id if "run_id" in config.model_fields_set else "swap")
    if resume:
        config = config.model_copy(update={"resume": True})
    return split_models(config, run_id)


@task(name="decide", cache_policy=NO_CACHE)
def decide_task(config: SweepConfig, baseline: RunId, candidate: RunId, gate_config: str | None,
                review: str | None) -> PublishedDecision:
    """Compare + bootstrap + gate; the decision published (record, JSON, JUnit, HTML)."""
    options = DecideOptions(baseline, candidate, Path(gate_config) if gate_config else None,
                            Path(review) if review else None, catalogs=tuple(config.catalogs))
    decision = make_decision(config.warehouse, options)
    return publish(config.warehouse, decision, hygiene.agentsweep_home() / "reports")


@flow(name="agentsweep-model-swap", log_prints=False, validate_parameters=False)
def model_swap(spec_path: str, gate_config: str | None = None, review: str | None = None,
               run_id: str | None = None, resume: bool = False,
               prepared: tuple[Handed[PreparedSweep], ...] = ()) -> Any:
    """Model A and model B on one paired grid, then the decision. The flow run's final state is
    the verdict (Completed; Failed with the verdict and its reasons; Cancelled when
    interrupted); its last printed line is the verdict. The program hands both sweeps'
    preparations (``prepared``); a deployment's run prepares here."""
    configs = swap_configs(spec_path, run_id, resume)
    study = configs[0].run_id.removesuffix("-a")
    name_this_flow_run(f"model swap {study}",
                       sorted({*tags_of(configs[0], "model-swap"),
                               *tags_of(configs[1], "model-swap")}))
    prepared_a, prepared_b = (prepared_for(c, prepared) for c in configs)
    config_a, config_b = prepared_a.config, prepared_b.config
    try:
        sweep_a = run_sweep(prepared_a, "model-swap")
        sweep_b = run_sweep(prepared_b, "model-swap")
    except KeyboardInterrupt:
        return interrupted_state(f"model swap {study}: what finished is saved; continue with "
                                 f"--run-id {study} --resume")
    published = decide_task(config_a, config_a.run_id, config_b.run_id, gate_config, review)
    outcome = SwapOutcome(config_a.run_id, config_b.run_id, (sweep_a, sweep_b), published)
    lines = verdict_lines(outcome)
    for line in lines:
        print(line, flush=True)  # the program's terminal, and a served deployment's log
    return verdict_state(ExitCode(outcome.exit_code), lines[-1],
                         outcome.decision.gate.reasons, outcome)


def verdict_lines(outcome: SwapOutcome) -> list[str]:
    """What the study wrote, the decision's reasons, and last the verdict line."""
    published = outcome.published
    return [f"model swap {outcome.baseline} -> {outcome.candidate}: decision record "
            f"{published.record} (and the comparisons table); JUnit: {published.junit}; HTML "
            f"report: {published.html}",
            *(f"  - {reason}" for reason in outcome.decision.gate.reasons),
            verdict_line(outcome.decision)]


def run_once(spec: str, gate: str | None, review: str | None, run_id: str | None,
             resume: bool = False) -> int:
    """Prepare both sweeps (a mistake: one line, exit 2, before Prefect starts), run the flow
    (it prints the verdict and its reasons last); the exit code."""
    from pipeline.execution.runlock import RunLocked
    from pipeline.runtime.prefect_state import mark_good
    from pipeline.runtime.probe import prefect_lost_line
    from pipeline.runtime.startup import start_failure_line
    from reports.paired import ComparisonInputError

    try:
        configs = swap_configs(spec, run_id, resume)
        prepared = [prepare(config, say=print) for config in configs]
        check_decision_files(gate, review)
    except (BadInput, CatalogError, SwapSpecError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    name = configs[0].run_id.removesuffix("-a")
    print(f"model swap {name}: {configs[0].model_names()[0]} -> {configs[1].model_names()[0]} "
          f"on {prepared[0].where}", flush=True)
    quiet_flow_logs()
    try:
        state = model_swap.with_options(flow_run_name=f"model swap {name}")(
            spec, gate, review, name, resume,
            tuple(Handed.of(c, p) for c, p in zip(configs, prepared, strict=True)),
            return_state=True)
        outcome = cast(SwapOutcome, outcome_of(cast("State[Any]", state)))
    except KeyboardInterrupt:
        print(f"interrupted (exit {ExitCode.INTERRUPTED}): what finished is saved; continue "
              f"with the same command and --run-id {name} --resume", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except (CatalogError, ComparisonInputError, RunLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as exc:
        again = f"the same command with --run-id {name} --resume"
        lost = start_failure_line(exc, again, "finished trials are kept") or prefect_lost_line(
            exc, f"model swap {name}", f"{again} (finished trials are kept)")
        if lost is None:
            raise
        print(lost, file=sys.stderr)
        return ExitCode.INCOMPLETE
    mark_good(hygiene.prefect_home())
    return outcome.exit_code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flows.model_swap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", required=True, help="sweep spec (YAML) naming two models")
    parser.add_argument("--gate", help="gate config (YAML)")
    parser.add_argument("--review", help="review file (YAML) for expectation changes")
    parser.add_argument("--run-id", help="the study's id (runs <id>-a and <id>-b); default: a "
                        "fresh one per invocation")
    parser.add_argument("--resume", action="store_true",
                        help="continue the study --run-id (its finished trials are kept)")
    args = parser.parse_args(argv)
    hygiene.apply()
    code = run_once(args.spec, args.gate, args.review, args.run_id, args.resume)
    exit_within(code)  # its verdict is said: Prefect's exit work may not hold the process
    raise SystemExit(code)


if __name__ == "__main__":
    main()
