"""What the guest_pass domain's replies say when they claim an action was done.

Patterns of completed forms (past tense, short passive) per state-changing tool, for the
response check ``said_vs_done`` (pipeline.scoring.claims): a clause matching one is a claim that the
tool's action happened; a negation before the verb makes it a denial.
"""

from __future__ import annotations

from catalogs.languages import BOTH
from pipeline.scoring import ANY_WORDS, ClaimPatterns, DenialPatterns, Language

LANGUAGES: tuple[Language, ...] = BOTH

CLAIM_PATTERNS: tuple[ClaimPatterns, ...] = (
    ClaimPatterns.of(
        "create_pass",
        r"\b(?P<verb>(?:оформил|создал|заказал)[аи]?)" + ANY_WORDS % 3 + r"пропуск",
        r"\b(?P<verb>(?:оформля|заказыва)(?:ю|ем))" + ANY_WORDS % 3 + r"пропуск",
        r"\bпропуск\w*" + ANY_WORDS % 8
        + r"(?P<verb>(?:создан|оформлен|заказан|выдан)[аоы]?)\b",
        r"\b(?P<verb>(?:создан|оформлен|заказан|выдан)[аоы]?)" + ANY_WORDS % 2
        + r"пропуск",
        r"\bзаявк\w*" + ANY_WORDS % 3 + r"(?P<verb>создан[аоы]?)\b",
        language="ru",
    ),
    ClaimPatterns.of(
        "create_pass",
        r"\bpass(?:es)?" + ANY_WORDS % 8 + r"(?P<verb>created|issued|ordered)\b",
        r"\b(?P<verb>created|issued|ordered)" + ANY_WORDS % 3 + r"pass(?:es)?\b",
        language="en",
    ),
    ClaimPatterns.of(
        "update_pass_request",
        r"\b(?P<verb>(?:исправил|обновил|изменил|внёс|внес)[аи]?)"
        + ANY_WORDS % 3 + r"(?:заявк|данны|изменени|имя|фамили|дат|черновик)",
        r"\b(?P<verb>(?:исправил|записал)[аи]?)\b",
        r"^\s*(?P<verb>заявка)\s*:",  # "Заявка: гость …, 6 ноября, …": the request as recorded
        r"\b(?:заявк|изменени|данны|черновик)\w*" + ANY_WORDS % 3
        + r"(?P<verb>(?:обновлен|исправлен|внесен|внесён|сохранен|сохранён|записан)[аоы]?)\b",
        language="ru",
    ),
    ClaimPatterns.of(
        "update_pass_request",
        r"\b(?:changes?|request|details|name|date|draft)" + ANY_WORDS % 4
        + r"(?P<verb>recorded|saved|updated|corrected)\b",
        r"^\s*(?P<verb>(?:your\s+)?request)\s*:",
        r"\b(?P<verb>noted)\s*:",
        r"\b(?P<verb>updated|corrected|recorded|saved)\s+(?:the|your)\s+"
        r"(?:request|details|name|date|changes?|draft)\b",
        language="en",
    ),
)

DENIAL_PATTERNS: tuple[DenialPatterns, ...] = (
    DenialPatterns.of(
        "create_pass",
        r"\bпропуск\w*" + ANY_WORDS % 4 + r"будет\s+(?:создан|оформлен|выдан|заказан)\w*",
        r"\b(?:оформлю|создам|закажу)" + ANY_WORDS % 2 + r"пропуск",
        r"\bне\s+(?:удалось|получилось)\s+(?:создать|оформить|заказать)\b",
        r"\bpass(?:es)?" + ANY_WORDS % 4 + r"will\s+be\s+(?:created|issued|ordered)\b",
        r"\b(?:could\s+not|couldn['’]t|unable\s+to|failed\s+to)\s+(?:create|issue|order)\b",
    ),
    DenialPatterns.of(  # "I'll update the draft" after the update took effect
        "update_pass_request",
        r"\b(?:обновлю|исправлю|внесу|изменю)\b",
        r"\b(?:i|we)['’]ll\s+(?:update|correct|change|record)\b",
        r"\b(?:could\s+not|couldn['’]t|unable\s+to|failed\s+to)\s+(?:update|correct|change)\b",
    ),
    DenialPatterns.of(
        "confirm_pass_request",
        r"\bподтвержу\b",
        r"\b(?:i|we)['’]ll\s+confirm\b",
    ),
)
"""What the replies say when a pass was refused, failed or is still to come (the
``denied_but_done`` check)."""
