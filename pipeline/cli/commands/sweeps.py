"""Commands that run sweeps and the warm stack: ``run``, ``up``, ``down``, ``status``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from pipeline.cli import terminal
from pipeline.cli.outputs import Force, checked_output
from pipeline.cli.terminal import fail
from pipeline.errors import ExitCode

app = typer.Typer()


@app.command()
def run(
    suite: Annotated[list[Path] | None, typer.Option(
        "--suite", help="Scenario suite (JSONL); repeatable. Default: catalogs/"
        "default-suites.txt.")] = None,
    catalog: Annotated[list[Path] | None, typer.Option(
        "--catalog", help="A folder of domain folders, searched before the bundled catalogs; "
        "repeatable.")] = None,
    scenario: Annotated[list[str] | None, typer.Option(
        "--scenario", help="Scenario id to run; repeatable. Default: every scenario.")] = None,
    model: Annotated[list[str] | None, typer.Option(
        "--model", help="LiteLLM model name, or local/default (the bundled local model); "
        "repeatable. Default: reference/golden.")] = None,
    prompt: Annotated[list[str] | None, typer.Option(
        "--prompt", help="Prompt name in the domain's prompts/; repeatable.")] = None,
    memory_mode: Annotated[list[str] | None, typer.Option(
        "--memory-mode", help="chat, summary or structured (the built-in agent's); repeatable. "
        "Default: all three.")] = None,
    agent: Annotated[list[str] | None, typer.Option(
        "--agent", help="The agent under test: builtin, path/to/file.py:attribute, "
        "package.module:attribute or an http(s):// agent service (docs/agents.md); "
        "repeatable. Default: builtin.")] = None,
    agent_turn_timeout_s: Annotated[float | None, typer.Option(
        "--agent-turn-timeout-s", help="An external agent's time for one user turn; past it "
        "the trial is an agent error (agent_timeout). Default: 300.")] = None,
    repeats: Annotated[int | None, typer.Option(
        min=1, help="Repeats per grid cell. Default: 3.")] = None,
    tools: Annotated[str | None, typer.Option(
        "--tools", help="sandbox (the domain's tools, writes intercepted) or mock (every tool "
        "answers from the cases' recorded results). Default: sandbox.")] = None,
    api_base: Annotated[str | None, typer.Option(
        "--api-base", help="OpenAI-compatible endpoint for every --model (a local server, "
        "agentsweep reference-server, a proxy).")] = None,
    temperature: Annotated[float | None, typer.Option(
        help="Sampling temperature. Default: 0.0.")] = None,
    seed: Annotated[int | None, typer.Option(
        help="Seed of repeat 0; repeat r gets seed + r. Default: none.")] = None,
    run_id: Annotated[str | None, typer.Option("--run-id", help="Default: generated.")] = None,
    resume: Annotated[bool, typer.Option(
        "--resume", help="With --run-id: run only trials without a final row.")] = False,
    shard: Annotated[str | None, typer.Option(
        "--shard", help="I/N: run shard I of N drivers sharing --run-id (the grid split by "
        "trial id; start every shard with the same grid). --resume without it continues every "
        "shard's unfinished trials once no shard's driver runs.")] = None,
    ray_address: Annotated[str | None, typer.Option(
        "--ray-address", envvar="RAY_ADDRESS", help="Ray cluster; default a local Ray.")] = None,
    max_in_flight: Annotated[int | None, typer.Option(
        min=1, help="Trials in flight at once. Default: 64.")] = None,
    trials_as: Annotated[str | None, typer.Option(
        "--trials-as", help="coroutines (default): the built-in agent's trials as coroutines on "
        "their worker's event loop (many in flight, less CPU per model call); threads: a "
        "thread per trial.")] = None,
    in_flight_per_node: Annotated[int | None, typer.Option(
        "--in-flight-per-node", min=1, help="Trials in flight per node of the Ray cluster "
        "(its alive nodes with a CPU, counted at the start) instead of --max-in-flight: the "
        "limit grows with the cluster.")] = None,
    timeout_s: Annotated[float | None, typer.Option(
        "--timeout-s", help="Time limit of one model call (connect at most 10 s). Default: "
        "120 s (local models 900 s).")] = None,
    spec: Annotated[Path | None, typer.Option("--spec", help="Sweep spec (YAML) instead of the "
        "grid options; --run-id, --resume, --shard, --ray-address, --repeats, --max-cost-usd "
        "override "
        "it.")] = None,
    append: Annotated[bool, typer.Option(
        "--append", help="Add this grid to an existing --run-id (another grid).")] = False,
    junit: Annotated[Path | None, typer.Option(
        "--junit", help="Write the run's JUnit XML here (one testcase per scenario x model x "
        "prompt x memory mode).")] = None,
    force: Force = False,
    user_model: Annotated[str | None, typer.Option(
        "--user-model", help="The user simulator's model (any model name) for scenarios with a "
        "simulated user; without it their fixed turns are played.")] = None,
    user_max_turns: Annotated[int | None, typer.Option(
        "--user-max-turns", min=1, help="Turns the simulated user may speak; past them the "
        "dialog ends as turn_limit. Default: 30.")] = None,
    max_cost_usd: Annotated[float | None, typer.Option(
        "--max-cost-usd", help="Spend cap of the sweep (USD): at the cap "
        "no new attempt starts, exit 3; with --resume, a higher cap goes on (overrides the "
        "spec's and the recorded one).")] = None,
) -> None:
    """Run a sweep: suites x agents x models x prompts x memory modes x repeats."""
    from pipeline.cli.run import RunOptions, Terminal, main

    checked_output(junit, "--junit", force)
    options = RunOptions(
        suite=suite or [], catalog=catalog or [], scenario=scenario or [], model=model or [],
        prompt=prompt or [], memory_mode=memory_mode or [], repeats=repeats, tools=tools,
        agent=agent or [], agent_turn_timeout_s=agent_turn_timeout_s,
        user_model=user_model, user_max_turns=user_max_turns,
        api_base=api_base, temperature=temperature, seed=seed, run_id=run_id, resume=resume,
        shard=shard, ray_address=ray_address, max_in_flight=max_in_flight,
        in_flight_per_node=in_flight_per_node, trials_as=trials_as, timeout_s=timeout_s,
        spec=spec, append=append, junit=junit, max_cost_usd=max_cost_usd)
    code = main(options, Terminal(terminal.console, terminal.err_console))
    if code:
        raise typer.Exit(code)


@app.command()
def up(
    cpus: Annotated[int | None, typer.Option(min=1, help="CPUs for trials. Default: all.")] = None,
    dashboard: Annotated[bool, typer.Option(
        "--dashboard", help="Also start Ray's dashboard on 127.0.0.1 (needs ray[default]).")
    ] = False,
) -> None:
    """Start a local Ray head and a Prefect server for AGENTSWEEP_HOME; later runs attach."""
    from pipeline.runtime import stack
    from pipeline.runtime.startup import StartError, StartupSettingError, up_failure_line
    try:
        state = stack.up(cpus=cpus, say=lambda text: terminal.console.print(text, markup=False),
                         dashboard=dashboard)
        terminal.console.print("starting trial workers (they stay warm for later runs)")
        _prewarm(state.ray_address)
    except StartError as exc:  # a service that did not come up in time: exit 3
        terminal.err_console.print(
            up_failure_line(exc), markup=False, highlight=False, soft_wrap=True)
        raise typer.Exit(ExitCode.INCOMPLETE) from None
    except (stack.StackError, StartupSettingError) as exc:
        fail(str(exc))
    terminal.console.print(
        f"up: Ray {state.ray_address}, Prefect {state.prefect_api_url}, Prefect UI "
                  f"{state.prefect_ui_url} (`agentsweep down` stops them)", markup=False)
    if state.ray_dashboard_url:
        terminal.console.print(f"Ray dashboard {state.ray_dashboard_url}", markup=False)


def _prewarm(address: str) -> None:
    """Start the warm worker pool a run with default settings will use, LiteLLM imported in
    every worker: the first trial of a run on the stack waits for no import."""
    from pipeline.execution.executor import ray_session, sized_pool
    from pipeline.sweep.config import SweepConfig

    in_flight = int(SweepConfig.model_fields["max_in_flight"].default)
    with ray_session(address) as ray:
        pool = sized_pool(ray, in_flight)
        pool.alive()
        pool.preload()
        pool.preloaded()


@app.command()
def down() -> None:
    """Stop the local Ray head and Prefect server of AGENTSWEEP_HOME."""
    from pipeline.runtime import stack
    terminal.console.print("stopped" if stack.down() else "nothing was up")


@app.command()
def status() -> None:
    """Whether the local stack of AGENTSWEEP_HOME is up."""
    from pipeline.runtime import stack
    state = stack.read_state()
    if state is None:
        terminal.console.print("down: runs start an ephemeral Prefect API and a local Ray")
        return
    terminal.console.print(
        f"Ray {state.ray_address}: {'up' if state.ray_up() else 'DOWN'}; Prefect "
                  f"{state.prefect_api_url}: {'up' if state.prefect_up() else 'DOWN'} (UI "
                  f"{state.prefect_ui_url})",
                  markup=False)
