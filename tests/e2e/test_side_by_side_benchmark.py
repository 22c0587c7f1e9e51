"""benchmarks/side_by_side.py: its quick mode's agentsweep half prints every row of the table."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "side_by_side.py"
ROWS = ("marginal CPU per model call (ms)", "5 trials, warm stack: CPU (s)",
        "5 trials, warm stack: wall (s)", "1-trial run, cold: first trial (s)",
        "1-trial run, cold: wall (s)", "1-trial run, cold: CPU (s)",
        "1-trial run, warm, first on the stack: first trial (s)",
        "1-trial run, warm, first on the stack: CPU (s)",
        "1-trial run, warm, again: first trial (s)", "1-trial run, warm, again: CPU (s)",
        "peak summed RSS, 5 trials (MiB)", "processes at that peak",
        "peak summed PSS, 5 trials (MiB)", "`agentsweep up`: wall / CPU (s)")


def _table(stdout: str) -> dict[str, list[str]]:
    cells = [line.strip("|").split("|") for line in stdout.splitlines()
             if line.startswith("| ") and not line.startswith("| measure")]
    return {row[0].strip(): [c.strip() for c in row[1:]] for row in cells}


def test_the_table_has_a_row_per_measure_and_a_ratio_per_row() -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    import side_by_side as bench

    def measured(cpu: float) -> bench.Measured:
        return bench.Measured(wall_s=2 * cpu, cpu_s=cpu, peak_rss_mib=100 * cpu,
                              processes_at_peak=3, at_peak_mib={"the command": 100 * cpu},
                              peak_pss_mib=80 * cpu, first_trial_s=cpu / 2, model_calls=6)

    steps = {"cold": 4.0, "warm": 2.0, "warm again": 1.0, "many": 1.6}
    results = {"agentsweep": {**{s: measured(c) for s, c in steps.items()}, "up": measured(9)},
               "Inspect": {s: measured(c / 2) for s, c in steps.items()}}
    table = _table(bench.table(results, 5))
    assert list(table) == list(ROWS)
    assert table["marginal CPU per model call (ms)"] == ["25.00", "12.50", "2.00"]  # 600/24
    assert table["peak summed PSS, 5 trials (MiB)"] == ["128", "64", "2.00"]  # 80 x 1.6
    assert table["`agentsweep up`: wall / CPU (s)"] == ["18.0 / 9.0", "-", "-"]


@pytest.mark.slow  # it starts Prefect, a local Ray (cold) and `agentsweep up`
def test_the_quick_run_prints_every_row(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--trials", "5"], env=env,
                          capture_output=True, text=True, timeout=600, cwd=tmp_path, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    table = _table(done.stdout)
    assert list(table) == list(ROWS), done.stdout
    assert all(cells and cells[0] not in ("", "nan") for cells in table.values()), done.stdout
    assert ("model calls served (expected 6 a trial, 30 for 5): agentsweep cold 6, warm 6, "
            "warm again 6, many 30") in done.stdout
