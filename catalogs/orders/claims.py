"""What the orders domain's replies say when they claim an action was done (the said-vs-done
response check): "order o1 has been cancelled", "the address was updated"."""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, DenialPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "cancel_order",
        r"\border\w*" + ANY_WORDS % 4 + r"(?P<verb>cancell?ed)\b",
        r"\b(?P<verb>cancell?ed)" + ANY_WORDS % 2 + r"(?:your\s+)?order",
        language="en",
    ),
    ClaimPatterns.of(
        "cancel_order",
        r"\bзаказ\w*" + ANY_WORDS % 4 + r"(?P<verb>отмен[её]н[аоы]?)\b",
        r"\b(?P<verb>отменил[аи]?)" + ANY_WORDS % 3 + r"заказ",
        language="ru",
    ),
    ClaimPatterns.of(
        "update_address",
        r"\baddress\w*" + ANY_WORDS % 6 + r"(?P<verb>updated|changed)\b",
        r"\baddress\w*" + ANY_WORDS % 6 + r"(?P<verb>is\s+now)\b",
        r"\b(?P<verb>updated|changed)" + ANY_WORDS % 3 + r"address",
        language="en",
    ),
    ClaimPatterns.of(
        "update_address",
        r"\bадрес\w*" + ANY_WORDS % 4 + r"(?P<verb>(?:обновл[её]н|изменён|изменен)[аоы]?)\b",
        r"\b(?P<verb>(?:обновил|изменил|поменял)[аи]?)" + ANY_WORDS % 3 + r"адрес",
        language="ru",
    ),
)

DENIAL_PATTERNS: tuple[DenialPatterns, ...] = (
    DenialPatterns.of(
        "cancel_order",
        r"\bdenied\b",
        r"\b(?:could\s+not|couldn['’]t|cannot|can['’]t|unable\s+to|failed\s+to)\s+"
        r"(?:be\s+)?cancel",
        r"\bnot\s+(?:been\s+)?cancell?ed\b",
        r"\bwill\s+be\s+cancell?ed\b",
        r"\bне\s+(?:удалось|получилось|могу)\s+отменить\b",
        r"\bотмен\w*" + ANY_WORDS % 2 + r"(?:отклонен|невозможн)\w*",
        r"\bбудет\s+отмен[её]н\w*",
    ),
    DenialPatterns.of(
        "update_address",
        r"\bdenied\b",
        r"\b(?:could\s+not|couldn['’]t|cannot|can['’]t|unable\s+to|failed\s+to)\s+"
        r"(?:be\s+)?(?:update|change)",
        r"\bwill\s+be\s+(?:updated|changed)\b",
        r"\bне\s+(?:удалось|получилось|могу)\s+(?:изменить|обновить)\b",
        r"\bбудет\s+(?:изменен|обновл[её]н)\w*",
    ),
)
"""What the replies say when a tool's action was refused, failed or is still to come (the
``denied_but_done`` check): the ``denied`` outcome among them."""
