"""``agentsweep judge``: judge a stored run, export its judgments, calibrate against people."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any, get_args

import typer

from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.run_ids import known_runs
from pipeline.cli.tables import make_console, print_rows, print_table
from pipeline.errors import ExitCode
from pipeline.runtime import hygiene
from warehouse.location import Root

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="The LLM judge: a separate, repeated, calibrated signal (never "
                  "trials.passed).")
console = make_console()
err_console = make_console(stderr=True)


def _fail(message: str) -> None:
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


@app.command(name="run")
def judge_run_command(
    run_id: Annotated[str, typer.Option("--run-id", help="The stored run to judge.")],
    model: Annotated[str, typer.Option("--model", help="The judge model (e.g. local/default, "
                                       "reference/judge-seed, openai/gpt-4o-mini).")],
    rubric: Annotated[Path | None, typer.Option(
        "--rubric", help="Rubric file. Default: each trial's domain's "
        "rubrics/explanation.md.")] = None,
    repeats: Annotated[int, typer.Option(min=1, help="Judgments per trial.")] = 3,
    evidence: Annotated[list[str] | None, typer.Option(
        "--evidence", help="What the judge sees, repeatable, in order: request, "
        "expected_outcome, before, after, tool_calls, answer. Default: the rubric's.")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", help="Only these scenarios; repeatable.")] = None,
    concurrency: Annotated[int, typer.Option(min=1, help="Judge calls in flight at once.")] = 1,
    temperature: Annotated[float, typer.Option(help="The judge's temperature.")] = 0.0,
    max_tokens: Annotated[int | None, typer.Option(
        "--max-tokens", min=1, help="Cap on the judge's reply tokens (default: the route's; "
        "local models 768).")] = None,
    api_base: Annotated[str | None, typer.Option(
        "--api-base", help="OpenAI-compatible endpoint of the judge.")] = None,
    timeout_s: Annotated[float | None, typer.Option(
        "--timeout-s", help="Time limit of one judge call.")] = None,
    max_attempts: Annotated[int, typer.Option(
        min=1, help="Attempts per judge call (infrastructure failures retried).")] = 4,
) -> None:
    """Judge every complete trial of a stored run, each `--repeats` times; write the
    judgments (one batch) and print both signals side by side."""
    from pipeline.catalog import CatalogError
    from pipeline.errors import ConfigError, InfraError
    from pipeline.execution.retry import RetryPolicy
    from pipeline.execution.services import NodeServiceError
    from pipeline.judge.endpoint import judge_endpoint
    from pipeline.judge.evidence import EVIDENCE_FIELDS, EvidenceField
    from pipeline.judge.rubric import load_rubric
    from pipeline.judge.run import JudgeOptions, judge_run
    from pipeline.models.config import ModelConfig

    known_runs(("--run-id", run_id))
    fields: list[EvidenceField] = []
    for name in evidence or []:
        if name not in EVIDENCE_FIELDS:
            _fail(f"--evidence {name!r}: one of {', '.join(EVIDENCE_FIELDS)}")
        fields.append(name)  # type: ignore[arg-type]  # checked just above
    root = hygiene.warehouse_root()
    try:
        loaded = load_rubric(rubric) if rubric is not None else None
        params = {"max_tokens": max_tokens} if max_tokens is not None else {}
        judge = ModelConfig(model, temperature=temperature, params=params, api_base=api_base,
                            timeout_s=timeout_s, concurrency=concurrency).resolved()
        with judge_endpoint(judge, concurrency, lambda t: console.print(t, markup=False)) as cp:
            options = JudgeOptions(judge, loaded, tuple(fields) or None, repeats, concurrency,
                                   RetryPolicy(max_attempts=max_attempts), cp,
                                   tuple(scenario or ()))
            outcome = judge_run(root, run_id, options, lambda t: console.print(t, markup=False))
    except (CatalogError, ConfigError, NodeServiceError, ValueError) as exc:
        _fail(str(exc))
    except InfraError as exc:  # a harness error: nothing was written
        _fail(f"the judge {model} failed ({exc.kind}): {exc}")
    console.print(f"judgment {outcome.judgment_id}: {len(outcome.rows)} judgment(s) written "
                  f"({outcome.skipped_incomplete} incomplete trial(s) not judged"
                  + (f"; {outcome.skipped_nothing_to_judge} with nothing the rubric requires"
                     if outcome.skipped_nothing_to_judge else "")
                  + (f"; no rubric for {', '.join(outcome.skipped_no_rubric)}"
                     if outcome.skipped_no_rubric else "") + ")", markup=False)
    _print_signals(root, run_id, model)


def _print_signals(root: Root, run_id: str, judge_model: str) -> None:
    from warehouse.query import run_named

    params = {"run_id": run_id, "judge_model": judge_model}
    signals = run_named(root, "run_trial_signals", params)
    print_rows(console, signals.columns, signals.rows, "table",
               f"both signals per trial: the code's verdict (trials.passed) and judge "
               f"{judge_model}'s majority")
    rates = run_named(root, "run_judge_pass_rates", params)
    print_rows(console, rates.columns, rates.rows, "table",
               "passed without the judge (code), by the judge, and combined (code AND judge)")
    cost = run_named(root, "run_judge_cost", params).rows[0]
    console.print(f"judge cost: {'unknown' if cost[1] else f'${cost[0]:.4f}'} over {cost[2]} "
                  f"judgment(s) ({cost[1]} without a reported cost; never part of "
                  "trials.cost_usd)", markup=False)
    agreement = [float(r[signals.columns.index("agreement")]) for r in signals.rows]
    unanimous = sum(1 for a in agreement if a == 1)
    console.print(f"agreement across repeats: {unanimous}/{len(agreement)} trial(s) unanimous, "
                  f"mean {sum(agreement) / len(agreement):.2f}" if agreement else
                  "no judged trial", markup=False)


@app.command(name="export")
def judge_export(
    run_id: Annotated[str, typer.Option("--run-id", help="Run in the warehouse.")],
    output: Annotated[Path, typer.Option("-o", "--output", help="JSONL file to write.")],
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", help="Only this judge's judgments.")] = None,
    force: Force = False,
) -> None:
    """Write a run's judgments as JSONL, to keep beside labels and traces: `judge calibrate
    --judgments` reads it without the warehouse."""
    from pipeline.stored.judgments import export_judgments, stored_judgments

    known_runs(("--run-id", run_id))
    checked_output(output, "-o", force)
    rows = [r for r in stored_judgments(hygiene.warehouse_root(), run_id)
            if judge_model is None or r["judge_model"] == judge_model]
    if not rows:
        _fail(f"run {run_id!r} has no judgment" + (f" by {judge_model}" if judge_model else ""))
    count = export_judgments(output, rows)
    console.print(f"wrote {count} judgment(s) to {output}", markup=False)


@app.command(name="calibrate")
def judge_calibrate(
    labels: Annotated[list[Path], typer.Option("--labels", help="Labels (JSONL); repeatable.")],
    run_id: Annotated[str | None, typer.Option("--run-id", help="Run in the warehouse.")] = None,
    traces: Annotated[Path | None, typer.Option(
        "--traces", help="Instead of --run-id: traces exported by `checks export`.")] = None,
    judgments: Annotated[Path | None, typer.Option(
        "--judgments", help="With --traces: judgments exported by `judge export`.")] = None,
) -> None:
    """Agreement, Cohen's kappa and the confusion matrix of each judge against a person's
    verdicts, and the trials they disagree on."""
    from pipeline.catalog import CatalogError
    from pipeline.judge.calibrate import calibrate_judge, check_labels, load_judge_labels
    from pipeline.stored.calibrate import read_traces
    from pipeline.stored.judgments import read_judgments, stored_judgments
    from pipeline.stored.trials import stored_trials

    if (run_id is None) == (traces is None) or (traces is None) != (judgments is None):
        _fail("give --run-id, or --traces and --judgments")
    known_runs(("--run-id", run_id))
    try:
        loaded = load_judge_labels(labels)
        root = hygiene.warehouse_root()
        trials = (read_traces(traces) if traces is not None
                  else stored_trials(root, str(run_id)))
        rows = (read_judgments(judgments) if judgments is not None
                else stored_judgments(root, str(run_id)))
        wanted = run_id or (str(trials[0].row["run_id"]) if trials else "")
        mine = [item for item in loaded if item.label.run_id == wanted]
        if not mine:
            _fail(f"no label names run {wanted!r}")
        check_labels(mine, trials)
    except (CatalogError, OSError, ValueError) as exc:
        _fail(str(exc))
    results = calibrate_judge([item.label for item in mine], rows)
    if not results:
        _fail(f"run {wanted!r} has no judgment by a labelled rubric")
    for result in results:
        _print_calibration(result, len(mine))


def _print_calibration(result: Any, labelled: int) -> None:
    from pipeline.judge.calibrate import HumanVerdict

    model, rubric_id, version, sha = result.key
    confusion = result.confusion
    verdicts: Sequence[str] = get_args(HumanVerdict)
    print_table(console, ["person \\ judge", *(f"judge {v}" for v in verdicts)],
                [[f"person {verdict}", *(confusion.count(verdict, other) for other in verdicts)]
                 for verdict in verdicts],
                f"judge {model}, rubric {rubric_id} v{version} ({sha[:12]}): "
                f"{confusion.total} of {labelled} labelled trial(s) with a judge verdict")
    agreement, kappa = confusion.agreement, confusion.kappa
    console.print(f"agreement {agreement:.3f}" if agreement is not None else "agreement n/a",
                  f"Cohen's kappa {kappa:.3f}" if kappa is not None else
                  "Cohen's kappa undefined (one verdict throughout)", sep="; ", markup=False)
    for item in result.disagreements:
        label = item.label
        console.print(f"disagree: {label.scenario_id} {label.trial_id[:12]}: person "
                      f"{label.verdict}, judge {item.judge_verdict}: {item.reasons[0]} -- "
                      f"{label.note}", markup=False)
    for item in result.no_verdict:
        label = item.label
        console.print(f"no judge verdict: {label.scenario_id} {label.trial_id[:12]}: "
                      f"{'; '.join(item.reasons)}", markup=False)
    if result.unjudged:
        console.print(f"{len(result.unjudged)} labelled trial(s) this judge did not judge: "
                      + ", ".join(sorted(f"{label.scenario_id} {label.trial_id[:12]}"
                                         for label in result.unjudged)), markup=False)
    if result.unlabelled:
        console.print(f"{result.unlabelled} judged trial(s) no label names", markup=False)


def judgment_lines(root: Root, run_id: str, trial_id: str) -> list[str]:
    """The judges' verdicts on one trial, for ``agentsweep show``."""
    from warehouse.query import run_named

    result = run_named(root, "trial_judgments", {"run_id": run_id, "trial_id": trial_id})
    return [f"  {model} rubric {rubric} v{version}: majority {verdict or 'none'} "
            f"(pass/fail/error {p}/{f}/{e}): {reason}"
            for model, rubric, version, verdict, p, f, e, reason in result.rows]
