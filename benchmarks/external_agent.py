"""An external agent against the built-in one: `.venv/bin/python benchmarks/external_agent.py`

(a) CPU per trial, side by side on the same grid and model: the built-in agent (chat memory) and
    ``examples/agents/plain_openai.py`` (the ``openai`` client through the trial's model gateway,
    tools through ``session.call_tool``), one trial after the other in this process, after one
    warm-up trial each. Two models: ``reference/golden`` (answers in process: the harness
    alone) and ``reference-http/golden`` (LiteLLM's OpenAI path to ``agentsweep
    reference-server``, the path a real provider call takes; the server runs in its own process
    and its CPU is counted on neither side).
(b) The gateway's CPU per model call: an ``openai`` client in another process calls one open
    trial's gateway ``--calls`` times; the trial's model answers from memory at once, so this
    process's CPU is the gateway's own (HTTP, JSON, recording the event).

CPU is user+sys of this process (every thread: the agent's, the gateway's, LiteLLM's). On a
shared machine compare the ratios; state the load with the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()

SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
AGENT = f"{REPO / 'examples' / 'agents' / 'plain_openai.py'}:make"
SERVER_CODE = """
from pipeline.reference import server
server.serve_forever(0, on_ready=lambda port: print(port, flush=True))
"""
CLIENT_CODE = """
import sys
from openai import OpenAI
url, key, model, calls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
client = OpenAI(base_url=url, api_key=key, max_retries=0)
for _ in range(calls):
    client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
"""


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def per_trial(agent_name: str, model: str, repeats: int,
              extra: dict[str, Any]) -> dict[str, float]:
    from dataclasses import replace

    from pipeline.catalog import load_suite
    from pipeline.sweep.grid import ModelConfig, expand
    from pipeline.trial.external.refs import resolve
    from pipeline.trial.run import RunContext, run_trial

    ctx = RunContext("bench", "bench")
    specs = [replace(s, extra=extra) for s in expand(
        [load_suite(SUITE)], [ModelConfig(model)], ["default"], ["chat"], repeats,
        agents=[resolve(agent_name)])]
    warm = run_trial(specs[0], ctx)
    assert warm.status == "complete", warm.trial.error_message
    cpu, wall = cpu_s(), time.perf_counter()
    results = [run_trial(spec, ctx) for spec in specs]
    cpu, wall = cpu_s() - cpu, time.perf_counter() - wall
    assert all(r.status == "complete" and r.trial.passed for r in results), "a trial failed"
    calls = sum(r.trial.model_calls for r in results)
    return {"trials": len(results), "model_calls": calls,
            "cpu_ms_per_trial": 1000 * cpu / len(results),
            "wall_ms_per_trial": 1000 * wall / len(results),
            "cpu_ms_per_model_call": 1000 * cpu / calls}


def gateway_per_call(calls: int) -> dict[str, float]:
    from pipeline.catalog import load_domain, load_suite
    from pipeline.environment.sandbox import Sandbox
    from pipeline.models.client import ModelReply
    from pipeline.trace import Trace
    from pipeline.trial.external.door import Door
    from pipeline.trial.external.gateway import gateway

    class Instant:
        def complete(self, *args: Any, **kwargs: Any) -> ModelReply:
            return ModelReply("Done.", (), "stop", 10, 2, None, None, 0.0)

    domain = load_domain(load_suite(SUITE).scenarios[0].scenario.domain)
    door = Door(Instant(), "instant", Sandbox(domain), Trace(), step_limit=10 ** 9)
    doors = gateway()
    doors.open(door)
    try:
        cpu, wall = cpu_s(), time.perf_counter()
        subprocess.run([sys.executable, "-c", CLIENT_CODE, doors.trial_url(door) + "/v1",
                        door.key, door.alias, str(calls)], check=True)
        cpu, wall = cpu_s() - cpu, time.perf_counter() - wall
    finally:
        doors.close(door)
    assert len(door.trace.events) == calls
    return {"calls": calls, "gateway_cpu_ms_per_call": 1000 * cpu / calls,
            "round_trip_wall_ms_per_call": 1000 * wall / calls}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeats", type=int, default=10, help="repeats of the 11-scenario grid")
    parser.add_argument("--calls", type=int, default=500, help="gateway calls in (b)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    server = subprocess.Popen([sys.executable, "-c", SERVER_CODE], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    figures: dict[str, Any] = {"load_1m": os.getloadavg()[0]}
    try:
        assert server.stdout is not None
        http = {"api_base": f"http://127.0.0.1:{int(server.stdout.readline())}/v1",
                "api_key": "no-key"}
        for model, extra in (("reference/golden", {}), ("reference-http/golden", http)):
            builtin = per_trial("builtin", model, args.repeats, extra)
            external = per_trial(AGENT, model, args.repeats, extra)
            figures[model] = {"builtin": builtin, "external": external, "ratio": (
                external["cpu_ms_per_trial"] / builtin["cpu_ms_per_trial"])}
    finally:
        server.terminate()
        server.wait(timeout=10)
    figures["gateway"] = gateway_per_call(args.calls)
    if args.json:
        print(json.dumps(figures))
        return
    print(f"load average (1 min) at the start: {figures['load_1m']:.2f}")
    for model in ("reference/golden", "reference-http/golden"):
        row = figures[model]
        print(f"{model}: {row['builtin']['trials']} trials each; CPU per trial built-in "
              f"{row['builtin']['cpu_ms_per_trial']:.1f} ms, external "
              f"{row['external']['cpu_ms_per_trial']:.1f} ms (x{row['ratio']:.2f}); per model "
              f"call {row['builtin']['cpu_ms_per_model_call']:.2f} vs "
              f"{row['external']['cpu_ms_per_model_call']:.2f} ms")
    gate = figures["gateway"]
    print(f"gateway: {gate['calls']} calls from an openai client in another process: "
          f"{gate['gateway_cpu_ms_per_call']:.2f} ms CPU per call in the gateway's process, "
          f"{gate['round_trip_wall_ms_per_call']:.2f} ms wall per round trip")


if __name__ == "__main__":
    main()
