"""Pipeline/runtime."""
