"""Pipeline/util."""
