"""The English words the heuristic judge reads facts by: which open a subject or an adverbial,
which are people, which count, which carry little, which negate or state a change, and which
name one attribute of a subject. Lists of common words, never mined from a benchmark."""

from __future__ import annotations

from smemd.engine.index.words import tokens

ARTICLES = frozenset({"the", "a", "an"})
FIRST_PERSON = frozenset({"i", "i'm", "i've", "i'd", "i'll", "me", "my", "we", "our", "us"})
# Subjects that point back at something the fact does not name: two facts about "it" may be
# about two things.
ANAPHORS = frozenset({"it", "it's", "this", "that", "they", "they're", "there", "these", "those"})
PRONOUNS = frozenset({"i", "we", "you", "he", "she", "they", "it"})
# Capitalised at a sentence start but not names: they never open a subject or count as values.
FUNCTION_WORDS = frozenset(
    {"my", "our", "your", "his", "her", "their", "its", "this", "that", "these", "those"}
    | {"i", "i'm", "i've", "i'd", "i'll", "he's", "she's", "we're", "they're", "it's"}
    | {"in", "on", "at", "since", "after", "before", "yesterday", "today", "last", "and", "but"}
    | {"when", "now", "then", "as", "from", "for", "with", "by", "of", "to", "a", "an", "the"}
)
# What a subject was or is, not which: "my new phone number" is "my phone number".
QUALIFIERS = frozenset({"new", "old", "current", "former", "latest", "previous"})
# Words that open an adverbial before the subject: "In 2020, Kofi relocated to Accra."
ADVERBIAL_OPENINGS = frozenset(
    "in on at since after before from during by until these this last every twice once when"
    " yesterday today recently now lately".split()
)
# Someone of a subject, never a thing of it: "my sister" is not "me".
PEOPLE = frozenset(
    """sister sisters brother brothers mother father mom mum dad parents wife husband son sons
    daughter daughters kid kids child children friend friends boss partner girlfriend boyfriend
    colleague colleagues manager neighbour neighbor cousin uncle aunt grandma grandpa
    grandmother grandfather niece nephew roommate flatmate landlord teacher doctor team family
    baby fiance fiancee""".split()
)
# Where a fact's subject phrase ends: "Our office in Berlin | has 120 employees". A value
# before it names which thing the fact is about, not what the fact says of it.
VERBS = frozenset(
    "is are was were has have had will would can could does do did am be been isn't aren't"
    " wasn't doesn't don't didn't".split()
)
NUMBER_WORDS = {
    word: str(n)
    for n, word in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
        " fifteen sixteen seventeen eighteen nineteen twenty".split()
    )
} | {"thirty": "30", "forty": "40", "fifty": "50", "sixty": "60", "seventy": "70"}
NUMBER_WORDS |= {"eighty": "80", "ninety": "90", "hundred": "100", "dozen": "12"}
# "the one in Lisbon", "this one": a pronoun, not a count.
NOT_COUNTING = frozenset({"the", "this", "that", "which", "every", "no", "any", "each"})
# Verbs that carry little of what a fact says: "Ben uses Bitwarden to manage his passwords.",
# "Our landlord is called Mr. Patel."
LIGHT = frozenset(
    """use uses used using get gets got make makes made take takes took sit sits lie lies
    located stand stands called named""".split()
)
NEGATIONS = frozenset({"not", "never", "no", "n't", "nobody", "nothing", "neither", "nor"})
# Words that only say a value changed ("is now", "no longer", "new"): not what the fact is about.
PURE_CUES = frozenset("now longer anymore instead again since new newly became become".split())
# Words that say one value took another's place, not only that something happened ("bought",
# "started", "new" may only add detail).
REPLACEMENT_CUES = frozenset(
    """now longer anymore instead rather switched switch changed change moved relocated left
    quit became replaced joined promoted renamed upgraded stopped turned raised lowered sold
    divorced rescheduled pushed postponed""".split()
)
# Words that say a value changed: "moved to", "switched to", "is now", "no longer".
CHANGE_CUES = PURE_CUES | frozenset(
    """moved move moving relocated switched switch changed change left quit joined sold bought
    upgraded replaced turned started stopped began promoted renamed rescheduled pushed
    postponed divorced raised lowered""".split()
)
# What a fact says about its subject, by the stems that name it.
ATTRIBUTES = {
    "home": "live lives living lived moved move relocated reside resides based home house flat"
    " apartment address",
    "work": "work works working worked job employer employed hired joined left quit company"
    " position role promoted office team",
    "age": "age turned old year years birthday",
    "vehicle": "drive drives car bike truck vehicle",
    "device": "phone laptop computer",
    "partner": "married dating girlfriend boyfriend partner wife husband divorced engaged",
    "schedule": "meeting appointment moved pushed rescheduled postponed scheduled call flight",
    "study": "study studies studying school university college enrolled graduated major",
    "diet": "vegetarian vegan eat eats eating diet meat",
    "likes": "like likes love loves prefer prefers favourite favorite enjoy enjoys",
    "contact": "number email phone address",
    "name": "name named called renamed",
}
_ATTRIBUTES_OF: dict[str, set[str]] = {}
for _attribute, _words in ATTRIBUTES.items():
    for _term in tokens(_words):
        _ATTRIBUTES_OF.setdefault(_term, set()).add(_attribute)


def attributes_of(stem: str) -> set[str]:
    """The attributes a word's stem names ("move": home and schedule)."""
    return _ATTRIBUTES_OF.get(stem, set())


# Month names and their common abbreviations, for dates written in words.
MONTHS = {
    name: number
    for number, names in enumerate(
        (
            "january jan", "february feb", "march mar", "april apr", "may", "june jun",
            "july jul", "august aug", "september sep sept", "october oct", "november nov",
            "december dec",
        ),
        start=1,
    )
    for name in names.split()
}  # fmt: skip
