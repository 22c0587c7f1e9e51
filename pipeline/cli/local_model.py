"""``agentsweep local-model``: list, fetch and serve the bundled local models by hand."""

from __future__ import annotations

import signal
import threading
from typing import Annotated

import typer

from pipeline.cli.tables import make_console, print_table
from pipeline.errors import ExitCode
from pipeline.local.names import DEFAULT_MODEL, LOCAL_PROVIDER

# The catalogs, weights and server are imported by the commands that use them: every
# ``agentsweep`` command loads this group, and they cost ~0.1 s (pydantic, the manifest).

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="The bundled local models (llama.cpp on 127.0.0.1, no key needed).")
console = make_console()
err_console = make_console(stderr=True)


def _fail(message: str) -> None:
    err_console.print(f"error: {message}", markup=False, highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.BAD_INPUT)


@app.command(name="list")
def list_models() -> None:
    """The bundled local models, their pinned hashes and whether their weights are cached."""
    from pipeline.local.catalog import local_models
    from pipeline.local.weights import gguf_path, model_cache

    rows = [(spec.model_id, ", ".join(f"{LOCAL_PROVIDER}/{a}" for a in spec.aliases),
             spec.gguf_sha256[:16] + "…", f"{spec.gguf_bytes / 1e9:.2f} GB",
             "yes" if gguf_path(spec).exists() else "no", spec.title) for spec in local_models()]
    print_table(console, ("name", "aliases", "gguf sha256", "size", "cached", "what it is"),
                rows, f"local models (cache: {model_cache()})")


@app.command()
def fetch(
    name: Annotated[str, typer.Argument(help="local/<name> or local/<alias>")] =
        DEFAULT_MODEL,
) -> None:
    """Fetch the pinned parts, join them and check the sha256 (once per machine)."""
    from pipeline.local.catalog import local_model
    from pipeline.local.weights import WeightsError, ensure_weights

    try:
        spec = local_model(name)
        path = ensure_weights(spec, progress=lambda text: console.print(text, markup=False))
    except (ValueError, WeightsError) as exc:
        _fail(str(exc))
    console.print(f"{spec.model_id}: {path} (sha256 {spec.gguf_sha256} verified)",
                  markup=False)


@app.command()
def serve(
    name: Annotated[str, typer.Argument(help="local/<name> or local/<alias>")] =
        DEFAULT_MODEL,
    port: Annotated[int, typer.Option(min=0, max=65535, help="0: any free port.")] = 8766,
    slots: Annotated[int, typer.Option(min=1, help="Requests computed at once.")] = 1,
    threads: Annotated[int, typer.Option(min=1, help="CPU threads.")] = 1,
) -> None:
    """Serve a local model over OpenAI-compatible HTTP on 127.0.0.1 until Ctrl-C."""
    from pipeline.local.catalog import local_model
    from pipeline.local.server import (
        RUNTIME_MISSING,
        LocalModelServer,
        ServeOptions,
        runtime_installed,
    )
    from pipeline.local.weights import WeightsError, ensure_weights

    if not runtime_installed():
        _fail(RUNTIME_MISSING)
    try:
        spec = local_model(name)
        path = ensure_weights(spec, progress=lambda text: console.print(text, markup=False))
    except (ValueError, WeightsError) as exc:
        _fail(str(exc))
    options = ServeOptions(port=port, slots=slots, threads=threads)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        server = LocalModelServer(spec, path, options).start()
    except OSError as exc:
        _fail(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}")
    console.print(f"serving {spec.model_id} on {server.api_base} (LiteLLM: "
                  f"model='openai/{spec.name}', api_base='{server.api_base}', api_key='no-key'); "
                  "Ctrl-C stops", markup=False)
    try:
        stop.wait()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    console.print("stopped")
