"""The code version stamped on every row: package version plus git commit when known."""

from __future__ import annotations

import subprocess
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


@cache
def code_version() -> str:
    try:
        base = version("agentsweep")
    except PackageNotFoundError:
        base = "0+unknown"
    commit = _git_commit()
    return f"{base}+g{commit}" if commit else base


def _git_commit() -> str | None:
    root = Path(__file__).resolve().parent.parent
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    status = ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"]
    dirty = subprocess.run(status, capture_output=True, text=True, timeout=5,
                           check=False).stdout.strip()
    return out.stdout.strip() + (".dirty" if dirty else "")
