"""What the orders domain's replies say when they claim an action was done (the said-vs-done
response check): "order o1 has been cancelled", "the address was updated"."""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, Language

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
        r"\baddress\w*" + ANY_WORDS % 4 + r"(?P<verb>updated|changed)\b",
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
