"""Compare and gate over stored runs (reports/ does the statistics)."""
