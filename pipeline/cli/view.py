"""``agentsweep view [--port P]``: the read-only web viewer over the warehouse
(``reports.view``), on 127.0.0.1 unless ``--host`` says otherwise; prints its address and
answers until Ctrl-C. Texts are redacted as everywhere (pipeline.util.redact); a run counts as
running while a driver holds its run lock (pipeline.execution.runlock)."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from pipeline.errors import ExitCode
from pipeline.execution.runlock import holder_of
from pipeline.util.redact import redactor
from reports.view import ViewOptions, bind, is_loopback, serve


def _lock_held(run_id: str) -> bool:
    return holder_of(run_id) is not None


def view_main(root: Path, host: str, port: int, console: Console, err: Console) -> int:
    try:
        sock = bind(host, port)
    except OSError as exc:
        err.print(f"error: cannot listen on {host}:{port}: {exc.strerror or exc} (choose "
                  "another --port)", markup=False, highlight=False, soft_wrap=True)
        return ExitCode.BAD_INPUT
    hosts: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")
    if not is_loopback(host):  # reached by names we cannot know: any Host is answered
        err.print(f"warning: --host {host} is not loopback: anyone who can reach this "
                  "machine can read the warehouse", markup=False, highlight=False)
        hosts = ("*",)
    options = ViewOptions(root, redactor(), _lock_held, hosts)

    def ready(address: str) -> None:
        console.print(f"agentsweep view: {address} (read-only; Ctrl-C stops it)", markup=False,
                      highlight=False, soft_wrap=True)

    try:
        serve(options, sock, ready)
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    return 0
