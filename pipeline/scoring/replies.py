"""Response checks over the turns' final replies: clarification where (and only where) due,
forbidden phrases, the user's language, and what the replies say against the journal."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.catalog import Domain
from pipeline.catalog.models import Turn
from pipeline.scoring.claims import said_vs_done
from pipeline.scoring.forbidden_claims import forbidden_claim_in
from pipeline.scoring.journal import Journal, Reply
from pipeline.scoring.languages import Language, asks_for_input
from pipeline.scoring.results import CheckResult


def clarification_check(turn_no: int, turn: Turn, reply: Reply | None,
                        languages: Sequence[Language] = ()) -> CheckResult | None:
    """The reply asks the user something where a question is required, and nothing where it
    is forbidden: a question mark, or a request for input in one of the domain's languages
    ("please provide more details")."""
    if turn.clarification == "allowed":
        return None
    step, text = (reply.step, reply.text) if reply is not None else (None, "")
    asks = asks_for_input(text, languages)
    ok = asks if turn.clarification == "required" else not asks
    what = "asked" if asks else "did not ask"
    return CheckResult(f"clarification:{turn.clarification}@{turn_no}", "clarification", ok,
                       None if ok else turn_no, None if ok else step,
                       f"reply {what} a question ({turn.clarification})", "response")


def phrase_checks(turn_no: int, turn: Turn, reply: Reply | None,
                  domain: Domain | None = None) -> list[CheckResult]:
    """The reply makes none of the turn's forbidden claims, as whole words or as the same
    claim in another of the domain's languages (``forbidden_claims``)."""
    step, text = (reply.step, reply.text) if reply is not None else (None, "")
    languages = domain.languages if domain is not None else ()
    claims = domain.phrase_claims if domain is not None else ()
    results = []
    for phrase in turn.response_forbids:
        found = forbidden_claim_in(text, phrase, claims, languages)
        ok = found is None
        detail = (f"reply does not claim {phrase!r}" if found is None else
                  f"reply claims {phrase!r}" if found == phrase else
                  f"reply claims {phrase!r}: {found[:160]!r}")
        results.append(CheckResult(f"response:forbids:{phrase}@{turn_no}", "response_phrase",
                                   ok, None if ok else turn_no, None if ok else step, detail,
                                   "response"))
    return results


MIN_LETTERS = 12
"""Texts with fewer letters than this say too little to tell their language."""


def script_of(text: str) -> str | None:
    """The dominant alphabet of ``text`` ("cyrillic", "latin", "other"), by letter count;
    None when it has too few letters."""
    counts = _letter_counts("".join(filter(str.isalpha, text)))
    if sum(counts.values()) < MIN_LETTERS:
        return None
    return max(counts, key=lambda k: counts[k])


_CYRILLIC = re.compile("[\u0400-\u04ff]")
_ASCII = re.compile("[\x00-\x7f]")


def _letter_counts(letters: str) -> dict[str, int]:
    """How many of ``letters`` are in each alphabet (``alphabet_of``'s ranges, counted by
    regular expression rather than a letter at a time)."""
    cyrillic, latin = len(_CYRILLIC.findall(letters)), len(_ASCII.findall(letters))
    return {"cyrillic": cyrillic, "latin": latin, "other": len(letters) - cyrillic - latin}


LANGUAGE_SHARE = 0.25
"""A reply in the user's language has at least this share of its prose letters (tables, code
and JSON left out) in the user's alphabet: Russian prose around English room names passes, an
English reply quoting one Russian word does not (under 10%)."""




_MARKUP = re.compile(r"```.*?(?:```|$)|<[^<>]{1,40}>|^\s*\|.*$", re.DOTALL | re.MULTILINE)


def prose_of(text: str) -> str:
    """``text`` without what is not prose: code fences, tags, table rows, JSON objects."""
    text = _MARKUP.sub(" ", text)
    if "{" not in text:  # nothing braced: every character is prose
        return text
    out, depth = [], 0
    for char in text:
        depth += char == "{"
        if depth == 0:
            out.append(char)
        depth = max(0, depth - (char == "}"))
    return "".join(out)


def script_share(text: str, alphabet: str) -> float | None:
    """Share of the prose letters of ``text`` in ``alphabet``; a reply with no prose (a JSON
    blob, a code block) by all its letters: its words are in a language too (a blob of Russian
    values to a Russian user is a poor answer, not a foreign one); None when it has too few
    letters to tell."""
    every = "".join(filter(str.isalpha, text))
    if len(every) < MIN_LETTERS:
        return None
    letters = "".join(filter(str.isalpha, prose_of(text)))
    if len(letters) < MIN_LETTERS:
        letters = every
    return _letter_counts(letters).get(alphabet, 0) / len(letters)


def dialog_alphabet(user_texts: Sequence[str]) -> str | None:
    """The alphabet the user writes in over the whole dialog (their turns' prose together):
    what a turn too short to tell on its own ("Да.", "ok") is judged by."""
    return script_of(" ".join(prose_of(t) for t in user_texts))


def language_check(turn_no: int, turn: Turn, reply: Reply | None,
                   dialog: str | None = None) -> CheckResult | None:
    """The reply is written in the user's alphabet (a Russian user gets no English reply); the
    user's alphabet is that of their prose (a case's interface context is a JSON block), or,
    for a turn with too few letters, ``dialog``: the alphabet of the dialog's user turns."""
    own = script_of(prose_of(turn.user))
    wanted = own or dialog
    if wanted is None or reply is None:
        return None
    step, text = reply.step, reply.text
    share = script_share(text, wanted)
    if share is None and not any(c.isalnum() for c in text):
        share = 0.0  # a reply of punctuation only (">") answers in no language
    if share is None:
        return None
    ok = share >= LANGUAGE_SHARE
    whose = "as the user writes" if own is not None else "the dialog's language"
    return CheckResult(f"reply_language@{turn_no}", "reply_language", ok,
                       None if ok else turn_no, None if ok else step,
                       f"{share:.0%} of the reply's letters are {wanted}, {whose} "
                       f"(at least {LANGUAGE_SHARE:.0%} wanted)", "response")


def said_vs_done_check(journal: Journal, domain: Domain) -> CheckResult:
    replies = journal.final_replies()
    violations = said_vs_done(replies, journal.calls, domain.claim_patterns)
    if not violations:
        return CheckResult("said_vs_done", "said_vs_done", True, None, None,
                           f"{len(replies)} replies agree with the journal", "response")
    first = violations[0]
    return CheckResult("said_vs_done", "said_vs_done", False, first.turn, first.step,
                       f"{first.kind} {first.tool}: {first.clause!r}", "response")
