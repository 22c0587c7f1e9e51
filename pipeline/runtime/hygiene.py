"""Process environment that keeps Ray, Prefect and LiteLLM on loopback and quiet.

Applied once by the CLI (and by tests) before Ray, Prefect or LiteLLM is imported. Values the
user already set win, except the switches that stop traffic to outside addresses.
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings
from pathlib import Path

from pipeline.runtime.startup import PREFECT_START_ENV, default_wait_s
from warehouse.location import Root, parse_location
from warehouse.object_cache import keep_on_disk

# Always forced: nothing we start may phone home.
FORCED = {
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_USAGE_STATS_REPORT_URL": "http://127.0.0.1:9/",
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
}

# Defaults a user may override.
DEFAULTS = {
    "RAY_AUTH_MODE": "disabled",
    "PREFECT_LOGGING_LEVEL": "WARNING",
    # The ephemeral API shares the terminal: a failed request (a full disk under its SQLite
    # database) would print a server traceback there. The client sees the failure and the run
    # reports it in one line; set ERROR to see the server's side.
    "PREFECT_SERVER_LOGGING_LEVEL": "CRITICAL",
    "PREFECT_UI_ENABLED": "false",
    "LITELLM_LOG": "ERROR",
    "RAY_DEDUP_LOGS": "0",
    # Ray starts its workers at nice 15: beside any other work on the machine (another sweep,
    # a test process, an editor's indexer) the trials then wait for whatever else runs. Trials
    # are the work a user started; set RAY_worker_niceness to lower them again.
    "RAY_worker_niceness": "0",
}

# Ray's dashboard probes the cloud metadata address (169.254.169.254) through `requests`
# whatever the usage-stats switch says. Processes of a local Ray started by us get a proxy on a
# dead loopback port, so the probe fails locally; Ray workers get the proxy cleared again
# (see pipeline.execution.executor), so model calls are unaffected.
RAY_START_PROXY = {
    "HTTP_PROXY": "http://127.0.0.1:9",
    "http_proxy": "http://127.0.0.1:9",
    "HTTPS_PROXY": "http://127.0.0.1:9",
    "https_proxy": "http://127.0.0.1:9",
    "NO_PROXY": "127.0.0.1,localhost,::1",
    "no_proxy": "127.0.0.1,localhost,::1",
}

WORKER_ENV = {
    **{key: "" for key in RAY_START_PROXY},
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    "LITELLM_LOG": "ERROR",
}
"""Environment of Ray workers and node services: the proxy of the Ray start-up cleared, and the
offline switches set."""


def agentsweep_home() -> Path:
    return Path(os.environ.get("AGENTSWEEP_HOME", ".agentsweep")).resolve()


def warehouse_root() -> Root:
    """``AGENTSWEEP_WAREHOUSE`` (a folder, or ``s3://bucket/prefix``: warehouse.location), by
    default ``AGENTSWEEP_HOME/warehouse``."""
    named = os.environ.get("AGENTSWEEP_WAREHOUSE", "").strip()
    if not named:
        return agentsweep_home() / "warehouse"
    found = parse_location(named)
    if isinstance(found, Path):
        return found.resolve()
    keep_on_disk(agentsweep_home() / "cache" / "objects")  # what a command read, for the next
    return found


class HomeError(RuntimeError):
    """AGENTSWEEP_HOME cannot be used (it is a file, say)."""


def check_home() -> Path:
    home = agentsweep_home()
    if home.exists() and not home.is_dir():
        raise HomeError(f"AGENTSWEEP_HOME={home} is a file, not a folder: point it at a folder "
                        "(it is created when needed)")
    return home


def apply() -> None:
    """Set the environment for this process and every process it starts."""
    os.environ.update(FORCED)
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
    # Prefect reads its API's start-up wait once, at import: the default for this machine's
    # load now (pipeline.runtime.startup).
    os.environ.setdefault(PREFECT_START_ENV, f"{default_wait_s():.0f}")
    home = agentsweep_home()
    os.environ.setdefault("PREFECT_HOME", str(home / "prefect"))
    # Ray's sockets live under its temp dir (paths must stay short): one per home, not shared.
    tag = hashlib.sha256(str(home).encode()).hexdigest()[:10]
    os.environ.setdefault("RAY_TMPDIR", f"/tmp/agentsweep-ray-{tag}")
    # Prefect wants its home at import; it is made only when a flow is about to run
    # (prepare_prefect_home), so that a refused command leaves nothing behind.
    warnings.filterwarnings("ignore", message="Failed to create the Prefect home directory")


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME", str(agentsweep_home() / "prefect")))


def prepare_prefect_home(home: Path | None = None) -> None:
    """Create Prefect's home only when a flow is about to run (a refused command leaves no
    trace in AGENTSWEEP_HOME); an API a killed run left on its database is stopped; a broken
    Prefect database in it is set aside, said on stderr, and rebuilt by Prefect
    (pipeline.runtime.prefect_state); a home without one gets a migrated copy
    (pipeline.runtime.prefect_template)."""
    from pipeline.runtime.prefect_state import DB_NAME, set_aside_if_broken, stop_orphaned_apis
    from pipeline.runtime.prefect_template import seed_database

    home = home or prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    for pid in stop_orphaned_apis(home):
        sys.stderr.write(f"note: stopped a Prefect API (pid {pid}) that a killed run left "
                         f"running on {home / DB_NAME}\n")
    moved = set_aside_if_broken(home)
    if moved is not None:
        why, where = moved
        sys.stderr.write(f"note: Prefect's database {home / DB_NAME} cannot be used ({why}); "
                         f"moved it to {where} and starting a fresh one (it holds flow-run "
                         "history only: the warehouse is untouched)\n")
        sys.stderr.flush()
    seed_database(home)  # a new database starts migrated (pipeline.runtime.prefect_template)
