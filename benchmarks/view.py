"""The viewer at scale: `.venv/bin/python benchmarks/view.py [--trials N] [--home DIR]`

Builds the synthetic warehouse of ``benchmarks/warehouse_scale.py`` (its generator: default 1M
trials, ~30M events over 180 nightly runs), compacts it as a sweep does (``agentsweep warehouse
compact``), then serves ``agentsweep view``'s app with uvicorn on 127.0.0.1 in this process and
times its answers over HTTP on loopback, as the pages ask for them: the runs index
(``/api/runs``), one cell's history over the window (``/api/cell``), the trends page
(``/api/trends``), and searches (a text in a reply; scenario x model x failed; a failed check).
Each is timed as the first request of a fresh viewer (which binds DuckDB's views over the files
at start, timed apart) and as the median of ``--repeat`` more. With Chromium on the machine it
also opens the index page headless (tests/helpers/browser.py; each request goes through the
test's DevTools proxy) and times it until the table is drawn. With ``--home``
an existing synthetic home is reused (no generation). Loopback only: nothing leaves the machine.

Measured on the shared 2-core machine (2026-12-03, load average 3.7-4.6 during the run), 1M
trials (30.0M events, 900 files after compaction, 199 MB; generated in 159 s, compacted in
93 s); first request / median of the next five, wall seconds / CPU seconds per request:
viewer start (views bound, index read) 2.74 / - / 2.63; the index's SQL uncached 1.06 / 0.99 /
1.10 (kept while the files stay the same: the index answers in 0.02-0.04); one cell's history
over 365 days 0.32 / 0.29 / 0.30; the trends page over 30 days 4.60 / 4.47 / 4.79; a search by
text in the replies and tool arguments (a scan of the 30M events) 1.26 / 1.07 / 1.94; by
scenario x model x failed 0.18 / 0.17 / 0.28; by a failed check 0.76 / 0.73 / 1.30; the index
page drawn in Chromium (through the DevTools proxy) 0.17. Wall times doubled, at times, with the
machine's load (other runs the same day: the uncached index 0.55-2.3 s); CPU time does not.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))

import uvicorn  # noqa: E402
import warehouse_scale  # noqa: E402

import reports.view.data as view_data  # noqa: E402
from reports.view import ViewOptions, address_of, bind, create_app, warm  # noqa: E402
from warehouse import query  # noqa: E402
from warehouse.query import run_sql  # noqa: E402

BIN = Path(sys.executable).parent / "agentsweep"


def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.ProxyHandler({}))


def get(url: str) -> float:
    started = time.perf_counter()
    with _opener().open(url, timeout=600) as answer:
        answer.read()
        assert answer.status == 200, url
    return time.perf_counter() - started


def _serve(root: Path) -> tuple[uvicorn.Server, threading.Thread, str]:
    sock = bind("127.0.0.1", 0)
    server = uvicorn.Server(uvicorn.Config(create_app(ViewOptions(root, str)),
                                           log_level="warning", access_log=False,
                                           lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    return server, thread, address_of(sock)


def _paths(root: Path) -> dict[str, str]:
    """The requests to time, with a cell, a scenario x model and a check of this warehouse."""
    cell = run_sql(root, "SELECT suite_id, scenario_id, model, prompt_id, memory_mode FROM "
                   "trials GROUP BY ALL ORDER BY count(*) DESC LIMIT 1", all_runs=True).rows[0]
    keys = ("suite_id", "scenario_id", "model", "prompt_id", "memory_mode")
    check = run_sql(root, "SELECT check_id FROM checks_all WHERE NOT passed LIMIT 1",
                    all_runs=True).rows[0][0]
    q = urllib.parse.urlencode
    return {
        "index (/api/runs)": "api/runs",
        "index page shell (/)": "",
        "cell history, 365 days": "api/cell?" + q({**dict(zip(keys, cell, strict=True)),
                                                   "since": "365d"}),
        "trends, 30 days": "api/trends?" + q({"since": "30d"}),
        "search: text in a reply": "api/search?" + q({"text": "no such words anywhere"}),
        "search: scenario x model, failed": "api/search?" + q(
            {"scenario": cell[1], "model": cell[2], "outcome": "failed"}),
        "search: failed check": "api/search?" + q({"failed_check": check}),
    }


def _forget() -> None:
    """The process's shared DuckDB databases dropped (warehouse.query keeps a few, keyed by
    the files they read): the next request binds the views over the files again, as the first
    request of a fresh ``agentsweep view`` does."""
    query.clear_shared()
    view_data._runs_rows.clear()  # the index's rows, kept while the files stay the same


def _timed_rows(root: Path) -> float:
    started = time.perf_counter()
    query.run_named(root, "view_runs", all_runs=True)
    return time.perf_counter() - started


def _then(repeat: int, once: Callable[[], float]) -> tuple[float, float]:
    """The median wall time of ``repeat`` more, and the CPU seconds this process spent per one
    (server threads and DuckDB's included): a figure the machine's load does not inflate."""
    cpu = time.process_time()
    walls = [once() for _ in range(repeat)]
    return statistics.median(walls), (time.process_time() - cpu) / repeat


Row = tuple[float, float, float]
"""First request, median of the next (wall seconds), CPU seconds per request."""


def measure(root: Path, repeat: int) -> dict[str, Row]:
    """Per request: the first request of a fresh viewer (its views bound at start, as
    ``agentsweep view`` binds them before it prints its address), the median of the next, and
    their CPU time; the start itself and the index's uncached SQL on rows of their own."""
    out: dict[str, Row] = {}
    _forget()
    started, cpu = time.perf_counter(), time.process_time()
    warm(ViewOptions(root, str))
    out["viewer start: views bound (warm)"] = (time.perf_counter() - started, 0.0,
                                               time.process_time() - cpu)
    first = _timed_rows(root)
    out["index rows, uncached (view_runs.sql)"] = (first, *_then(repeat,
                                                                 lambda: _timed_rows(root)))
    for name, path in _paths(root).items():
        _forget()
        warm(ViewOptions(root, str))  # as `agentsweep view` does before it prints its address
        server, thread, origin = _serve(root)
        try:
            first = get(origin + path)
            then, cpu_each = _then(repeat, lambda: get(origin + path))  # noqa: B023
        finally:
            server.should_exit = True
            thread.join(timeout=30)
        out[name] = (first, then, cpu_each)
        print(f"  {name}: first {first:.2f} s, then {then:.2f} s, cpu {cpu_each:.2f} s",
              flush=True)
    return out


def browser_index(root: Path) -> float | None:
    """Seconds from navigation to the index table drawn, in headless Chromium (warm server)."""
    from helpers.browser import Browser, chromium_path
    from helpers.viewer import viewer

    if chromium_path() is None:
        return None
    with viewer(ViewOptions(root, str)) as served, Browser(serve=served.serve) as b:
        get(served.origin + "api/runs")  # the views bound once
        started = time.perf_counter()
        b.open_url(served.origin)
        b.wait_for("document.querySelectorAll('table.runs tbody tr').length > 0", 120)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--home", type=Path, help="Reuse (or keep) the synthetic home here.")
    args = parser.parse_args()
    home = args.home or Path(tempfile.mkdtemp(prefix="agentsweep-view-bench-"))
    root = home / "warehouse"
    try:
        if not root.is_dir():
            scale = argparse.Namespace(trials=args.trials, events_per_trial=30, nights=90,
                                       runs_per_night=2, scenarios=60, models=8,
                                       batch_size=200)
            begin = time.perf_counter()
            trials, events, _ = warehouse_scale.generate(root, scale)
            print(f"generated {trials} trials, {events} events in "
                  f"{time.perf_counter() - begin:.0f} s", flush=True)
            begin = time.perf_counter()
            subprocess.run([str(BIN), "warehouse", "compact"], check=True,
                           env={**os.environ, "AGENTSWEEP_HOME": str(home)},
                           stdout=subprocess.DEVNULL)
            print(f"compacted in {time.perf_counter() - begin:.0f} s", flush=True)
        [(trials,)] = run_sql(root, "SELECT count(*) FROM trials", all_runs=True).rows
        print(f"warehouse: {trials} trials; load average {os.getloadavg()[0]:.1f}", flush=True)
        times = measure(root, args.repeat)
        page = browser_index(root)
        print(f"\n{'request':<38} {'first s':>7} {'then s':>7} {'cpu s':>7}")
        for name, (first, then, cpu) in times.items():
            print(f"{name:<38} {first:>7.2f} {then:>7.2f} {cpu:>7.2f}")
        if page is not None:
            print(f"{'index page in Chromium (drawn)':<38} {'':>7} {page:>7.2f}")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
              f"{os.cpu_count()} cpus")
    finally:
        if args.home is None:
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
