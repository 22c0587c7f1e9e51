"""The ``snapshots`` and ``diagnostics`` rows of a database trial (the three-errors method), and a
trace's
snapshots read back from stored rows (for offline rescoring)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pipeline.catalog.database_models import DatabaseRules, DiagnosticName
from pipeline.util.hashing import sha256_text
from warehouse.rows import DiagnosticRow, SnapshotRow, TrialKey


def snapshot_rows(key: TrialKey, snapshots: Mapping[str, Mapping[str, Any]]
                  ) -> list[SnapshotRow]:
    rows = []
    for phase, tables in snapshots.items():
        for table, content in tables.items():
            text = json.dumps(content["rows"], ensure_ascii=False, sort_keys=True, default=str)
            rows.append(SnapshotRow(
                run_id=key.run_id, trial_id=key.trial_id, attempt_id=key.attempt_id,
                phase=phase, table_name=table, key_columns=list(content["key"]),
                rows_json=text, sha256=sha256_text(text)))
    return rows


def snapshots_of(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Stored ``snapshots`` rows of one trial back as a trace's snapshots."""
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        content = json.loads(str(row["rows_json"]))
        columns = list(content[0]) if content else []
        out.setdefault(str(row["phase"]), {})[str(row["table_name"])] = {
            "key": list(row["key_columns"]), "columns": columns, "rows": content}
    return out


def diagnostic_rows(key: TrialKey, rules: DatabaseRules,
                    values: Mapping[DiagnosticName, bool | None]) -> list[DiagnosticRow]:
    return [DiagnosticRow(run_id=key.run_id, trial_id=key.trial_id, attempt_id=key.attempt_id,
                          name=name, value=value, required=name in rules.requires)
            for name, value in values.items()]
