"""What the orders domain's replies say when they claim an action was done (the said-vs-done
response check): "order o1 has been cancelled", "the address was updated"."""

from __future__ import annotations

from pipeline.scoring import ANY_WORDS, ClaimPatterns

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "cancel_order",
        r"\border\w*" + ANY_WORDS % 4 + r"(?P<verb>cancell?ed)\b",
        r"\b(?P<verb>cancell?ed)" + ANY_WORDS % 2 + r"(?:your\s+)?order",
    ),
    ClaimPatterns.of(
        "update_address",
        r"\baddress\w*" + ANY_WORDS % 4 + r"(?P<verb>updated|changed)\b",
        r"\b(?P<verb>updated|changed)" + ANY_WORDS % 3 + r"address",
    ),
)
