"""A transcript line's speaker: "Caroline: I moved." is Caroline's turn, said by her.

One pattern for everything that reads turns: ingest cuts facts from the text after the speaker
and gives each the speaker back; entities take the speaker for a person; the fact judge reads
"I" as the speaker; recall favours the turns of a speaker the query asks about.
"""

from __future__ import annotations

import re

# Up to four capitalised words and a colon at the very start ("Caroline:", "Dr. Lee:"), or a
# chat role in lower case ("user:"); a chat log's time before it ("[10:32] Sam:") and bold
# ("**Sam:**") are allowed. An opening of lower-case words before a colon is a sentence ("so
# here's the plan: …"), not a speaker.
_SPEAKER = re.compile(
    r"\s*(?:\[[^\]\n]{1,30}\]\s*)?(?:\*\*|__)?"
    r"([A-Z][\w'.-]*(?: [A-Z][\w'.-]*){0,3}|user|assistant|human|ai)"
    r"(?:\*\*|__)?:(?:\*\*|__)?\s+"
)


def speaker_line(text: str) -> re.Match[str] | None:
    """The speaker `text` opens with: group 1 its name, `end()` where what they said begins."""
    return _SPEAKER.match(text)
