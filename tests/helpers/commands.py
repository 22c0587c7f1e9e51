"""How tests run the product as a user does: ``agentsweep`` in a fresh process with a clean
environment and its own home, or the command line in-process (typer's runner)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

BIN = Path(sys.executable).parent


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without Prefect, Ray or provider-key settings, with
    ``AGENTSWEEP_HOME`` set to ``home`` and no progress; ``extra`` on top (it may turn progress
    on again)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PREFECT_", "RAY_")) and not k.endswith("_API_KEY")}
    env.update(AGENTSWEEP_HOME=str(home), AGENTSWEEP_PROGRESS="0")
    env.update(extra)
    return env


def agentsweep(home: Path, *args: str, timeout: float = 240,
               **extra: str) -> subprocess.CompletedProcess[str]:
    """``agentsweep ARGS`` in a fresh process (see ``clean_env``)."""
    return subprocess.run([str(BIN / "agentsweep"), *args], env=clean_env(home, **extra),
                          capture_output=True, text=True, timeout=timeout, check=False)


def cli(*args: str) -> tuple[int, str, str]:
    """``agentsweep ARGS`` in this process: exit code, stdout, stderr."""
    from pipeline.cli import app

    result = CliRunner().invoke(app.app, list(args))
    return result.exit_code, result.stdout, result.stderr
