"""What the clinic domain's replies say when they claim an action was done.

Completed forms (past tense, short passive) per write tool, for the response check
``said_vs_done`` (pipeline.scoring.claims) and the conditions method's false-success report:
"записал пациентку", "запись оформлена", "пациент записан на приём".
"""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, DenialPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "book_appointment",
        r"\b(?P<verb>записал[аи]?)\b",
        r"\bзапис[ьи]" + ANY_WORDS % 4
        + r"(?P<verb>(?:оформлен|создан|подтвержден|подтверждён|сделан)[аоы]?)\b",
        r"\bпациент\w*" + ANY_WORDS % 5 + r"(?P<verb>записан[аоы]?)\b",
        r"\b(?P<verb>записан[аоы]?)" + ANY_WORDS % 3 + r"на\s+при[её]м",
        r"\b(?P<verb>(?:оформил|создал)[аи]?)" + ANY_WORDS % 2 + r"запись",
        language="ru",
    ),
    ClaimPatterns.of(
        "book_appointment",
        r"\b(?P<verb>booked|scheduled)\b",
        r"\bappointment" + ANY_WORDS % 4 + r"(?P<verb>confirmed|created|made|booked)\b",
        language="en",
    ),
)

DENIAL_PATTERNS: tuple[DenialPatterns, ...] = (
    DenialPatterns.of(  # a refusal after the booking took effect says nothing was done
        "book_appointment",
        r"\b(?:can['’]t|cannot|can\s+not|unable\s+to)\s+(?:assist|help)\b",
        r"\b(?:could\s+not|couldn['’]t|unable\s+to|failed\s+to)\s+(?:book|schedule)\b",
        r"\bне\s+(?:могу|можем|смогу|сможем)\s+(?:вам\s+)?(?:помочь|записать)\b",
        r"\bне\s+(?:удалось|получилось)\s+записать\b",
    ),
)
"""What the replies say when a booking was refused or failed (the ``denied_but_done`` check)."""
