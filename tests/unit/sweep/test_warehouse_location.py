"""Where a sweep's warehouse is: AGENTSWEEP_WAREHOUSE (a folder or s3://bucket/prefix) or a
spec's ``warehouse:``, by default AGENTSWEEP_HOME/warehouse as always."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pipeline.catalog import CatalogError
from pipeline.runtime import hygiene
from pipeline.sweep.spec import load_spec
from warehouse.location import S3Location


def test_the_default_is_the_home_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTSWEEP_WAREHOUSE", raising=False)
    assert hygiene.warehouse_root() == hygiene.agentsweep_home() / "warehouse"


def test_agentsweep_warehouse_names_a_bucket_or_a_folder(monkeypatch: pytest.MonkeyPatch,
                                                         tmp_path: Path) -> None:
    monkeypatch.setenv("AGENTSWEEP_WAREHOUSE", "s3://evals-bucket/nightly/wh")
    assert hygiene.warehouse_root() == S3Location("evals-bucket", "nightly/wh")
    monkeypatch.setenv("AGENTSWEEP_WAREHOUSE", str(tmp_path / "wh"))
    assert hygiene.warehouse_root() == tmp_path / "wh"


def _spec(tmp_path: Path, warehouse: str) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(textwrap.dedent(f"""\
        models: [reference/golden]
        warehouse: {warehouse}
        """), "utf-8")
    return path


def test_a_spec_names_its_warehouse(tmp_path: Path) -> None:
    config = load_spec(_spec(tmp_path, "s3://evals-bucket/wh"), tmp_path / "default")
    assert config.warehouse == S3Location("evals-bucket", "wh")
    config = load_spec(_spec(tmp_path, "runs/wh"), tmp_path / "default")
    assert config.warehouse == (tmp_path / "runs" / "wh").resolve()  # relative to the spec
    assert load_spec(_spec(tmp_path, "null"), tmp_path / "default").warehouse == (
        tmp_path / "default")


def test_a_bad_bucket_in_a_spec_names_line_and_field(tmp_path: Path) -> None:
    path = _spec(tmp_path, "s3://Bad_Bucket/wh")
    with pytest.raises(CatalogError) as caught:
        load_spec(path, tmp_path / "default")
    assert (caught.value.line, caught.value.field) == (2, "warehouse")
    assert "s3://bucket/prefix" in caught.value.message
