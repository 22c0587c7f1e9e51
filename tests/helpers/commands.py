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


def agentsweep_until_exit(home: Path, *args: str, timeout: float = 600,
                          **extra: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``agentsweep ARGS`` in a fresh process, as ``agentsweep`` does, and how many seconds
    passed between its last line (on either stream) and its exit."""
    import threading
    import time

    process = subprocess.Popen([str(BIN / "agentsweep"), *args], env=clean_env(home, **extra),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    said: dict[str, list[str]] = {"stdout": [], "stderr": []}
    last_line = [time.monotonic()]

    def read(name: str) -> None:
        for line in getattr(process, name):
            said[name].append(line)
            last_line[0] = time.monotonic()

    readers = [threading.Thread(target=read, args=(name,), daemon=True) for name in said]
    for reader in readers:
        reader.start()
    try:
        process.wait(timeout)
    finally:
        if process.poll() is None:
            process.kill()
    exited = time.monotonic()
    for reader in readers:
        reader.join(10)
    done = subprocess.CompletedProcess(process.args, process.returncode,
                                       "".join(said["stdout"]), "".join(said["stderr"]))
    return done, exited - last_line[0]
