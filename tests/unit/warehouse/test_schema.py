"""Generated artifacts must not drift from their one source."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.catalog import catalogs_root
from pipeline.catalog.schema import generated_files
from warehouse.schema import SCHEMA_VERSION, TABLES, describe_json

REPO = Path(__file__).resolve().parents[3]


def test_catalog_json_schema_files_match_the_pydantic_models() -> None:
    for name, text in generated_files().items():
        path = catalogs_root() / "schema" / name
        assert path.read_text("utf-8") == text, f"{path} drifted: run agentsweep schema --write"


def test_warehouse_golden_file_matches_the_schema_source() -> None:
    golden = REPO / "warehouse" / "golden" / f"schema_v{SCHEMA_VERSION}.json"
    assert golden.read_text("utf-8") == describe_json(), "schema changed: bump SCHEMA_VERSION"


def test_every_table_carries_schema_version_and_arrow_schema_derives() -> None:
    described = json.loads(describe_json())["tables"]
    for name, table in TABLES.items():
        arrow = table.arrow_schema()
        assert arrow.names[0] == "schema_version"
        assert arrow.names == [c["name"] for c in described[name]["columns"]]
        assert arrow.metadata[b"schema_version"] == str(SCHEMA_VERSION).encode()


def test_trials_has_the_required_columns() -> None:
    required = {
        "run_id", "trial_id", "scenario_id", "scenario_version", "scenario_sha256", "suite_id",
        "domain", "model", "provider", "model_version", "temperature", "prompt_id",
        "prompt_sha256", "tools_sha256", "memory_mode", "repeat", "status", "passed",
        "input_tokens", "output_tokens", "cost_usd", "latency_ms", "started_at", "finished_at",
        "code_version",
    }
    assert required <= set(TABLES["trials"].column_names)
    nullable = {c.name for c in TABLES["trials"].columns if c.nullable}
    assert {"model_version", "input_tokens", "output_tokens", "cost_usd"} <= nullable
