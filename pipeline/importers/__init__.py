"""Importers: other benchmarks' data turned into our catalog format (``agentsweep import``).
Everything one benchmark needs to know about its source lives in its own module here."""

from pipeline.importers.tau2 import ImportFailed, import_tau2

__all__ = ["ImportFailed", "import_tau2"]
