"""CPU per model call through LiteLLM: `.venv/bin/python benchmarks/model_call_cpu.py`

``--calls`` (default 300) ``LiteLLMClient.complete`` calls of ``reference-http/golden``
(LiteLLM's OpenAI translation on the direct path, ``pipeline.models.direct``;
``--litellm-completion``: through ``litellm.completion``) from ``--threads`` threads (default 1:
one after the other; a Ray worker runs many trial threads) against the reference HTTP server,
run in its own process on 127.0.0.1 so that its CPU is not counted. Reported: user+sys CPU of
this process per call (every thread, LiteLLM's logging threads included, drained before
reading), wall time per call, and how many logging threads LiteLLM had started. The first
``--warmup`` calls (LiteLLM's import, the first connection) are not counted. On a shared
machine, CPU per call is the figure to compare; wall time depends on the load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()

SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
SERVER_CODE = """
from pipeline.reference import server
server.serve_forever(0, on_ready=lambda port: print(port, flush=True))
"""


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _call(api_base: str, direct: bool) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """The client, the first turn's messages and the domain's tools of one scenario."""
    from pipeline.catalog import load_domain, load_suite
    from pipeline.models.client import LiteLLMClient
    from pipeline.models.config import ModelConfig
    from pipeline.models.providers import provider_for

    scenario = load_suite(SUITE).scenarios[0].scenario
    domain = load_domain(scenario.domain)
    client = LiteLLMClient(ModelConfig("reference-http/golden"), direct=direct)
    params = provider_for(client.model.name).trial_params(client.route, scenario, domain)
    client.call_params = {**params, "api_base": api_base}
    messages = [{"role": "system", "content": "You book meeting rooms."},
                {"role": "user", "content": scenario.turns[0].user}]
    return client, messages, domain.openai_tools()


def _drain_logging() -> None:
    """Wait for the success-logging work LiteLLM queued (its CPU belongs to the calls)."""
    from litellm.litellm_core_utils.thread_pool_executor import executor

    executor.shutdown(wait=True)


async def _as_coroutines(client: Any, messages: list[dict[str, Any]],
                         tools: list[dict[str, Any]], calls: int, concurrent: int) -> list[Any]:
    """``calls`` calls by ``concurrent`` coroutines on this thread's event loop, each its
    share one after another (pipeline.runtime.as_coroutine), as trials run as coroutines."""
    from pipeline.runtime.as_coroutine import run_as_coroutine

    def share(count: int) -> list[Any]:
        return [client.complete(messages, tools) for _ in range(count)]

    shares = [calls // concurrent + (i < calls % concurrent) for i in range(concurrent)]
    done = await asyncio.gather(*(run_as_coroutine(share, n) for n in shares))
    return [reply for replies in done for reply in replies]


def measure(calls: int, warmup: int, threads: int, direct: bool = True,
            coroutines: bool = False) -> dict[str, Any]:
    server = subprocess.Popen([sys.executable, "-c", SERVER_CODE], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, cwd=REPO)
    try:
        assert server.stdout is not None
        api_base = f"http://127.0.0.1:{int(server.stdout.readline())}/v1"
        client, messages, tools = _call(api_base, direct)
        for _ in range(warmup):
            client.complete(messages, tools)
        cpu, wall = cpu_s(), time.perf_counter()
        if coroutines:
            replies = asyncio.run(_as_coroutines(client, messages, tools, calls, threads))
        else:
            with ThreadPoolExecutor(threads) as pool:
                replies = list(pool.map(lambda _: client.complete(messages, tools),
                                        range(calls)))
        wall = time.perf_counter() - wall
        logging_threads = sum(t.name.startswith("litellm-logging")
                              for t in threading.enumerate())
        _drain_logging()
        cpu = cpu_s() - cpu
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert all(r.tool_calls and r.input_tokens for r in replies), "a call was not answered"
    return {"calls": calls, "threads": threads, "coroutines": coroutines,
            "direct": client._direct is not None,
            "litellm_logging_threads": logging_threads,
            "cpu_ms_per_call": 1000 * cpu / calls, "wall_ms_per_call": 1000 * wall / calls,
            "cost_usd": sorted({r.cost_usd for r in replies}, key=str)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--litellm-completion", action="store_true",
                        help="every call through litellm.completion, not the direct path")
    parser.add_argument("--coroutines", action="store_true",
                        help="--threads coroutines on one event loop instead of threads (trials "
                        "run as coroutines)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
    result = measure(args.calls, args.warmup, args.threads, not args.litellm_completion,
                     args.coroutines)
    if args.json:
        print(json.dumps(result))
        return
    way = "the direct path" if result["direct"] else "litellm.completion"
    print(f"{result['calls']} calls of reference-http/golden through {way} from "
          f"{result['threads']} {'coroutine' if result['coroutines'] else 'thread'}(s): "
          f"{result['cpu_ms_per_call']:.2f} ms CPU (user+sys) per call, "
          f"{result['wall_ms_per_call']:.2f} ms wall per call; "
          f"{result['litellm_logging_threads']} LiteLLM logging threads")


if __name__ == "__main__":
    main()
