"""What ``side_by_side.py`` prints: the HTTP path's table first, the in-process path's after it,
the reference server's own CPU apart, then the figures issue 41's targets are stated in."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from measured import Measured

CALLS_PER_TRIAL = 6
IN_FLIGHT = 64
LATENCY_CASES = ((1000.0, 256), (100.0, 64))
"""(L in ms, C calls allowed) of the latency-bound runs."""
NAN = float("nan")

Results = dict[str, dict[str, Measured]]
Steps = dict[str, Measured]
Row = tuple[str, tuple[str, ...], Callable[[Steps], float], str]
"""(label, steps it needs, its value from a tool's steps, format)."""


def marginal_ms(steps: Steps, many: str, single: str, trials: int) -> float:
    """CPU per model call of the N-trial run beyond a 1-trial run on the same warm stack."""
    extra = steps[many].cpu_s - steps[single].cpu_s
    return 1000 * extra / (CALLS_PER_TRIAL * (trials - 1))


def baseline(steps: Steps) -> str:
    """The 1-trial HTTP run the marginal CPU is counted beyond: the second on the stack (the
    first pays for the stack's first flow), the first when only it ran (``--quick``)."""
    return "warm again" if "warm again" in steps else "warm"


def _first(steps: Steps, step: str) -> float:
    value = steps[step].first_trial_s
    return NAN if value is None else value


def _duration(steps: Steps, step: str) -> float:
    value = steps[step].first_trial_duration_s
    return NAN if value is None else value


def main_step(in_flights: list[int]) -> str:
    """The N-trial HTTP run the single-C rows read (C=64 when it ran)."""
    return f"many@{IN_FLIGHT if IN_FLIGHT in in_flights else in_flights[0]}"


def http_rows(trials: int, in_flights: list[int]) -> list[Row]:
    main = main_step(in_flights)
    c = main.partition("@")[2]
    warm = "1-trial run, warm stack, first over HTTP"
    rows: list[Row] = [
        (f"marginal CPU per model call, C={k} (ms)", (f"many@{k}", "warm"),
         lambda s, k=k: marginal_ms(s, f"many@{k}", baseline(s), trials), "{:.2f}")
        for k in in_flights]
    return [*rows,
            (f"{trials} trials, C={c}: CPU (s)", (main,), lambda s: s[main].cpu_s, "{:.1f}"),
            (f"{trials} trials, C={c}: wall (s)", (main,), lambda s: s[main].wall_s, "{:.1f}"),
            (f"{trials} trials, C={c}: first trial's duration (s)", (main,),
             lambda s: _duration(s, main), "{:.3f}"),
            ("1-trial run, cold: first trial (s)", ("cold",), lambda s: _first(s, "cold"),
             "{:.1f}"),
            ("1-trial run, cold: wall (s)", ("cold",), lambda s: s["cold"].wall_s, "{:.1f}"),
            ("1-trial run, cold: CPU (s)", ("cold",), lambda s: s["cold"].cpu_s, "{:.1f}"),
            (f"{warm}: first trial (s)", ("warm",), lambda s: _first(s, "warm"), "{:.1f}"),
            (f"{warm}: its duration (s)", ("warm",), lambda s: _duration(s, "warm"), "{:.3f}"),
            (f"{warm}: CPU (s)", ("warm",), lambda s: s["warm"].cpu_s, "{:.1f}"),
            ("1-trial run, warm stack, again: CPU (s)", ("warm again",),
             lambda s: s["warm again"].cpu_s, "{:.1f}"),
            (f"peak summed RSS, {trials} trials (MiB)", (main,),
             lambda s: s[main].peak_rss_mib, "{:.0f}"),
            ("processes at that peak", (main,), lambda s: s[main].processes_at_peak, "{:.0f}"),
            (f"peak summed PSS, {trials} trials (MiB)", (main,),
             lambda s: s[main].peak_pss_mib, "{:.0f}")]


def in_process_rows(trials: int) -> list[Row]:
    many, again, first = "in-process many", "in-process again", "in-process first"
    return [
        ("in process: marginal CPU per model call (ms)", (many, again),
         lambda s: marginal_ms(s, many, again, trials), "{:.2f}"),
        (f"in process: {trials} trials: CPU (s)", (many,), lambda s: s[many].cpu_s, "{:.1f}"),
        (f"in process: {trials} trials: wall (s)", (many,), lambda s: s[many].wall_s, "{:.1f}"),
        ("in process: 1-trial run, first on the warm stack: first trial (s)", (first,),
         lambda s: _first(s, first), "{:.1f}"),
        ("in process: 1-trial run, first on the warm stack: its duration (s)", (first,),
         lambda s: _duration(s, first), "{:.3f}"),
        (f"in process: peak summed RSS, {trials} trials (MiB)", (many,),
         lambda s: s[many].peak_rss_mib, "{:.0f}")]


def server_rows(in_flights: list[int]) -> list[Row]:
    return [(f"reference server: CPU per model call served, C={k} (ms)", (f"many@{k}",),
             lambda s, k=k: 1000 * s[f"many@{k}"].server_cpu_s / max(s[f"many@{k}"].served, 1),
             "{:.2f}") for k in in_flights]


def ran(results: Results, rows: list[Row]) -> list[Row]:
    """The rows whose steps agentsweep ran."""
    return [row for row in rows if all(step in results["agentsweep"] for step in row[1])]


def table(results: Results, rows: list[Row], extra: list[str] | None = None) -> str:
    """A markdown table, a column per tool and their ratio; a row only when agentsweep ran
    its steps (a tool that did not: ``-``)."""
    names = list(results)
    head = ["measure", *names, *(["ratio"] if len(names) == 2 else [])]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, needs, pick, fmt in ran(results, rows):
        values = [pick(steps) if all(n in steps for n in needs) else NAN
                  for steps in results.values()]
        cells = ["-" if v != v else fmt.format(v) for v in values]
        if len(values) == 2:
            ratio = values[0] / values[1] if values[1] and values[1] == values[1] else NAN
            cells.append("-" if ratio != ratio else f"{ratio:.2f}")
        lines.append("| " + " | ".join([label, *cells]) + " |")
    return "\n".join([*lines, *(extra or [])])


def up_row(results: Results) -> str:
    up = results["agentsweep"]["up"]
    return (f"| `agentsweep up`: wall / CPU (s) | {up.wall_s:.1f} / {up.cpu_s:.1f} |"
            + " - |" * (len(results) if len(results) == 2 else 0))


def tables(results: Results, trials: int, in_flights: list[int]) -> str:
    http = ("HTTP path (agentsweep: reference-http/golden through LiteLLM; Inspect: "
            "openai-api; both to agentsweep reference-server, scripts named by id)")
    local = ("In process (agentsweep: reference/golden, no LiteLLM; Inspect: mockllm), "
             "for comparison only")
    server = "The reference server's own CPU (counted on neither side above)"
    parts = [(http, http_rows(trials, in_flights), [up_row(results)]),
             (local, in_process_rows(trials), []), (server, server_rows(in_flights), [])]
    return "\n\n".join(f"{title}\n{table(results, rows, extra)}"
                        for title, rows, extra in parts if ran(results, rows))


def targets(results: Results, trials: int, in_flights: list[int]) -> list[str]:
    """The figures issue 41's done-when is stated in, from this run."""
    ours = results["agentsweep"]
    per_call = {k: marginal_ms(ours, f"many@{k}", baseline(ours), trials) for k in in_flights}
    lines = ["CPU per model call over HTTP, agentsweep (target <= 2 ms, flat in C): " + ", ".join(
        f"C={k} {v:.2f} ms" for k, v in per_call.items())]
    theirs = results.get("Inspect", {})
    if all(f"many@{k}" in theirs for k in in_flights) and "warm" in theirs:
        lines.append("  to Inspect on the same lean HTTP path (target <= 0.3): " + ", ".join(
            f"C={k} {v / marginal_ms(theirs, f'many@{k}', baseline(theirs), trials):.2f}"
            for k, v in per_call.items()))
    main = ours[main_step(in_flights)]
    lines.append(f"peak summed RSS, {trials} warm HTTP trials: {main.peak_rss_mib:.0f} MiB "
                 f"(target <= 700)")
    # Both on a stack whose workers run: the first HTTP run meets LiteLLM's import if a trial
    # has to wait for it.
    local_step = "in-process again"
    if local_step not in ours:  # --quick
        return lines
    http, local = _duration(ours, "warm"), _duration(ours, local_step)
    lines.append(f"first trial on a warm stack, over HTTP (the first HTTP run) / in process "
                 f"({local_step}): took {http:.3f} s / {local:.3f} s, "
                 f"{http / local if local else NAN:.1f}x (target <= 2); started "
                 f"{_first(ours, 'warm'):.1f} s / {_first(ours, local_step):.1f} s after its "
                 f"command")
    return lines


def where_memory_goes(results: Results, in_flights: list[int]) -> list[str]:
    step = main_step(in_flights)
    lines = []
    for name, steps in results.items():
        if step in steps:
            kinds = sorted(steps[step].at_peak_mib.items(), key=lambda item: -item[1])
            lines.append(f"{name} at its peak RSS ({step}), MiB: "
                         + ", ".join(f"{kind} {mib:.0f}" for kind, mib in kinds))
    return lines


def model_calls(results: Results, trials: int) -> str:
    """Each step's model calls as the tool recorded them / as the reference server served
    them (in process: none served): the workload's check."""
    counts = "; ".join(f"{name} " + ", ".join(f"{step} {m.model_calls}/{m.served}" for step, m
                                               in steps.items() if step != "up")
                       for name, steps in results.items())
    return (f"model calls recorded/served (expected {CALLS_PER_TRIAL} a trial, "
            f"{CALLS_PER_TRIAL * trials} for {trials}): {counts}")


def cold_phases(results: Results) -> list[str]:
    cold = results["agentsweep"].get("cold")
    if cold is None:
        return []
    marks = sorted(cold.phases.items(), key=lambda item: item[1])
    if cold.first_trial_s is not None:
        marks.append(("first trial started (warehouse)", cold.first_trial_s))
    marks.append(("exit", cold.wall_s))
    return ["agentsweep cold 1-trial run, seconds from the command's start: " + "; ".join(
        f"{name} {t:.1f}" for name, t in marks)]


def report(results: Results, trials: int, in_flights: list[int], notes: list[str]) -> None:
    print(tables(results, trials, in_flights))
    print()
    for line in [*targets(results, trials, in_flights), *cold_phases(results),
                 *where_memory_goes(results, in_flights), model_calls(results, trials), *notes]:
        print(line)


def print_latency(latency: list[dict[str, Any]]) -> None:
    """throughput.py's latency-bound runs, against min(C/L, cores / CPU per call)."""
    cores = os.cpu_count() or 1
    for run in latency:
        cpu = run["cpu_ms_per_call"]
        ours = cpu["driver"] + cpu["workers"] + cpu["ray"]
        by_latency = run["limit"] * 1000 / run["latency_ms"]
        by_cpu = 1000 * cores / ours
        shared = 1000 * cores / (ours + cpu["server"])
        rate = run["active_fraction_of_limit"] * by_latency
        print(f"latency-bound over HTTP, L={run['latency_ms']:.0f} ms, C={run['limit']}: "
              f"{rate:.0f} calls/s in full flight = {rate / min(by_latency, by_cpu):.2f} of "
              f"min(C/L = {by_latency:.0f}/s, cores / CPU per call = {cores} / {ours:.2f} ms = "
              f"{by_cpu:.0f}/s) (target >= 0.8); the server's {cpu['server']:.2f} ms a call "
              f"apart (with it the CPU term is {shared:.0f}/s); whole run "
              f"{run['calls_per_s']:.0f} calls/s, {run['model_calls']} calls, "
              f"statuses {run['statuses']}")
