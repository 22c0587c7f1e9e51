"""A mistaken command-line option is said in the plain words of a spec's errors, with "did you
mean" its closest value, every mistaken option on the one line; a mistyped model name (reference,
local, or a provider prefix) gets its closest names first, not a list of every name."""

from __future__ import annotations

from conftest import MEETING_SUITE
from helpers.commands import cli


def test_unknown_option_values_get_plain_words_and_a_suggestion() -> None:
    code, _, err = cli("run", "--suite", str(MEETING_SUITE), "--memory-mode", "chats",
                       "--tools", "mocks")
    assert code == 2
    line = " ".join(err.split())
    assert line == ("error: --memory-mode: 'chats' is not one of chat, summary, structured; "
                    "did you mean 'chat'?; --tools: 'mocks' is not one of sandbox, mock; did "
                    "you mean 'mock'?")
    assert "Input should be" not in err


def test_a_value_out_of_range_names_the_option_its_bound_and_the_value() -> None:
    code, _, err = cli("run", "--suite", str(MEETING_SUITE), "--timeout-s", "-1")
    assert code == 2
    assert err.strip() == "error: --timeout-s: must be greater than 0.0, got -1.0"


def test_a_mistyped_reference_model_gets_its_closest_names_not_all_of_them() -> None:
    code, _, err = cli("run", "--model", "reference/goldn")
    assert code == 2
    line = " ".join(err.split())
    assert ("error: --model: unknown reference model 'reference/goldn'; did you mean "
            "reference/golden? (") in line
    assert "reference/mutant-stale-value" not in line and "--model reference/ lists them" in line
    code, _, err = cli("run", "--model", "reference/")
    assert code == 2 and "reference/golden, reference/judge-broken" in " ".join(err.split())


def test_a_mistyped_provider_prefix_gets_the_model_under_its_closest_prefix() -> None:
    code, _, err = cli("run", "--model", "opnai/gpt-4o-mini")
    assert code == 2
    assert " ".join(err.split()) == ("error: --model opnai/gpt-4o-mini: LiteLLM knows no provider "
                                     "for it; did you mean openai/gpt-4o-mini?")


def test_a_mistyped_local_model_gets_its_closest_name() -> None:
    code, _, err = cli("run", "--model", "local/qwen2.5-coder-1.5")
    assert code == 2
    assert ("unknown local model 'local/qwen2.5-coder-1.5'; did you mean "
            "local/qwen2.5-coder-1.5b? known: ") in " ".join(err.split())
