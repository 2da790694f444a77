"""Questions as an agent may pass them on: the user's message whole, a directive on the answer's
form after the question ("What did I name the cat? Answer in one word."). `tests.bench.retrieval
--with-directives` puts one of these after each question, in turn: recall should find what the
question alone finds (README: Benchmarks)."""

from __future__ import annotations

DIRECTIVES = (
    "Be as specific as possible.", "No need to explain.", "Reply in a single line.",
    "Give a one-word answer.", "Use three bullet points at most.", "Don't include any commentary.",
    "Keep your answer short and simple.", "Only list the titles.", "Please answer with a date.",
    "Be brief and to the point.", "Answer yes or no.", "Give me just the number.",
    "Summarize in two sentences.", "Do not add anything else.", "List them chronologically.",
    "Respond in JSON.",
    "Give the answer as a number.", "Don't explain, just answer.",
    "Please keep the reply to one line.", "Write it as a numbered list.",
    "Answer in under ten words.", "Skip the explanation.", "Provide only the final answer.",
    "Be succinct.", "Return the names in a table.", "No more than five items, please.",
    "State the date only.", "Use plain language.", "Make it short.", "Mention each one in order.",
    "Give me a quick summary.", "Respond briefly and clearly.",
)  # fmt: skip


def directed(question: str, at: int) -> str:
    """The question followed by the `at`-th of DIRECTIVES, in turn."""
    return f"{question} {DIRECTIVES[at % len(DIRECTIVES)]}"
