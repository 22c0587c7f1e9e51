"""A scenario's forbidden claim, found in whatever language the reply makes it.

The scenario writes a forbidden claim as a phrase in one language ("amber подходит"). The reply
breaks it when it holds the phrase as whole words, or when it states the same claim in any
language the domain speaks: the domain's ``PhraseClaim`` whose pattern matches inside the
phrase names the claim, and the phrase's other words (a room's id) must stand in the same
clause ("amber is suitable" breaks "amber подходит"; "birch is suitable" does not). A negated,
conditional or questioned claim is no claim.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pipeline.scoring.claims import asserted_in, split_clauses
from pipeline.scoring.languages import Language, PhraseClaim, has_phrase


def forbidden_claim_in(text: str, phrase: str, claims: Sequence[PhraseClaim],
                       languages: Sequence[Language]) -> str | None:
    """What in ``text`` makes the forbidden claim ``phrase`` (None: nothing does)."""
    if has_phrase(text, phrase, languages):
        return phrase
    named = _claim_of(phrase, claims)
    if named is None:
        return None
    claim, rest = named
    for clause in split_clauses(text):
        for pattern in claim.all_patterns():
            for match in pattern.finditer(clause):
                if (asserted_in(clause, match.start(), match.end())
                        and all(has_phrase(clause, word, languages) for word in rest)):
                    return clause
    return None


def _claim_of(phrase: str, claims: Sequence[PhraseClaim]
              ) -> tuple[PhraseClaim, list[str]] | None:
    """The domain claim the phrase makes (the longest match inside it) and the phrase's words
    outside that match."""
    best: tuple[int, PhraseClaim, re.Match[str]] | None = None
    for claim in claims:
        for pattern in claim.all_patterns():
            match = pattern.search(phrase)
            if match is not None and (best is None or match.end() - match.start() > best[0]):
                best = (match.end() - match.start(), claim, match)
    if best is None:
        return None
    _, claim, match = best
    rest = (phrase[:match.start()] + " " + phrase[match.end():]).split()
    return claim, [w for w in rest if any(c.isalnum() for c in w)]
