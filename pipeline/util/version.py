"""The code version stamped on every row: package version plus git commit when known."""

from __future__ import annotations

import hashlib
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
    root = Path(__file__).resolve().parents[2]  # the checkout: pipeline/util/version.py
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


PACKAGES = ("pipeline", "flows", "catalogs", "warehouse")


@cache
def source_fingerprint() -> str:
    """A hash of this process's code: every module file's path, size and mtime (a dirty tree
    changes it as a commit would). Warm workers are matched to the code by it."""
    root = Path(__file__).resolve().parents[2]  # the checkout: pipeline/util/version.py
    digest = hashlib.sha256(code_version().encode())
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            stat = path.stat()
            digest.update(f"{path.relative_to(root)}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    return digest.hexdigest()
