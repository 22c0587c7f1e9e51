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

from flows.sweep import sweep_flow  # noqa: E402
from pipeline.catalog import CatalogError  # noqa: E402
from pipeline.decide.decision import DecideOptions, make_decision
from pipeline.sweep.config import SweepConfig
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


@task(name="load-swap-spec", cache_policy=NO_CACHE)
def load_swap_task(spec_path: str) -> tuple[SweepConfig, SweepConfig]:
    config = load_spec(Path(spec_path), hygiene.warehouse_root())
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
               review: str | None = None) -> SwapOutcome:
    """Model A and model B on one paired grid, then the decision."""
    config_a, config_b = load_swap_task(spec_path)
    sweep_a = sweep_flow(config_a)
    sweep_b = sweep_flow(config_b)
    decision, record = decide_task(config_a, config_a.run_id, config_b.run_id,
                                   gate_config, review)
    return SwapOutcome(config_a.run_id, config_b.run_id, (sweep_a, sweep_b), decision, record)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m flows.model_swap", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", required=True, help="sweep spec (YAML) naming two models")
    parser.add_argument("--gate", help="gate config (YAML)")
    parser.add_argument("--review", help="review file (YAML) for expectation changes")
    args = parser.parse_args(argv)
    hygiene.apply()
    from pipeline.runtime.prefect_state import mark_good
    from reports.paired import ComparisonInputError

    hygiene.prepare_prefect_home()
    try:
        outcome = model_swap(args.spec, args.gate, args.review)
    except (CatalogError, SwapSpecError, ComparisonInputError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
    mark_good(hygiene.prefect_home())
    gate = outcome.decision["gate"]
    assert isinstance(gate, dict)
    print(f"model swap {outcome.baseline} -> {outcome.candidate}: {gate['verdict']}")
    for reason in gate["reasons"]:
        print(f"  - {reason}")
    print(f"decision record: {outcome.record} (and the comparisons table)")
    raise SystemExit(outcome.exit_code)


if __name__ == "__main__":
    main()
