"""Other benchmarks' formats: tau2-bench's tasks imported as our catalogs, our runs exported
as tau2 results."""
