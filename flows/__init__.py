"""Prefect flows: thin orchestration over pipeline functions."""
