"""benchmarks/side_by_side.py: its tables, and its quick mode's agentsweep half end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "side_by_side.py"
WARM = "1-trial run, warm stack, first over HTTP"
QUICK_ROWS = (
    "marginal CPU per model call, C=64 (ms)", "3 trials, C=64: CPU (s)",
    "3 trials, C=64: wall (s)", "3 trials, C=64: first trial's duration (s)",
    f"{WARM}: first trial (s)", f"{WARM}: its duration (s)", f"{WARM}: CPU (s)",
    "peak summed RSS, 3 trials (MiB)", "processes at that peak",
    "peak summed PSS, 3 trials (MiB)", "`agentsweep up`: wall / CPU (s)",
    "reference server: CPU per model call served, C=64 (ms)")


def _table(stdout: str) -> dict[str, list[str]]:
    cells = [line.strip("|").split("|") for line in stdout.splitlines()
             if line.startswith("| ") and not line.startswith("| measure")]
    return {row[0].strip(): [c.strip() for c in row[1:]] for row in cells}


def test_every_step_gives_its_rows_with_a_ratio_per_row() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import side_by_side as bench
    from side_by_side_table import tables, targets

    def measured(cpu: float) -> bench.Measured:
        return bench.Measured(wall_s=2 * cpu, cpu_s=cpu, peak_rss_mib=100 * cpu,
                              processes_at_peak=3, at_peak_mib={"the command": 100 * cpu},
                              peak_pss_mib=80 * cpu, first_trial_s=cpu / 2,
                              first_trial_duration_s=cpu / 4, model_calls=6, served=6,
                              server_cpu_s=0.012)

    steps = {step.name: 1.0 + index for index, step in
             enumerate(bench.plan(5, [1, 64], quick=False))}
    results = {"agentsweep": {**{s: measured(c) for s, c in steps.items()}, "up": measured(9)},
               "Inspect": {s: measured(2 * c) for s, c in steps.items()}}
    table = _table(tables(results, 5, [1, 64]))
    # many@1 (5.0 CPU-s) beyond warm again (4.0): 1 s over 24 calls; Inspect twice that.
    assert table["marginal CPU per model call, C=1 (ms)"] == ["41.67", "83.33", "0.50"]
    assert table["marginal CPU per model call, C=64 (ms)"] == ["83.33", "166.67", "0.50"]
    assert table["in process: marginal CPU per model call (ms)"] == ["41.67", "83.33", "0.50"]
    assert table["1-trial run, cold: CPU (s)"] == ["1.0", "2.0", "0.50"]
    assert table["peak summed PSS, 5 trials (MiB)"] == ["480", "960", "0.50"]  # many@64: 6.0
    assert table["reference server: CPU per model call served, C=64 (ms)"] == [
        "2.00", "2.00", "1.00"]
    assert table["`agentsweep up`: wall / CPU (s)"] == ["18.0 / 9.0", "-", "-"]
    # HTTP: a marginal row per C, 13 more and `up`; in process: 6; the server: a row per C.
    assert len(table) == (2 + 13 + 1) + 6 + 2
    said = targets(results, 5, [1, 64])
    assert said[0].endswith("C=1 41.67 ms, C=64 83.33 ms")
    assert said[1].endswith("C=1 0.50, C=64 0.50")
    assert said[2] == "peak summed RSS, 5 warm HTTP trials: 600 MiB (target <= 700)"
    # warm (the 3rd step: 3 / 4 s) against in-process again (the 7th: 7 / 4 s)
    assert "took 0.750 s / 1.750 s, 0.4x" in said[3]


def test_the_quick_plan_leaves_out_what_its_rows_do_not_need() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import side_by_side as bench

    assert [s.name for s in bench.plan(3, [64], quick=True)] == ["warm", "many@64"]


@pytest.mark.slow  # it starts `agentsweep up` and two runs on it
def test_the_quick_run_prints_every_row(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--trials", "3"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    table = _table(done.stdout)
    assert list(table) == list(QUICK_ROWS), done.stdout
    assert all(cells and cells[0] not in ("", "nan", "-") for cells in table.values()), done.stdout
    assert ("model calls recorded/served (expected 6 a trial, 18 for 3): agentsweep "
            "warm 6/6, many@64 18/18") in done.stdout
