"""The languages the bundled domains speak, for their ``claims.py`` (``LANGUAGES``).

Word endings: what the last word of a scenario's phrase may add in a reply or a summary, so a
phrase is matched as whole words ("аудитор" finds "аудитора", "auditor" finds "auditors" and
never "auditorium"; stems such as "конфиденциальн" or "cancel" take their language's endings).
Requests for input: replies that ask the user for something without a question mark ("please
provide more details"); a recommendation ("choose birch", "выберите amber") is none.
"""

from __future__ import annotations

from pipeline.scoring import Language

RUSSIAN = Language.of(
    "ru", "cyrillic", r"[а-яё]{0,5}",
    asks_for_input=(
        r"\b(?:пожалуйста\W+)?(?:уточните|укажите|сообщите|напишите|подтвердите"
        r"|предоставьте|пришлите|назовите)\b",
        r"\bпрошу\s+(?:вас\s+)?(?:уточнить|указать|сообщить|подтвердить)\b",
        r"\b(?:нужно|необходимо|требуется)\s+(?:ваше\s+)?(?:уточнение|подтверждение)\b",
        # "выберите комнату, которая вам подходит" asks; "выберите amber" recommends
        r"\b(?:пожалуйста\W+)?выберите\s+(?:\w+\s+)?(?:комнат|переговорн|одн|нужн)",
    ),
)
ENGLISH = Language.of(
    "en", "latin", r"(?:s|es|'s|’s|d|ed|led|ing|ling|lation|lations|er|ers|ly)?",
    asks_for_input=(
        r"\bplease\s+(?:provide|specify|confirm|clarify|tell\s+me"
        r"|share|send\s+me|give\s+me)\b",
        r"\blet\s+me\s+know\s+(?:which|what|when|where|who|how|the|your)\b",
        r"\bI\s+(?:need|would\s+need|require)\s+(?:more\s+)?(?:details|information"
        r"|clarification|confirmation|you\s+to)\b",
        r"\b(?:provide|give|share|send)\s+(?:me\s+|us\s+)?(?:more|additional|further)\s+"
        r"(?:details|information)\b",
        r"\bplease\s+ask\b",
        r"\bcould\s+you\s+(?:please\s+)?(?:provide|specify|confirm|clarify)\b",
        r"\b(?:please\s+)?(?:choose|select|pick)\s+(?:one|which|an?\s+(?:room|option)"
        r"|the\s+(?:room|option)\s+(?:you|that))\b",
    ),
)
BOTH: tuple[Language, ...] = (RUSSIAN, ENGLISH)
