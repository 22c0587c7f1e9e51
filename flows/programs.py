"""What the flow programs (``python -m flows.nightly``, ``python -m flows.model_swap``) share
with ``agentsweep run`` in the terminal: progress said once, and a served deployment that says
where it is served and when it runs next."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from prefect.deployments.runner import RunnerDeployment
from prefect.server.schemas.schedules import CronSchedule
from prefect.settings import PREFECT_API_URL, PREFECT_UI_URL

from pipeline.runtime.logs import keep_run_logs_off_the_terminal


def quiet_flow_logs() -> None:
    """Progress lines are printed by the program; the same lines in the flow runs' logs (the
    UI's, ``prefect flow-run logs``) are not printed a second time."""
    keep_run_logs_off_the_terminal()


def next_run(cron: str, now: datetime | None = None) -> datetime:
    """When a deployment on ``cron`` (UTC) runs next, as Prefect schedules it."""
    schedule = CronSchedule(cron=cron, timezone="UTC")
    [found] = asyncio.run(schedule.get_dates(1, start=now or datetime.now(UTC)))
    return found.astimezone(UTC)


def serve_deployment(deployment: RunnerDeployment, cron: str) -> None:
    """Say where the deployment is served and when it runs next, then serve it until
    stopped (its runs print their verdict into this log)."""
    from prefect import serve

    api = PREFECT_API_URL.value() or "an ephemeral API (set PREFECT_API_URL to a server)"
    ui = PREFECT_UI_URL.value()
    print(f"serving deployment {deployment.flow_name}/{deployment.name} on the Prefect API at "
          f"{api}" + (f" (UI: {ui})" if ui else "") + f"; cron {cron!r} (UTC): next run at "
          f"{next_run(cron):%Y-%m-%d %H:%M} UTC", flush=True)
    serve(deployment, print_starting_message=False)
