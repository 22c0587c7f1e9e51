"""The meeting rooms as ``search_rooms`` reports them, and how replies name and describe them.

Read by the grounding check (pipeline.scoring.grounding): a room a reply names must come from a
search result or the user, and what the reply says of its features, capacity and price must
agree with the latest result. The features a reply may claim include what the catalog never
reports (confidentiality, soundproofing, an external auditor's admission): a room listed "with"
one of them is given a feature it lacks, and a scenario forbids those claims by their names here.
"""

from __future__ import annotations

from pipeline.scoring import Attribute, EntityKind, ResultItems, Value

_PER_HOUR_ONLY = (r"(?![^.;\n]*?\b(?:за\s+(?:два|три|\d+)\s+час|итого|всего"
                  r"|for\s+(?:two|three|\d+)\s+hours|in\s+total|total))")
"""A price said of more than one hour is no hourly price."""

FEATURES = Attribute.members("features", "features", (
    Value.of("экран", ru=(r"\bэкран\w*",), en=(r"\bscreens?\b", r"\bdisplays?\b")),
    Value.of("видеосвязь",
             ru=(r"\bвидео\s*-?\s*связ\w*", r"\bвидеоконференц\w*", r"\bвидеозвон\w*"),
             en=(r"\bvideo\s*-?\s*(?:conferenc\w*|connection|link|calls?|calling|conferencing)\b",
                 r"\bvideo\b")),
    Value.of("конфиденциальность", ru=(r"\bконфиденциальн\w*",), en=(r"\bconfidential\w*",)),
    Value.of("внешний аудитор", ru=(r"\bаудитор\w*",), en=(r"\bauditor\w*",)),
    Value.of("звукоизоляция", ru=(r"\bзвукоизол\w*", r"\bшумоизол\w*"),
             en=(r"\bsound\s*-?\s*proof\w*", r"\bsound\s+insulat\w*", r"\bsoundproof\w*")),
))

CAPACITY = Attribute.number(
    "capacity", "capacity",
    ru=(r"\b(?P<value>\d+)\s*(?:мест[ао]?|посадочных)\b", r"\bвместимост\w*\W{0,6}(?P<value>\d+)"),
    en=(r"\b(?P<value>\d+)\s*(?:seats?|places)\b", r"\bcapacity\W{0,6}(?P<value>\d+)\b",
        r"\b(?:seats|holds|fits)\s+(?:up\s+to\s+)?(?P<value>\d+)\b"),
)

PRICE = Attribute.number(
    "price", "price_per_hour",
    ru=(r"(?<![\d:])(?P<value>\d{1,3}(?:[\s\u00a0\u202f]\d{3})+|\d+)\s*(?:₽|руб\w*|р\.)"
        + _PER_HOUR_ONLY,),
    en=(r"(?<![\d:])(?P<value>\d{1,3}(?:,\d{3})+|\d+)\s*(?:₽|rub\w*|RUB)" + _PER_HOUR_ONLY,
        r"(?:₽|RUB)\s*(?P<value>\d{1,3}(?:,\d{3})+|\d+)" + _PER_HOUR_ONLY),
)

ROOM = EntityKind.of(
    "room",
    sources=(ResultItems("search_rooms", "rooms", "id"),),
    attributes=(FEATURES, CAPACITY, PRICE),
    aliases={
        "amber": (r"\b(?:амбер|эмбер|янтар)\w*",),
        "birch": (r"\b(?:б[её]рч|берез|берёз)\w*",),
        "cedar": (r"\b(?:сидар|седар|кедр)\w*",),
    },
    mention=(
        r"(?<!\w)(?i:комнат[аеуыо]й?|переговорн(?:ая|ую|ой|ые|ых|ыми))\s+[«\"“„]?"
        r"(?P<name>[A-ZА-ЯЁ][\w-]*(?:\s+\d[\w-]*)?)",
        r"(?<!\w)(?i:(?:meeting\s+|conference\s+)?room)\s+[\"“]?"
        r"(?P<name>[A-Z](?![a-z])[\w-]*|\d[\w-]*|[A-Z][a-z]+(?:\s+\d[\w-]*)?)",
    ),
    not_names=("Capacity", "Price", "Features", "Availability", "Options", "Details", "ID",
               "Number", "Name", "Type", "Booking", "Reservation", "Search", "Selection",
               "Summary", "Information", "Info", "Status", "For", "With", "In", "At", "On",
               "Is", "Has", "And", "Or", "That", "This", "The"),
)
"""Rooms by the ids ``search_rooms`` gives (amber, birch, cedar; Russian renderings of them are
aliases). A capitalised name after "комната"/"переговорная"/"room" is a room's name: one no
result gave ("Берёшка", "Room A") is invented."""

ENTITIES: tuple[EntityKind, ...] = (ROOM,)
