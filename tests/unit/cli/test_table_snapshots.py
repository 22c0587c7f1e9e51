"""Every terminal table at 80 and 200 columns, compared exactly with its snapshot under
``snapshots/`` (``AGENTSWEEP_UPDATE_SNAPSHOTS=1`` writes them again; read the diff before
committing). At 80 columns no line is wider than the terminal, every table stays a table (never
a ``column: value`` block per row) and no id, model or scenario wraps: it is whole, or cut with
``…``."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from helpers.table_fixtures import BASE, CAND, LONG_SCENARIO, MUTANT, map_group, write_runs

from pipeline.cli.decide import compare_main
from pipeline.cli.tables import make_console, print_rows, print_summary, print_table
from pipeline.decide.decision import DecideOptions
from reports.failure_map import map_table
from reports.pass_hat_k import load_pass_hat_k
from warehouse.query import run_named

SNAPSHOTS = Path(__file__).parent / "snapshots"
WIDTHS = (80, 200)


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("tables") / "warehouse"
    write_runs(root)
    return root


def _report(name: str) -> Callable[[Path], None]:
    def show(root: Path) -> None:
        result = run_named(root, name, {"run_id": BASE})
        print_rows(make_console(), result.columns, result.rows, "table",
                   title=f"{name}, run {BASE}")
    return show


def _pass_hat_k(root: Path) -> None:
    """As the command prints it: the rows without the left-out columns, then the note."""
    found = load_pass_hat_k(root, BASE)
    columns, rows = found.table()
    print_rows(make_console(), columns, rows, "table", title=f"pass_hat_k, run {BASE}")
    assert found.note() is None


def _runs(root: Path) -> None:
    result = run_named(root, "runs_list")
    print_rows(make_console(), result.columns, result.rows, "table", title="runs")


def _summary(root: Path) -> None:
    result = run_named(root, "summary", {"run_id": BASE})
    print_summary(make_console(), result.columns, result.rows, f"pass rate, run {BASE}")


def _failure_map(root: Path) -> None:
    table = map_table(map_group())
    print_table(make_console(), table.columns, table.rows, table.title, table.row_styles)


def _compare(root: Path) -> None:
    console = make_console()
    assert compare_main(root, DecideOptions(BASE, CAND), console, console) == 0


TABLES: dict[str, Callable[[Path], None]] = {
    "runs": _runs, "summary": _summary, "matrix": _report("matrix"),
    "first_violations": _report("first_violations"), "pass_hat_k": _pass_hat_k,
    "failure_reasons": _report("failure_reasons"), "failure_map": _failure_map,
    "compare": _compare,
}


def _render(name: str, width: int, root: Path, monkeypatch: pytest.MonkeyPatch,
            capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setenv("COLUMNS", str(width))
    capsys.readouterr()
    TABLES[name](root)
    return capsys.readouterr().out


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name", sorted(TABLES))
def test_every_table_matches_its_snapshot(name: str, width: int, root: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = _render(name, width, root, monkeypatch, capsys)
    snapshot = SNAPSHOTS / f"{name}-{width}.txt"
    if os.environ.get("AGENTSWEEP_UPDATE_SNAPSHOTS") == "1":
        snapshot.write_text(out, "utf-8")
    assert out == snapshot.read_text("utf-8")
    # the gate's verdict lines soft-wrap (a command stays one line to copy); tables never do
    said = re.compile(r"gate preview: |  - |  note: ")
    assert max(len(line) for line in out.splitlines() if not said.match(line)) <= width
    assert "\x1b" not in out


@pytest.mark.parametrize("name", ["runs", "summary", "matrix", "first_violations",
                                  "pass_hat_k", "compare"])
def test_at_80_columns_models_and_scenarios_are_whole_or_cut_never_wrapped(
        name: str, root: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = _render(name, 80, root, monkeypatch, capsys)
    shown = {cut for line in out.splitlines() for cut in re.findall(r"│ (\S+) +(?=│)", line)}
    ids = [MUTANT] if name in ("runs", "pass_hat_k") else [MUTANT, LONG_SCENARIO]
    title = out.split("┏")[0]  # a column with one value on every row is said there
    for whole in ids:  # runs and pass_hat_k name no scenario
        assert whole in title or any(whole == s or (s.endswith("…") and whole.startswith(s[:-1]))
                                     for s in shown), (whole, shown)
    assert not re.search(r"reference/mutant-stale-val?u?e?\s*[│|]\s*$", out, re.MULTILINE)


def test_a_table_too_wide_for_80_columns_stays_a_table(root: Path,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    narrow = _render("first_violations", 80, root, monkeypatch, capsys)
    wide = _render("first_violations", 200, root, monkeypatch, capsys)
    assert "┃ scenario_id" in narrow and "model:" not in narrow
    assert "(memory_mode chat; not shown: first_violation_step, trials, of_repeats)" in " ".join(
        narrow.split())
    assert "┃ scenario_id" in wide and "not shown" not in wide and "┃ of_repeats" in wide


def test_the_failure_map_says_it_counts_failures(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str],
                                                 tmp_path: Path) -> None:
    out = _render("failure_map", 200, tmp_path, monkeypatch, capsys)
    assert "failure map, failures k/n" in out and "1/10" in out


def test_compare_previews_the_gate_and_names_the_command(root: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]
                                                         ) -> None:
    out = _render("compare", 200, root, monkeypatch, capsys)
    assert "gate preview: " in out
    assert f"`agentsweep gate {CAND} --baseline {BASE}` applies it (exit" in out
    assert "\ngate: " not in out


def test_an_atom_is_cut_with_an_ellipsis_only_when_the_table_would_not_fit_whole(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    check = "argument:*.starts_at=" + '"2026-08-07T16:00:00+03:00"@2..' + "x" * 10
    rows = [("C2", MUTANT, check, 3)]

    def show(width: int) -> str:
        monkeypatch.setenv("COLUMNS", str(width))
        capsys.readouterr()
        print_table(make_console(), ("scenario_id", "model", "check", "trials"), rows)
        return capsys.readouterr().out

    assert check in show(200)
    narrow = show(110)  # whole it needs 120 columns; cut at 48 cells, 106
    assert check not in narrow and check[:47] + "…" in narrow and MUTANT in narrow
    assert max(len(line) for line in narrow.splitlines()) <= 110
    narrowest = show(80)  # a table still: the ids cut further, a header wraps at ``_``
    assert "┃ scenario_" in narrowest and check[:15] in narrowest and "check:" not in narrowest
    assert max(len(line) for line in narrowest.splitlines()) <= 80
