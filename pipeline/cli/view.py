"""``agentsweep view [--port P]``: the read-only web viewer over the warehouse
(``reports.view``), on 127.0.0.1 unless ``--host`` says otherwise; prints its address and
answers until Ctrl-C. Texts are redacted as everywhere (pipeline.util.redact); a run counts as
running while a driver holds its run lock (pipeline.execution.runlock)."""

from __future__ import annotations

from rich.console import Console

from pipeline.errors import ExitCode
from pipeline.execution.runlock import holder_of_run
from pipeline.util.redact import redactor
from reports.view import ViewOptions, bind, is_loopback, serve
from warehouse.location import Root


def view_main(root: Root, host: str, port: int, console: Console, err: Console) -> int:
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
    def lock_held(run_id: str) -> bool:  # the lock file, or the lease on object storage
        return holder_of_run(run_id, root) is not None

    options = ViewOptions(root, redactor(), lock_held, hosts)

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
