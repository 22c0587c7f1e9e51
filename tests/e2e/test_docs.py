"""Every shell example in docs/ runs as written (on a local stack, reference models only)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import REPO

DOCS = sorted((REPO / "docs").glob("*.md"))
BLOCK = re.compile(r"^```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands(path: Path) -> list[str]:
    return [line for block in BLOCK.findall(path.read_text("utf-8"))
            for line in block.splitlines() if line.strip() and not line.startswith("#")]


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PREFECT_", "RAY_"))}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("docs") / "home"
    subprocess.run(["agentsweep", "up"], env=_env(home), check=True, capture_output=True,
                   timeout=300)
    yield home
    subprocess.run(["agentsweep", "down"], env=_env(home), check=False, capture_output=True,
                   timeout=120)


def test_the_docs_have_examples_to_run() -> None:
    assert sum(len(commands(p)) for p in DOCS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in DOCS if commands(p)], ids=lambda p: p.name)
def test_every_shell_example_runs(stack: Path, path: Path) -> None:
    for command in commands(path):
        done = subprocess.run(["bash", "-c", command], env=_env(stack), cwd=REPO,
                              capture_output=True, text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{path.name}: {command}\n{done.stdout}\n{done.stderr}"
        assert "Traceback" not in done.stderr, f"{path.name}: {command}\n{done.stderr}"
