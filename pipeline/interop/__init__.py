"""Pipeline/interop."""
