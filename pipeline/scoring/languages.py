"""The languages a domain speaks, as its catalog declares them, and whole-word phrase matching.

A scenario's phrases (forbidden claims, summary terms) are matched as whole words: a phrase
starts at a word's start and its last word may take only the endings its language declares
("auditor" finds "auditors", never "auditorium"; "аудитор" finds "аудитора"). A domain declares
its ``Language`` records (``LANGUAGES`` in its ``claims.py``) and its ``PhraseClaim`` records
(``PHRASE_CLAIMS``): one claim said in each of its languages, so a forbidden claim the scenario
wrote in Russian is also found when the reply makes it in English. The words live in the
catalogs; this module holds only the mechanism.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Literal

Alphabet = Literal["cyrillic", "latin", "other"]
_I = re.IGNORECASE


def alphabet_of(char: str) -> Alphabet:
    return "cyrillic" if "\u0400" <= char <= "\u04ff" else "latin" if char.isascii() else "other"


@dataclass(frozen=True)
class Language:
    """One language a domain's users and agents may use."""

    code: str
    """ISO 639-1 code: ru, en."""
    alphabet: Alphabet
    word_endings: str
    """A regex of the endings a phrase's last word may take in a text ("(?:s|es)?")."""
    asks_for_input: tuple[re.Pattern[str], ...] = ()
    """Requests for the user's input said without a question mark ("please provide...")."""

    @classmethod
    def of(cls, code: str, alphabet: Alphabet, word_endings: str,
           asks_for_input: Sequence[str] = ()) -> Language:
        return cls(code, alphabet, word_endings,
                   tuple(re.compile(p, _I) for p in asks_for_input))


@dataclass(frozen=True)
class PhraseClaim:
    """One claim a reply may make, as each language says it (regexes by language code)."""

    name: str
    patterns: Mapping[str, tuple[re.Pattern[str], ...]] = field(default_factory=dict)

    @classmethod
    def of(cls, name: str, **by_language: Sequence[str]) -> PhraseClaim:
        return cls(name, {code: tuple(re.compile(p, _I) for p in regexes)
                          for code, regexes in by_language.items()})

    def all_patterns(self) -> tuple[re.Pattern[str], ...]:
        return self._flat

    @cached_property
    def _flat(self) -> tuple[re.Pattern[str], ...]:
        return tuple(p for patterns in self.patterns.values() for p in patterns)


def language_of(phrase: str, languages: Sequence[Language]) -> Language | None:
    """The declared language written in the alphabet of ``phrase``'s last letter."""
    letters = [c for c in phrase if c.isalpha()]
    if not letters:
        return None
    alphabet = alphabet_of(letters[-1])
    return next((lang for lang in languages if lang.alphabet == alphabet), None)


def phrase_pattern(phrase: str, languages: Sequence[Language] = ()) -> re.Pattern[str]:
    """``phrase`` as whole words: whitespace runs are any whitespace, the last word may take
    the endings of the phrase's language (none when the domain declares no such language)."""
    words = [re.escape(w) for w in phrase.casefold().split()]
    language = language_of(phrase, languages)
    endings = language.word_endings if language is not None and phrase[-1:].isalpha() else ""
    return re.compile(r"(?<!\w)" + r"\s+".join(words) + endings + r"(?!\w)", _I)


def has_phrase(text: str, phrase: str, languages: Sequence[Language] = ()) -> bool:
    """Whether ``text`` holds ``phrase`` as whole words (``phrase_pattern``)."""
    return bool(phrase.strip()) and phrase_pattern(phrase, languages).search(text) is not None


def asks_for_input(text: str, languages: Sequence[Language]) -> bool:
    """Whether ``text`` asks the user something: a question mark, or one of the declared
    languages' requests for input."""
    return "?" in text or any(p.search(text) for lang in languages
                              for p in lang.asks_for_input)
