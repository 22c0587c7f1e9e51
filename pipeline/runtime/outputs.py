"""Where an export may write: only where the user points, never over our own data.

Every file a command writes at the user's word (``sql --output``, ``export tau2 --out``,
``judge export -o``, ``checks export -o``, ``report html -o``, ``--junit``) passes
``check_output`` first: a path inside ``AGENTSWEEP_HOME`` or the warehouse (links resolved) is
refused, and so is an existing file unless ``--force`` was given. The check runs before
anything is computed or written.
"""

from __future__ import annotations

from pathlib import Path

from pipeline.runtime.hygiene import agentsweep_home, warehouse_root


class OutputRefused(ValueError):
    """A command was told to write where it must not. ``str()`` names the option and path."""


def check_output(path: Path, option: str, force: bool = False) -> Path:
    """``path`` (user-expanded, links resolved) if ``option`` may write there; OutputRefused
    when it lies inside our data or, without ``force``, is an existing file or a folder."""
    real = path.expanduser().resolve()
    for what, guarded in (("the warehouse", warehouse_root()),
                          ("AGENTSWEEP_HOME", agentsweep_home())):
        if not isinstance(guarded, Path):  # object storage: no local file can be inside it
            continue
        root = guarded.resolve()
        if real.is_relative_to(root):
            raise OutputRefused(f"{option} {path}: inside {what} ({root}), which agentsweep "
                                "keeps itself: write the export somewhere else")
    if real.is_dir():
        raise OutputRefused(f"{option} {path}: is a folder; name the file to write")
    if real.exists() and not force:
        raise OutputRefused(f"{option} {path}: the file exists; pass --force to replace it")
    return real
