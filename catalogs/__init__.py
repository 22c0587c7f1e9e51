"""Bundled catalogs: one folder per domain (tools, seed state, prompts, scenario suites)."""
