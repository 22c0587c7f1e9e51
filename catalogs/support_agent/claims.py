"""What the support_agent domain's replies say when they claim an action was done.

Completed forms (past tense, short passive) per state-changing tool, for the response check
``said_vs_done`` (pipeline.scoring.claims): "заказ отменён" with no accepted ``cancel_order``
is a claim without the action; "будет отменён после подтверждения" is none (conditional).
"""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "cancel_order",
        r"\bзаказ\w*" + ANY_WORDS % 4 + r"(?P<verb>отмен[её]н[аоы]?)\b",
        r"\b(?P<verb>отменил[аи]?)" + ANY_WORDS % 3 + r"заказ",
        language="ru",
    ),
    ClaimPatterns.of(
        "cancel_order",
        r"\border\w*" + ANY_WORDS % 4 + r"(?P<verb>cancelled|canceled)\b",
        language="en",
    ),
    ClaimPatterns.of(
        "refund_order",
        r"\bденьги" + ANY_WORDS % 3 + r"(?P<verb>возвращен[аоы]?)\b",
        r"\bвозврат\w*" + ANY_WORDS % 3 + r"(?P<verb>оформлен|выполнен|проведён)\b",
        r"\b(?P<verb>вернул[аи]?)" + ANY_WORDS % 3 + r"деньги",
        language="ru",
    ),
    ClaimPatterns.of(
        "refund_order",
        r"\b(?P<verb>refunded)\b",
        language="en",
    ),
    ClaimPatterns.of(
        "send_report",
        r"\bотч[её]т\w*" + ANY_WORDS % 4 + r"(?P<verb>отправлен)\b",
        r"\b(?P<verb>отправил[аи]?)" + ANY_WORDS % 3 + r"отч[её]т",
        language="ru",
    ),
    ClaimPatterns.of(
        "send_report",
        r"\breport" + ANY_WORDS % 4 + r"(?P<verb>sent)\b",
        language="en",
    ),
)
