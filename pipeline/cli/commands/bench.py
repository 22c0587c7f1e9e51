"""The bench that checks itself: ``reference-server``, ``verify-suite``, ``lint-suite``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.text import Text

from pipeline.cli import terminal
from pipeline.cli.tables import cell as text_cell
from pipeline.cli.tables import print_table
from pipeline.cli.terminal import fail
from pipeline.errors import ExitCode

app = typer.Typer()


@app.command(name="reference-server")
def reference_server(
    port: Annotated[int, typer.Option(min=0, max=65535, help="0: any free port.")] = 8765,
    wire: Annotated[str, typer.Option(
        "--wire", help="Wire format: openai (chat completions), anthropic (Messages API) or "
        "gemini (generateContent).")] = "openai",
    latency_ms: Annotated[float, typer.Option("--latency-ms", min=0)] = 0.0,
    error_rate_429: Annotated[float, typer.Option("--error-rate-429")] = 0.0,
    error_rate_500: Annotated[float, typer.Option("--error-rate-500")] = 0.0,
    overloaded_rate: Annotated[float, typer.Option(
        "--overloaded-rate", help="Share answered 'overloaded' (anthropic: 529, else 503).")
    ] = 0.0,
    context_length_rate: Annotated[float, typer.Option(
        "--context-length-rate", help="Share answered 400: the prompt is over the context.")
    ] = 0.0,
    timeout_rate: Annotated[float, typer.Option("--timeout-rate")] = 0.0,
    drop_rate: Annotated[float, typer.Option("--drop-rate")] = 0.0,
    seed: Annotated[int, typer.Option(help="Seed of the fault draws.")] = 0,
    plays: Annotated[str | None, typer.Option(
        "--plays", help="Answer every request as this variant (e.g. mutant-ignores-switch), "
        "whatever model it names: a model that changed behind its name.")] = None,
) -> None:
    """Serve the reference models over HTTP on 127.0.0.1 until Ctrl-C (OpenAI-compatible, or
    Anthropic's or Gemini's wire format with --wire)."""
    from pydantic import ValidationError

    from pipeline.models.faults import FaultProfile
    from pipeline.reference.server import serve_forever
    from pipeline.reference.wire import WIRE_NAMES

    if wire not in WIRE_NAMES:
        fail(f"--wire: {wire!r} is not one of {', '.join(WIRE_NAMES)}")
    options = {"latency_ms": "--latency-ms", "rate_limit": "--error-rate-429",
               "server_error": "--error-rate-500", "overloaded": "--overloaded-rate",
               "context_length": "--context-length-rate", "timeout": "--timeout-rate",
               "connection_drop": "--drop-rate"}
    try:
        faults = FaultProfile(latency_ms=latency_ms, rate_limit=error_rate_429,
                              server_error=error_rate_500, overloaded=overloaded_rate,
                              context_length=context_length_rate, timeout=timeout_rate,
                              connection_drop=drop_rate)
    except ValidationError as exc:
        fail("; ".join(f"{options.get(str(e['loc'][0]), 'rates') if e['loc'] else 'rates'}: "
                        f"{e['msg']}" for e in exc.errors()))

    def ready(bound: int) -> None:
        base, how = _reference_endpoint(wire, bound)
        terminal.console.print(f"serving reference models ({wire} wire) on {base} ({how}); faults: "
                               f"{faults.model_dump_json()}; Ctrl-C stops", markup=False)

    try:
        serve_forever(port, faults, seed, on_ready=ready, plays=plays,
                      wire=wire)  # type: ignore[arg-type]  # checked against WIRE_NAMES
    except OSError as exc:
        fail(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}")
    except ValueError as exc:
        fail(f"--plays: {exc}")
    terminal.console.print("stopped")


def _reference_endpoint(wire: str, port: int) -> tuple[str, str]:
    """The api_base of a reference server and how a sweep reaches its golden model."""
    from pipeline.reference.reference import WIRE_OF_PROVIDER
    from pipeline.reference.wire import wire_named

    base = f"http://127.0.0.1:{port}{wire_named(wire).base_path}"
    (provider,) = [p for p, w in WIRE_OF_PROVIDER.items() if w == wire]
    return base, f"agentsweep run --model {provider}/golden --api-base {base}"


@app.command(name="verify-suite")
def verify_suite(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Scenario suite (JSONL); repeatable. Default: the default suites.")
    ] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders; repeatable.")] = None,
    memory_mode: Annotated[list[str] | None, typer.Option(
        "--memory-mode", help="Default: chat, summary, structured.")] = None,
    allow_unproven: Annotated[bool, typer.Option(
        "--allow-unproven", help="Verify a suite that declares no mutant catches too.")] = False,
    tools: Annotated[str, typer.Option(
        "--tools", help="sandbox or mock (tools answer from the cases' recordings).")
    ] = "sandbox",
) -> None:
    """Prove the checks: golden passes, each mutant is caught by its declared check."""
    from pipeline.catalog import CatalogError, bundled_suites, load_suites, set_extra_roots

    set_extra_roots(catalog or [])
    from pipeline.environment.sandbox import TOOLS_MODES
    from pipeline.sweep.grid import MEMORY_MODES
    from pipeline.verify.mutants import verify

    modes = memory_mode or list(MEMORY_MODES)
    unknown = set(modes) - set(MEMORY_MODES)
    if unknown:
        fail(f"--memory-mode: unknown {sorted(unknown)}")
    if tools not in TOOLS_MODES:
        fail(f"--tools: {tools!r} is not one of {', '.join(TOOLS_MODES)}")
    try:
        loaded = load_suites(suite or bundled_suites())
    except CatalogError as exc:
        fail(str(exc))
    conditions = [s for s in loaded if s.kind == "conditions"]
    suites = [s for s in loaded if s.kind != "conditions"]
    unproven = [s.path for s in suites if not any(x.scenario.catches for x in s.scenarios)]
    if unproven and not allow_unproven:
        fail(f"{unproven[0]}: the suite declares no mutant catches, so verifying it proves "
              "nothing about its checks (add catches to its scenarios, or --allow-unproven)")
    wrong = _verify_conditions(conditions, memory_mode or ["chat"]) if conditions else 0
    if not suites:
        if wrong:
            raise typer.Exit(ExitCode.BLOCKED)
        return
    cells = verify(suites, modes, tools=tools)  # type: ignore[arg-type]
    bad = _print_mutation_cells(cells)
    if bad or wrong:
        raise typer.Exit(ExitCode.BLOCKED)


def _print_mutation_cells(cells: list[Any]) -> int:
    """The mutation matrix (scenario x mode x reference model); the number of wrong cells."""
    models = sorted({c.model for c in cells}, key=lambda m: (m != "reference/golden", m))
    by_key = {(c.scenario_id, c.mode, c.model): c for c in cells}
    rows: list[list[Text]] = []
    for scenario_id, mode in sorted({(c.scenario_id, c.mode) for c in cells}):
        row = [text_cell(f"{scenario_id} / {mode}")]
        for model in models:
            cell = by_key[(scenario_id, mode, model)]
            row.append(text_cell(cell.label(), "green" if cell.ok else "bold red"))
        rows.append(row)
    print_table(
        terminal.console, ["scenario / mode", *(m.removeprefix("reference/") for m in models)],
                rows, "mutation verification: scenario x mode x reference model")
    bad = [c for c in cells if not c.ok]
    terminal.console.print(f"{len(cells)} cells, {len(bad)} wrong")
    for cell in bad:
        terminal.err_console.print(
            f"{cell.scenario_id} / {cell.mode} / {cell.model}: {cell.label()}",
                          markup=False)
    return len(bad)


@app.command(name="lint-suite")
def lint_suite(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Cases suite (JSONL); repeatable. Default: every cases suite.")
    ] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders; repeatable.")] = None,
) -> None:
    """Flag what a suite demands that the agent was never told (a test must not demand a
    convention the prompt does not state): a case's outcome code its domain's prompt never
    defines, a golden state field no prompt, tool or state-schema description mentions. Exit
    1 on a finding."""
    from pipeline.catalog import CatalogError, known_suites, load_suites, set_extra_roots
    from pipeline.catalog.contract_lint import lint_contract
    from pipeline.catalog.state_lint import lint_states

    set_extra_roots(catalog or [])
    try:
        suites = load_suites(suite or list(known_suites().values()))
    except CatalogError as exc:
        fail(str(exc))
    cases = [s for s in suites if s.kind == "cases"]
    findings = [f for s in cases for f in lint_contract(s)]
    for finding in findings:
        terminal.err_console.print(finding.message(), markup=False)
    terminal.console.print(f"{sum(len(s.scenarios) for s in cases)} case(s) in {len(cases)} cases "
                           f"suite(s), {len(findings)} undefined outcome code(s)")
    untold = [f for s in suites for f in lint_states(s)]
    for state_finding in untold:
        terminal.err_console.print(state_finding.message(), markup=False)
    terminal.console.print(
        f"{len(suites)} suite(s), {len(untold)} golden state field(s) no prompt, "
                  "tool or state schema describes")
    if findings or untold:
        raise typer.Exit(ExitCode.BLOCKED)


def _verify_conditions(suites: list[Any], modes: list[str]) -> int:
    """Every reference condition agent's failure map against the one it must give; the number
    of wrong cells."""
    from pipeline.reference.condition_agents import CONDITION_AGENTS
    from pipeline.verify.conditions import verify_conditions

    checks = verify_conditions(suites, modes)  # type: ignore[arg-type]
    keys = list(dict.fromkeys((c.condition_id, c.mode) for c in checks))
    rows: list[list[Text]] = []
    for condition, mode in keys:
        row = [text_cell(f"{condition} / {mode}")]
        for agent in CONDITION_AGENTS:
            mine = [c for c in checks if (c.agent, c.condition_id, c.mode) ==
                    (agent, condition, mode)]
            bad = [c for c in mine if not c.ok]
            decision = next((c.actual for c in mine if c.column == "decision"), "?")
            row.append(text_cell(decision, "green") if not bad else text_cell(
                "; ".join(f"{c.column}: {c.actual} (expected {c.expected})" for c in bad),
                "bold red"))
        rows.append(row)
    print_table(terminal.console, ["condition / mode", *CONDITION_AGENTS], rows,
                "conditions verification: each reference agent's failure map (through the "
                "failure_map view)")
    wrong = [c for c in checks if not c.ok]
    terminal.console.print(f"{len(checks)} map cells, {len(wrong)} wrong")
    for check in wrong:
        terminal.err_console.print(
            f"{check.agent} / {check.condition_id} / {check.mode} / {check.column}"
                          f": {check.actual} (expected {check.expected})", markup=False)
    return len(wrong)
