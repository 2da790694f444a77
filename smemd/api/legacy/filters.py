"""Placeholder for the legacy filter grammar (`{"AND": […]}` → the v5 filter): another change
brings the translation; until then a legacy `filters` is refused, naming where it was sent."""

from __future__ import annotations

from typing import Any

from smemd.errors import BadRequest


def legacy_filter(value: Any, path: str) -> Any:
    """The v5 filter expression (raw JSON, for `params.filter_of`) a legacy `filters` means."""
    raise BadRequest("filters not supported yet", f"{path}: legacy filters are not translated yet")
