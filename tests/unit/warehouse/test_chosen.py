"""Which runs the views read without picking each trial's chosen attempt (warehouse.chosen): a
run's table only when its files and its trials files are all marked chosen by compaction; and
every view that picks reads both halves."""

from __future__ import annotations

import re

from warehouse.chosen import ATTEMPT_TABLES, TableFiles, compacted_name, mark_of, split_runs
from warehouse.query import sql_text

C = compacted_name("compact-20261203T000000-abc", 0, "chosen")
A = compacted_name("compact-20261203T000000-abc", 0, "all")
OLD = "compact-20261101T000000-abc-0000.parquet"
PART = "part-0001.parquet"


def test_marks_are_read_from_compacted_names_only() -> None:
    assert [mark_of(n) for n in (C, A, OLD, PART, f"events/run_id=r/{C}")] == [
        "chosen", "all", None, None, "chosen"]
    assert mark_of("part-x-chosen.parquet") is None  # a part file claims nothing


def test_a_table_is_read_as_is_only_where_it_and_the_runs_trials_are_all_chosen() -> None:
    files = {
        "trials": {"r1": [f"t/r1/{C}"], "r2": [f"t/r2/{C}"], "r3": [f"t/r3/{C}", f"t/r3/{PART}"],
                   "r4": [f"t/r4/{A}"]},
        "events": {"r1": [f"e/r1/{C}"], "r2": [f"e/r2/{C}", f"e/r2/{PART}"],
                   "r3": [f"e/r3/{C}"], "r4": [f"e/r4/{C}"], "r5": [f"e/r5/{C}"]},
        "attempts": {"r1": [f"a/r1/{C}"]},
    }
    found = split_runs(files, lambda table, run, _: [f"{table[0]}/{run}/*"])
    assert found["trials"] == TableFiles((f"t/r1/{C}", f"t/r2/{C}"), ("t/r3/*", "t/r4/*"))
    # r2: a part written after compaction; r3: its trials are not all chosen; r4: its trials
    # hold a second attempt; r5: no trials at all (stray rows)
    assert found["events"] == TableFiles((f"e/r1/{C}",), ("e/r2/*", "e/r3/*", "e/r4/*", "e/r5/*"))
    assert found["attempts"] == TableFiles((), ("a/r1/*",))  # no pick: never split


def test_every_view_that_picks_reads_both_halves() -> None:
    views = sql_text("views")
    picked = set(re.findall(r"FROM (\w+)_rest AS \w+\s+SEMI JOIN trials", views))
    assert picked | {"trials"} == set(ATTEMPT_TABLES)
    for table in ATTEMPT_TABLES:
        assert f"FROM {table}_chosen" in views
        assert f"FROM {table}_all" not in views  # a view over every file would pick nothing
