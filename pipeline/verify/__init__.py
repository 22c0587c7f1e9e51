"""Pipeline/verify."""
