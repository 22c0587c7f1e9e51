"""Refusals that need no provider arrive before LiteLLM is imported (its import costs seconds):
an unknown LiteLLM prefix, an unknown reference model, a missing key. Each runs the command line
in a fresh interpreter (this one has LiteLLM loaded already) and reads its ``sys.modules``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO
from helpers.commands import clean_env

from pipeline.models.litellm_prefixes import LITELLM_PREFIXES, unknown_prefix

PROBE = """
import sys
from typer.testing import CliRunner
from pipeline.cli import app
result = CliRunner().invoke(app.app, ["run", "--model", sys.argv[1]])
print(result.exit_code, "litellm" in sys.modules)
print(result.stderr)
"""


@pytest.mark.parametrize(("model", "said"), [
    ("nosuchprovider/x", "--model nosuchprovider/x: LiteLLM knows no provider for it"),
    ("reference/nosuch", "unknown reference model 'reference/nosuch'"),
    ("openai/gpt-4o-mini", "--model openai/gpt-4o-mini: set OPENAI_API_KEY in the environment"),
])
def test_a_refusal_needing_no_provider_never_imports_litellm(tmp_path: Path, model: str,
                                                             said: str) -> None:
    done = subprocess.run([sys.executable, "-c", PROBE, model], env=clean_env(tmp_path / "home"),
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    first, _, err = done.stdout.partition("\n")
    assert first == "2 False", done.stdout + done.stderr
    assert said in " ".join(err.split())


def test_the_prefix_table_agrees_with_litellm() -> None:
    """Every provider LiteLLM knows, and nothing else: regenerate the table after an upgrade."""
    from litellm.llms.openai_like.json_loader import JSONProviderRegistry

    from pipeline.models.client import litellm_module

    litellm = litellm_module()
    JSONProviderRegistry.load()
    known = {getattr(p, "value", p) for p in litellm.provider_list}
    assert LITELLM_PREFIXES == known | set(JSONProviderRegistry._providers)
    assert unknown_prefix("nosuchprovider/x") == "nosuchprovider"
    assert unknown_prefix("openai/gpt-4o-mini") is None and unknown_prefix("gpt-4o") is None
