"""A mistaken command-line option is said in the plain words of a spec's errors, with "did you
mean" its closest value, every mistaken option on the one line."""

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
