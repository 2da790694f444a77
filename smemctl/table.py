"""Plain-text tables for humans; scripts use --json."""

from __future__ import annotations

from collections.abc import Sequence


def table(rows: Sequence[Sequence[object]], header: Sequence[str] | None = None) -> str:
    """Columns two spaces apart; numeric columns right-aligned under a left-aligned header."""
    body = [[str(c) for c in row] for row in rows]
    head = [list(header)] if header else []
    if not head and not body:
        return ""
    widths = [max(len(row[i]) for row in head + body) for i in range(len((head + body)[0]))]
    numeric = [bool(body) and all(_is_number(row[i]) for row in body) for i in range(len(widths))]

    def line(row: list[str], align_numbers: bool) -> str:
        cells = zip(row, widths, numeric, strict=True)
        return "  ".join(c.rjust(w) if num and align_numbers else c.ljust(w) for c, w, num in cells)

    lines = [line(row, False) for row in head] + [line(row, True) for row in body]
    return "\n".join(text.rstrip() for text in lines)


def pairs(items: Sequence[tuple[str, object]]) -> str:
    """A two-column key/value listing."""
    width = max((len(k) for k, _ in items), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in items)


def duration(seconds: float) -> str:
    seconds = int(seconds)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d"] if days else []
    if days or hours:
        parts.append(f"{hours}h")
    if days or hours or minutes:
        parts.append(f"{minutes}m")
    parts.append(f"{secs}s")
    return " ".join(parts)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
