"""Pipeline/user."""
