"""What the warehouse_ops domain's replies say when they claim an action was done.

Completed forms (past tense, short passive) per write tool, for the response check
``said_vs_done`` (pipeline.scoring.claims) and the conditions method's false-success report:
"отгрузка оформлена" with no accepted ``ship_order`` is a claim without the action. "Заказ был
отгружен и сейчас в пути" describes an order's history (a return task), not this agent's
shipment, so "был" / "ранее" before "отгружен" is not a claim.
"""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

_DONE = r"(?:оформлен|проведен|проведён|выполнен|создан|зарегистрирован)[аоы]?"
_ACCEPTED = r"(?:принят|оформлен|проведен|проведён|выполнен|зарегистрирован)[аоы]?"

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "ship_order",
        r"\bотгрузк\w*" + ANY_WORDS % 4 + r"(?P<verb>" + _DONE + r")\b",
        r"\b(?P<verb>отгрузил[аи]?)\b",
        r"\b(?P<verb>(?:оформил|провёл|провел|выполнил)[аи]?)" + ANY_WORDS % 3 + r"отгрузк",
        r"\bотгрузк\w*" + ANY_WORDS % 4 + r"(?P<verb>(?:оформил|провёл|провел|выполнил)[аи]?)\b",
        r"\bзаказ\w*(?:\s+(?!был[аио]?\b|ранее\b)[^\s,;:]+){0,4}?\s+(?P<verb>отгружен[аоы]?)\b",
        language="ru",
    ),
    ClaimPatterns.of(
        "ship_order",
        r"\b(?:I|we)\s+(?:have\s+)?(?P<verb>shipped|dispatched)\b",
        r"\bshipment" + ANY_WORDS % 4 + r"(?P<verb>created|registered|completed|made)\b",
        r"\border\w*(?:\s+(?!was\b|were\b|previously\b|already\b)[^\s,;:]+){0,4}?\s+"
        r"(?P<verb>(?:has\s+been\s+)?(?:shipped|dispatched))\b",
        language="en",
    ),
    ClaimPatterns.of(
        "accept_return",
        r"\bвозврат\w*" + ANY_WORDS % 4 + r"(?P<verb>" + _ACCEPTED + r")\b",
        r"\b(?P<verb>(?:принял|оформил|провёл|провел|зарегистрировал)[аи]?)" + ANY_WORDS % 3
        + r"возврат",
        r"\bвозврат\w*" + ANY_WORDS % 4
        + r"(?P<verb>(?:принял|оформил|провёл|провел|зарегистрировал)[аи]?)\b",
        language="ru",
    ),
    ClaimPatterns.of(
        "accept_return",
        r"\breturn\w*" + ANY_WORDS % 4 + r"(?P<verb>accepted|registered|processed|created)\b",
        r"\b(?P<verb>accepted|registered|processed)" + ANY_WORDS % 3 + r"return",
        language="en",
    ),
)
