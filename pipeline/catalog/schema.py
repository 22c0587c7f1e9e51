"""JSON Schema of catalog files, generated from the pydantic models (the one source)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from pipeline.catalog.condition_models import ConditionStyle, ConditionTask
from pipeline.catalog.models import Case, ReferenceReplies, Scenario, ToolCatalog
from warehouse.atomic import write_text

SCHEMA_FILES: dict[str, type[BaseModel]] = {
    "scenario.schema.json": Scenario,
    "case.schema.json": Case,
    "tools.schema.json": ToolCatalog,
    "reference_replies.schema.json": ReferenceReplies,
    "condition_task.schema.json": ConditionTask,
    "conditions.schema.json": ConditionStyle,
}


@cache
def scenario_schema() -> dict[str, Any]:
    schema = Scenario.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema


def generated_files() -> dict[str, str]:
    """File name -> text of every generated schema file under catalogs/schema/."""
    out: dict[str, str] = {}
    for name, model in SCHEMA_FILES.items():
        schema = model.model_json_schema(by_alias=True)
        schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
        out[name] = json.dumps(schema, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return out


def write_schema_files(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in generated_files().items():
        path = directory / name
        write_text(path, text)
        written.append(path)
    return written
