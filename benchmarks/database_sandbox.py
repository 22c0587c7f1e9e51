"""Cost of the database sandbox (the three-errors method): `.venv/bin/python
benchmarks/database_sandbox.py`

Prints, for the bundled orders domain and for a synthetic database of N document rows (a
JSON column, like a converted document store; default 1,550 rows of ~1.8 KB, about the size of
tau2's retail db.json), the time to give a trial its own copy (SQLite backup from the
per-process template), to snapshot it, and to count one write's effects (the content of every
table before and after the call).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import replace

from pipeline.catalog import load_domain
from pipeline.environment.database import changed_rows, content, fresh_database, snapshot


def _timed(action: Callable[[], object], runs: int) -> tuple[float, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), max(times)


def _synthetic_sql(rows: int) -> str:
    document = json.dumps({"items": [{"sku": f"SKU-{i:03}", "qty": i, "note": "x" * 40}
                                     for i in range(20)], "status": "pending"})
    values = ",\n".join(f"('d{i}', '{document}')" for i in range(rows))
    return f"CREATE TABLE docs (id TEXT PRIMARY KEY, data TEXT NOT NULL);\n" \
           f"INSERT INTO docs VALUES\n{values};"


def _report(label: str, domain: object, runs: int) -> None:
    copy_ms = _timed(lambda: fresh_database(domain), runs)  # type: ignore[arg-type]
    db = fresh_database(domain)  # type: ignore[arg-type]
    snap_ms = _timed(lambda: snapshot(db), runs)

    def one_write() -> None:
        before = content(db)
        table = next(iter(before))
        db.execute(f'UPDATE "{table}" SET rowid = rowid WHERE rowid = 1')
        changed_rows(before, content(db))
    write_ms = _timed(one_write, runs)
    size = sum(len(str(r)) for t in snapshot(db).values() for r in t["rows"])
    print(f"{label}: {size / 1e6:.2f} MB of rows; per-trial copy median {copy_ms[0]:.2f} ms "
          f"(max {copy_ms[1]:.2f}); snapshot {snap_ms[0]:.1f} ms; effects of one write "
          f"{write_ms[0]:.1f} ms")


def main(rows: int) -> None:
    orders = load_domain("orders")
    _report("orders (3 rows)", orders, 200)
    big = replace(orders, database_sql=_synthetic_sql(rows))
    _report(f"synthetic ({rows} document rows)", big, 20)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1550)
