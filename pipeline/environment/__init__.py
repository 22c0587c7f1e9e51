"""Pipeline/environment."""
