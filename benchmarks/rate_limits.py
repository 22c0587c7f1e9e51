"""A tpm limit held over a 2-minute sweep: `.venv/bin/python benchmarks/rate_limits.py`

The bundled meeting-room suite runs as ``openai/golden`` through LiteLLM's OpenAI path against
the reference server on 127.0.0.1 (no faults, no latency), on a local Ray, with ``tpm`` set on
the model's provider group and more trials in flight than the limit needs. The server keeps
the time and the usage (prompt + completion tokens) of every answer; the figure is the tokens
answered in the window of ``--seconds`` from the first call, per minute, against the limit (the
executor's limiter counts an estimate of each call before it and corrects it by the reported
usage after it). When the window is over the sweep is interrupted (as Ctrl-C would).
Nothing leaves the machine (``AGENTSWEEP_ALLOW_MODEL_REQUESTS=0``: a call to anything but
loopback is refused). Options: ``--tpm``, ``--seconds``, ``--max-in-flight``.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from pipeline.runtime import hygiene  # noqa: E402

hygiene.apply()
os.environ.setdefault("AGENTSWEEP_PROGRESS", "0")
os.environ["AGENTSWEEP_ALLOW_MODEL_REQUESTS"] = "0"

SUITE = REPO / "catalogs" / "meeting_rooms" / "suites" / "intent_change.jsonl"
TOKENS_PER_TRIAL = 2000
"""About what one trial of the suite uses (the server counts words): the grid is sized to last
well past the window."""


class Answers:
    """When each answer was sent and its tokens, as the server reported them."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[float, int]] = []

    def wrap(self, wire: Any) -> None:
        original = wire.from_chat

        def from_chat(completion: dict[str, Any], cached: int) -> dict[str, Any]:
            usage = completion.get("usage") or {}
            tokens = int(usage.get("prompt_tokens", 0)) + int(usage.get("completion_tokens", 0))
            with self.lock:
                self.seen.append((time.monotonic(), tokens))
            result: dict[str, Any] = original(completion, cached)
            return result

        wire.from_chat = from_chat


def _interrupt_after(answers: Answers, seconds: float, done: threading.Event) -> None:
    """Once the window after the first answer is over, stop the sweep as Ctrl-C would."""
    while not done.is_set():
        with answers.lock:
            first = answers.seen[0][0] if answers.seen else None
        if first is not None and time.monotonic() > first + seconds + 1:
            os.kill(os.getpid(), signal.SIGINT)
            return
        time.sleep(0.2)


def run(tpm: int, seconds: float, max_in_flight: int) -> dict[str, Any]:
    from pipeline.catalog import load_suite
    from pipeline.models.config import ModelConfig
    from pipeline.reference.reference import SCRIPT_KEY, golden_script
    from pipeline.reference.server import start_server
    from pipeline.sweep.config import SweepConfig
    from pipeline.sweep.stages import execute_plan, plan

    answers = Answers()
    trials = int(tpm * seconds / 60 / TOKENS_PER_TRIAL * 2) + max_in_flight
    scenarios = len(load_suite(SUITE).scenarios)
    with tempfile.TemporaryDirectory(prefix="rate-limits-") as tmp, start_server() as server:
        answers.wrap(server.server.wire)
        model = ModelConfig("openai/golden", api_base=server.api_base, tpm=tpm)
        config = SweepConfig(suites=[SUITE], memory_modes=["chat"], run_id="rate-limits",
                             warehouse=Path(tmp) / "wh", models=[model],
                             repeats=-(-trials // scenarios), max_in_flight=max_in_flight)
        full = plan(config)
        pending = [replace(s, extra={**s.extra, "extra_body": {
            SCRIPT_KEY: golden_script(s.scenario)}}) for s in full.pending[:trials]]
        done = threading.Event()
        stopper = threading.Thread(target=_interrupt_after, args=(answers, seconds, done),
                                   daemon=True)
        stopper.start()
        interrupted = False
        try:
            execute_plan(config, replace(full, pending=pending))
        except KeyboardInterrupt:
            interrupted = True
        finally:
            done.set()
    return _figures(answers.seen, tpm, seconds, interrupted)


def _figures(seen: list[tuple[float, int]], tpm: int, seconds: float,
             interrupted: bool) -> dict[str, Any]:
    start = seen[0][0]
    span = seconds if interrupted else min(seconds, seen[-1][0] - start)
    window = [(at - start, tokens) for at, tokens in seen if at - start < span]
    total = sum(tokens for _, tokens in window)
    slices = []
    for low in range(0, int(span), 30):
        part = sum(t for at, t in window if low <= at < min(low + 30, span))
        slices.append(part / (min(low + 30, span) - low) * 60)
    achieved = total / span * 60
    return {"tpm": tpm, "window_s": span, "calls": len(window), "tokens": total,
            "achieved_tpm": achieved, "ratio": achieved / tpm, "slices_tpm": slices,
            "window_filled": interrupted}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tpm", type=int, default=20_000)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--max-in-flight", type=int, default=8)
    args = parser.parse_args()
    load = os.getloadavg()
    figures = run(args.tpm, args.seconds, args.max_in_flight)
    after = os.getloadavg()
    print(f"tpm limit {figures['tpm']:,}; over {figures['window_s']:.0f} s from the first call: "
          f"{figures['calls']} calls, {figures['tokens']:,} tokens answered")
    print(f"achieved {figures['achieved_tpm']:,.0f} tokens/min = {figures['ratio']:.1%} of the "
          f"limit" + ("" if figures["window_filled"] else " (the grid ran out first)"))
    print("per 30 s: " + ", ".join(f"{s:,.0f}" for s in figures["slices_tpm"]) + " tokens/min")
    print(f"load average before {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}, "
          f"after {after[0]:.2f} {after[1]:.2f} {after[2]:.2f}")


if __name__ == "__main__":
    main()
