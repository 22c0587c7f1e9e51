"""The model-swap study: what breaks if we move from model A to model B?

    python -m flows.model_swap --spec swap.yaml [--gate gate.yaml] [--review review.yaml]

``swap.yaml`` is a sweep spec whose ``models`` list holds exactly two models: A (today's, the
baseline) then B (the candidate). The flow runs the one grid twice, once per model, so that
every trial of B has the identity of a trial of A except the model (same scenarios and hashes,
prompts, memory modes, repeats and seeds: paired), as runs ``<run_id>-a`` and ``<run_id>-b``
(``run_id`` from the spec, else ``swap-<time>-<hex>``); then compares them (transitions, pass^k,
usage deltas, paired bootstrap) and applies the gate (``agentsweep gate`` semantics). The
decision record lands in the warehouse's ``comparisons`` table and as JSON in
``AGENTSWEEP_HOME/reports/<run_id>-b-vs-<run_id>-a.decision.json``. Exit code: the gate's (0
admit, 1 block, 3 incomplete), 2 for bad input.

Both sweeps are prepared before Prefect starts, as ``agentsweep run`` prepares one
(pipeline.sweep.prepare): a missing key or any other mistake is refused in one line (exit 2)
with nothing written; with ``agentsweep up`` running, the flow runs on its stack. The last lines
are the gate's verdict and its reasons.
"""

from __future__ import annotations

import argparse
import json
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from pipeline.runtime import hygiene

if __name__ == "__main__":
    hygiene.apply()  # as a program: before Prefect reads its settings (once, at import)

from prefect import flow, task  # noqa: E402
from prefect.cache_policies import NO_CACHE  # noqa: E402

from flows.sweep import run_sweep  # noqa: E402
from pipeline.catalog import CatalogError  # noqa: E402
from pipeline.decide.decision import DecideOptions, make_decision
from pipeline.errors import ExitCode  # noqa: E402
from pipeline.runtime.bounded_exit import exit_within  # noqa: E402
from pipeline.sweep.config import SweepConfig
from pipeline.sweep.preflight import BadInput  # noqa: E402
from pipeline.sweep.prepare import prepared_for  # noqa: E402
from pipeline.sweep.spec import load_spec  # noqa: E402
from pipeline.sweep.stages import SweepOutcome
from reports.decision import decision_json, store_decision  # noqa: E402
from warehouse.atomic import write_text  # noqa: E402


class SwapSpecError(ValueError):
    """The spec does not describe a swap (it must name exactly two models)."""


@dataclass(frozen=True)
class SwapOutcome:
    baseline: str
    candidate: str
    sweeps: tuple[SweepOutcome, SweepOutcome]
    decision: dict[str, object]
    """The decision record as JSON-able data (``reports.decision.decision_json``)."""
    record: Path

    @property
    def exit_code(self) -> int:
        gate = self.decision["gate"]
        assert isinstance(gate, dict)
        return int(gate["exit_code"])


def swap_run_id() -> str:
    return f"swap-{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def split_models(config: SweepConfig, run_id: str) -> tuple[SweepConfig, SweepConfig]:
    """The one grid under model A and under model B: everything but the model is shared."""
    if len(config.models) != 2:
        raise SwapSpecError(f"a model swap spec names exactly two models (A, then B), got "
                            f"{len(config.models)}: {', '.join(config.model_names())}")
    model_a, model_b = config.models
    return (config.model_copy(update={"models": [model_a], "run_id": f"{run_id}-a"}),
            config.model_copy(update={"models": [model_b], "run_id": f"{run_id}-b"}))


def swap_configs(spec_path: str, run_id: str | None = None) -> tuple[SweepConfig, SweepConfig]:
    """The spec's grid under model A and model B, as runs ``<run_id>-a`` and ``<run_id>-b``."""
    config = load_spec(Path(spec_path), hygiene.warehouse_root())
    if run_id is None:
        run_id = config.run_id if "run_id" in config.model_fields_set else swap_run_id()
    return split_models(config, run_id)


@task(name="decide", cache_policy=NO_CACHE)
def decide_task(config: SweepConfig, baseline: str, candidate: str, gate_config: str | None,
                review: str | None) -> tuple[dict[str, object], Path]:
    """Compare + bootstrap + gate; the decision record stored and written as JSON."""
    warehouse = config.warehouse
    options = DecideOptions(baseline, candidate, Path(gate_config) if gate_config else None,
                            Path(review) if review else None, catalogs=tuple(config.catalogs))
    decision = make_decision(warehouse, options)
    store_decision(warehouse, decision)
    data = decision_json(decision)
    record = hygiene.agentsweep_home() / "reports" / f"{candidate}-vs-{baseline}.decision.json"
    write_text(record, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return data, record


@flow(name="agentsweep-model-swap", log_prints=False, validate_parameters=False)
def model_swap(spec_path: str, gate_config: str | None = None,
               review: str | None = None, run_id: str | None = None) -> SwapOutcome:
    """Model A and model B on one paired grid, then the decision."""
    prepared_a, prepared_b = (prepared_for(c) for c in swap_configs(spec_path, run_id))
    config_a, config_b = prepared_a.config, prepared_b.config
    sweep_a = run_sweep(prepared_a, "model-swap")
    sweep_b = run_sweep(prepared_b, "model-swap")
    decision, record = decide_task(config_a, config_a.run_id, config_b.run_id,
                                   gate_config, review)
    return SwapOutcome(config_a.run_id, config_b.run_id, (sweep_a, sweep_b), decision, record)


def run_once(spec: str, gate: str | None, review: str | None, run_id: str | None) -> int:
    """Prepare both sweeps (a mistake: one line, exit 2, before Prefect starts), run the flow,
    print the gate's verdict and reasons last; the exit code."""
    from pipeline.execution.runlock import RunLocked
    from pipeline.runtime.prefect_state import mark_good
    from pipeline.runtime.probe import prefect_lost_line
    from reports.paired import ComparisonInputError

    try:
        configs = swap_configs(spec, run_id)
        prepared = [prepared_for(config, say=print) for config in configs]
    except (BadInput, CatalogError, SwapSpecError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    name = configs[0].run_id.removesuffix("-a")
    print(f"model swap {name}: {configs[0].model_names()[0]} -> {configs[1].model_names()[0]} "
          f"on {prepared[0].where}", flush=True)
    try:
        outcome = model_swap.with_options(flow_run_name=f"model swap {name}")(
            spec, gate, review, name)
    except (CatalogError, ComparisonInputError, RunLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.BAD_INPUT
    except Exception as exc:
        lost = prefect_lost_line(exc, f"model swap {name}", "the same command with "
                                 f"--run-id {name} (finished trials are kept)")
        if lost is None:
            raise
        print(lost, file=sys.stderr)
        return ExitCode.INCOMPLETE
    mark_good(hygiene.prefect_home())
    gate_record = outcome.decision["gate"]
    assert isinstance(gate_record, dict)
    print(f"decision record: {outcome.record} (and the comparisons table)")
    print(f"model swap {outcome.baseline} -> {outcome.candidate}: {gate_record['verdict']} "
          f"(exit {outcome.exit_code})")
    for reason in gate_record["reasons"]:
        print(f"  - {reason}")
    return outcome.exit_code


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flows.model_swap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", required=True, help="sweep spec (YAML) naming two models")
    parser.add_argument("--gate", help="gate config (YAML)")
    parser.add_argument("--review", help="review file (YAML) for expectation changes")
    parser.add_argument("--run-id", help="the study's id (runs <id>-a and <id>-b)")
    args = parser.parse_args(argv)
    hygiene.apply()
    code = run_once(args.spec, args.gate, args.review, args.run_id)
    exit_within(code)  # its verdict is said: Prefect's exit work may not hold the process
    raise SystemExit(code)


if __name__ == "__main__":
    main()
