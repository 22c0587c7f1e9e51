"""Prefect's run logs and the terminal: the flow runs' lines reach Prefect's API (its database
and UI) but not the terminal of a program that prints its own progress and outcome."""

from __future__ import annotations

import logging

RUN_LOGS = ("prefect.flow_runs", "prefect.task_runs", "prefect.events",
            "prefect._internal.concurrency")
"""Loggers whose lines reach Prefect's API but not the terminal: the flow's own news, and
its event and lease services, which only speak when the API went away (the run then says so
in one line, pipeline.runtime.probe)."""


class _NotRunLogs(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.name.startswith(RUN_LOGS)


def keep_run_logs_off_the_terminal() -> None:
    """Prefect's flow- and task-run log lines still reach its API but not the terminal: the
    program prints the run's progress and outcome itself, and an unexpected exception once
    (Prefect would add a traceback of its own, a full disk's among them). A log line the API
    cannot store is dropped silently, as the standard library does in production."""
    logging.raiseExceptions = False  # Prefect's API log handler checks this before printing
    # The root's handlers, and those of prefect._internal (it does not propagate).
    for logger in (logging.getLogger(), logging.getLogger("prefect._internal")):
        for handler in logger.handlers:
            if not any(isinstance(f, _NotRunLogs) for f in handler.filters):
                handler.addFilter(_NotRunLogs())
