"""Catalog roots are a boundary: a domain is a plain name found inside them, its Python is never
imported from a path a suite line names, a link out of a root is refused, and an import that
hangs is stopped with the file's name."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers.commands import agentsweep, cli
from helpers.outside_domain import SCENARIOS, make_domain

from pipeline.catalog import CatalogError, load_domain, load_suite, set_extra_roots
from pipeline.catalog.domains import domain_folder


@pytest.fixture(autouse=True)
def _no_extra_roots() -> Iterator[None]:
    yield
    set_extra_roots([])


def _hostile(tmp_path: Path) -> tuple[Path, Path]:
    """A domain folder outside every catalog root whose tools.py writes a marker when
    imported: (its folder, the marker)."""
    make_domain(tmp_path / "elsewhere")
    folder = tmp_path / "elsewhere" / "helpdesk"
    marker = tmp_path / "MARKER"
    (folder / "tools.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n"
                                     + (folder / "tools.py").read_text())
    return folder, marker


def _suite_naming(tmp_path: Path, domain: str) -> Path:
    suite = tmp_path / "suite.jsonl"
    lines = [dict(SCENARIOS[0], id="OK1"), dict(SCENARIOS[1], domain=domain)]
    suite.write_text("".join(json.dumps(s, ensure_ascii=False) + "\n" for s in lines))
    return suite


@pytest.mark.parametrize("how", ["absolute", "relative"])
def test_a_domain_named_by_a_path_exits_2_naming_the_line_and_never_imports(
        tmp_path: Path, how: str) -> None:
    folder, marker = _hostile(tmp_path)
    make_domain(tmp_path / "root")  # a real helpdesk in a catalog root, for the first line
    (tmp_path / "root" / "helpdesk" / "suites" / "desk.jsonl").unlink()
    named = str(folder) if how == "absolute" else "../" * 12 + str(folder).lstrip("/")
    suite = _suite_naming(tmp_path, named)
    code, out, err = cli("lint-suite", "--catalog", str(tmp_path / "root"), "--suite",
                         str(suite))
    assert code == 2, out + err
    assert f"{suite}:2: domain: " in err
    assert "is not a domain name" in err
    assert not marker.exists()


def test_a_link_in_a_catalog_root_to_a_folder_outside_it_is_refused(tmp_path: Path) -> None:
    folder, marker = _hostile(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    (root / "helpdesk").symlink_to(folder, target_is_directory=True)
    set_extra_roots([root])
    with pytest.raises(CatalogError) as caught:
        load_suite(_suite_naming(tmp_path, "helpdesk"))
    assert (caught.value.line, caught.value.field) == (1, "domain")
    assert "outside" in caught.value.message and str(folder) in caught.value.message
    with pytest.raises(CatalogError, match="outside"):
        domain_folder("helpdesk")
    assert not marker.exists()


def test_a_tools_py_linked_out_of_its_domain_is_refused(tmp_path: Path) -> None:
    folder, marker = _hostile(tmp_path)
    make_domain(tmp_path / "root")
    inner = tmp_path / "root" / "helpdesk"
    (inner / "tools.py").unlink()
    (inner / "tools.py").symlink_to(folder / "tools.py")
    with pytest.raises(CatalogError) as caught:
        load_domain("helpdesk", inner)
    assert caught.value.path == str(inner / "tools.py")
    assert "outside" in caught.value.message
    assert not marker.exists()


@pytest.mark.parametrize("name", ["Helpdesk", "help-desk", "1desk", "", "a" * 65, "x/y", ".."])
def test_only_plain_identifiers_name_a_domain(name: str) -> None:
    with pytest.raises(CatalogError, match="is not a domain name"):
        domain_folder(name)


@pytest.mark.parametrize("prompt", ["../../x", "/etc/passwd", "a/b"])
def test_a_prompt_named_by_a_path_is_refused(prompt: str) -> None:
    with pytest.raises(CatalogError, match="is not a prompt name"):
        load_domain("meeting_rooms").prompt(prompt)


@pytest.mark.slow  # starts an agentsweep process
def test_a_domain_whose_import_hangs_is_stopped_naming_its_file(tmp_path: Path) -> None:
    suite = make_domain(tmp_path / "root")
    tools = tmp_path / "root" / "helpdesk" / "tools.py"
    tools.write_text("import time\ntime.sleep(120)\n" + tools.read_text())
    started = time.monotonic()
    run = agentsweep(tmp_path / "home", "lint-suite", "--catalog", str(tmp_path / "root"),
                     "--suite", str(suite), timeout=60, AGENTSWEEP_DOMAIN_IMPORT_S="1")
    assert run.returncode == 2, run.stdout + run.stderr
    assert f"{tools}: importing it took longer than 1 s" in run.stderr
    assert time.monotonic() - started < 40


def test_a_domain_whose_import_fails_names_its_file(tmp_path: Path) -> None:
    make_domain(tmp_path / "root")
    tools = tmp_path / "root" / "helpdesk" / "tools.py"
    tools.write_text("raise RuntimeError('no network here')\n")
    with pytest.raises(CatalogError) as caught:
        load_domain("helpdesk", tools.parent)
    assert caught.value.path == str(tools)
    assert caught.value.message == "RuntimeError: no network here"
