"""What the discounts domain's replies say when they claim an action was done.

Completed forms (past tense, short passive) per write tool, for the response check
``said_vs_done`` (pipeline.scoring.claims) and the conditions method's false-success report:
"скидка начислена", "начислил скидку", "промокод применён".
"""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

_APPLIED = r"(?:начислен|применен|применён|оформлен|предоставлен|учтен|учтён)[аоы]?"

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "apply_discount",
        r"\bскидк\w*" + ANY_WORDS % 5 + r"(?P<verb>" + _APPLIED + r")\b",
        r"\b(?P<verb>" + _APPLIED + r")" + ANY_WORDS % 2 + r"скидк",
        r"\b(?P<verb>(?:начислил|применил|оформил|предоставил)[аи]?)" + ANY_WORDS % 3 + r"скидк",
        r"\bскидк\w*" + ANY_WORDS % 4
        + r"(?P<verb>(?:начислил|применил|оформил|предоставил)[аи]?)\b",
        r"\b(?:промокод|акци)\w*" + ANY_WORDS % 4
        + r"(?P<verb>(?:применен|применён|активирован)[аоы]?)\b",
        language="ru",
    ),
    ClaimPatterns.of(
        "apply_discount",
        r"\b(?:discount|promo\s*code|coupon)" + ANY_WORDS % 4
        + r"(?P<verb>applied|granted|added|activated)\b",
        r"\b(?P<verb>applied|granted|added)" + ANY_WORDS % 3 + r"(?:discount|promo|coupon)",
        language="en",
    ),
)
