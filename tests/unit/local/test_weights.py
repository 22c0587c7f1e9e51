"""Weights: joined from pinned parts into the cache only when the joined hash matches."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

import pytest

from pipeline.local import catalog
from pipeline.local.catalog import LocalModelSpec, WeightPart, local_model, local_models
from pipeline.local.weights import WeightsError, _part_blocks, gguf_path, requirements_text, verify


def _wheel(folder: Path, package: str, data: bytes) -> None:
    stem = package.replace("-", "_")
    with zipfile.ZipFile(folder / f"{stem}-0.1.0-py3-none-any.whl", "w") as archive:
        archive.writestr(f"{stem}/__init__.py", "")
        archive.writestr(f"{stem}/data/part.bin", data)


def _spec(parts: list[bytes], joined: bytes) -> LocalModelSpec:
    return LocalModelSpec(
        name="tiny", title="t", upstream="u", packaging="p", gguf_bytes=len(joined),
        gguf_sha256=hashlib.sha256(joined).hexdigest(), chat_template="qwen2.5-tools.jinja",
        parts=tuple(WeightPart(package=f"tiny-part{i}", version="0.1.0", wheel_sha256="0" * 64)
                    for i in range(len(parts))))


def test_parts_join_in_manifest_order_and_the_file_is_verified(tmp_path: Path) -> None:
    parts = [b"GGUF-a", b"-bb", b"-ccc"]
    for index, data in enumerate(parts):
        _wheel(tmp_path, f"tiny-part{index}", data)
    spec = _spec(parts, b"".join(parts))
    assert b"".join(_part_blocks(spec, tmp_path)) == b"GGUF-a-bb-ccc"
    target = gguf_path(spec, tmp_path)
    target.write_bytes(b"GGUF-a-bb-ccc")
    verify(spec, target)
    target.write_bytes(b"GGUF-a-bb-ccX")  # same size, other bytes
    with pytest.raises(WeightsError, match="sha256"):
        verify(spec, target)
    target.write_bytes(b"short")
    with pytest.raises(WeightsError, match="bytes, expected"):
        verify(spec, target)


def test_a_missing_part_is_named(tmp_path: Path) -> None:
    _wheel(tmp_path, "tiny-part0", b"a")
    spec = _spec([b"a", b"b"], b"ab")
    with pytest.raises(WeightsError, match="tiny-part1==0.1.0"):
        b"".join(_part_blocks(spec, tmp_path))


def test_every_part_is_pinned_by_hash_for_pip() -> None:
    spec = local_model("local/default")
    lines = requirements_text(spec).splitlines()
    assert len(lines) == len(spec.parts) == 22
    assert all(" --hash=sha256:" in line and "==" in line for line in lines)


def test_names_aliases_and_unknown_models() -> None:
    assert local_model("local/default") is local_model("local/qwen2.5-coder-1.5b")
    assert local_model("local/default").gguf_sha256.startswith("cc324af070c2")
    with pytest.raises(ValueError, match="known: local/default, local/qwen2.5-coder-0.5b"):
        local_model("local/gpt-5")
    assert {m.name for m in local_models()} == {"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"}


def test_the_served_template_fixes_the_doubled_braces() -> None:
    template = local_model("local/default").template_text()
    assert "<tool_call>" in template and '{{\\"name\\"' not in template
    assert catalog.DEFAULT_ALIAS in local_model("local/default").aliases
