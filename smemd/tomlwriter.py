"""A small TOML writer for `smemd --print-config` (the standard library only reads TOML)."""

from __future__ import annotations

import json
import math
from typing import Any


def dumps(data: dict[str, Any]) -> str:
    """Render nested dicts of str/int/float/bool/lists as TOML; None values are left out."""
    lines: list[str] = []
    _table(data, [], lines)
    return "\n".join(lines).lstrip("\n") + "\n"


def _table(data: dict[str, Any], path: list[str], lines: list[str]) -> None:
    for key, value in data.items():
        if value is not None and not _is_table(value) and not _is_table_array(value):
            lines.append(f"{_key(key)} = {_value(value)}")
    for key, value in data.items():
        if _is_table(value):
            lines.extend(["", f"[{'.'.join(_key(k) for k in [*path, key])}]"])
            _table(value, [*path, key], lines)
        elif _is_table_array(value):
            for item in value:
                lines.extend(["", f"[[{'.'.join(_key(k) for k in [*path, key])}]]"])
                _table(item, [*path, key], lines)


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum() and key.isascii()
    return key if bare else _string(key)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _string(text: str) -> str:
    # JSON's escapes are valid TOML basic-string escapes; TOML also forbids a raw DEL.
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")
