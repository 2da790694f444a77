"""The legacy v3/v4 `filters` grammar, translated to the v5 filter of `smemd.engine.filters`.

A filter is `{"AND": […]}` or `{"OR": […]}` (or that object as a JSON string, as the old docs had
clients send it); the items are conditions or further groups. A condition is
`{key, value: string, filterType?, negate?, ignoreCase?, numericOperator?}`; `negate` and
`ignoreCase` may be booleans or "true"/"false". What each condition selects:

* `metadata` (the default): the key's value equals `value` read as the metadata's type: a string
  equal to it, a number equal to it when `value` reads as a number, a boolean when `value` is
  "true" or "false". `negate`: exactly the rows that does not select (a missing key included).
* `numeric`: the key's value is a number and compares with `value` (which must read as a number)
  by `numericOperator` (default `=`). `negate` flips the operator (`<`↔`>=`, `<=`↔`>`, `=`↔`!=`),
  so a numeric condition, negated or not, selects numbers only.
* `array_contains`: the key's value is an array holding the string `value`; `negate`: the rest.
* `string_contains`: the key's value is a string holding `value`; `negate`: the rest.

`ignoreCase: true` (metadata and string_contains only) folds ASCII letters, as the v5 filter's
`caseSensitive: false` does. Anything else is a 400 naming the path: an unknown key, a bare
condition at the root, an empty group, `numericOperator` off a numeric condition, a value that
is not text. One condition may become two or three v5 predicates (a text and a number), so the
v5 limits (5 levels of groups, 200 predicates) apply to the translation.
"""

from __future__ import annotations

import math
import re
from typing import Any

import msgspec

from smemd.api.wire import check_depth
from smemd.engine import filters as v5
from smemd.errors import BadRequest

Raw = dict[str, Any]

_TYPES = ("metadata", "numeric", "array_contains", "string_contains")
_CONDITION_KEYS = ("key", "value", "filterType", "negate", "ignoreCase", "numericOperator")
_NUMERIC = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte", "=": "eq"}
_FLIPPED = {">": "<=", "<=": ">", "<": ">=", ">=": "<", "=": "!="}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


def translate(raw: object, path: str = "$.filters") -> Raw | None:
    """The v5 FilterExpression (JSON) for a legacy filter; None for none. FilterError names the
    legacy path of the first fault."""
    if raw is None:
        return None
    if isinstance(raw, str):
        check_depth(raw.encode())
        try:
            raw = msgspec.json.decode(raw)
        except msgspec.DecodeError as err:
            raise v5.FilterError(path, f"not a JSON filter: {err}") from None
    if not isinstance(raw, dict) or not any(k in raw for k in ("AND", "OR")):
        raise v5.FilterError(path, 'expected {"AND": [...]} or {"OR": [...]}')
    return _Translator().group(raw, path, depth=1)


def to_v5(raw: object, path: str = "$.filters") -> Raw | None:
    """`translate`, with a fault a 400 naming its path: for a v5 body's `filter`."""
    try:
        translated = translate(raw, path)
        if translated is not None:
            v5.parse_filter(translated, root=path)  # the engine's own check, which the limits pass
    except v5.FilterError as err:
        raise BadRequest("invalid filter", str(err)) from err
    return translated


def legacy_filter(value: Any, path: str) -> Any:
    """The v5 filter expression (raw JSON, for `params.filter_of`) a legacy `filters` means."""
    return to_v5(value, path)


def to_filter(raw: object, path: str = "$.filters") -> v5.Filter | None:
    """The parsed v5 filter for a legacy one, or a 400 naming the fault's path."""
    translated = to_v5(raw, path)
    return None if translated is None else v5.parse_filter(translated, root=path)


class _Translator:
    def __init__(self) -> None:
        self.predicates = 0

    def node(self, raw: object, path: str, depth: int, parent: str) -> list[Raw]:
        """The v5 operands one legacy item becomes inside a group whose operator is `parent`."""
        if isinstance(raw, dict) and any(k in raw for k in ("AND", "OR")):
            return [self.group(raw, path, depth)]
        alternatives, op = self.condition(raw, path)
        if len(alternatives) == 1 or op == parent:
            return alternatives  # `or` within `or` (or `and` within `and`) needs no group
        if depth > v5.MAX_DEPTH:
            raise v5.FilterError(
                path, f"groups nest deeper than {v5.MAX_DEPTH} levels once translated"
            )
        return [{"operator": op, "operands": alternatives}]

    def group(self, raw: Raw, path: str, depth: int) -> Raw:
        if depth > v5.MAX_DEPTH:
            raise v5.FilterError(path, f"groups nest deeper than {v5.MAX_DEPTH} levels")
        if len(raw) != 1:
            raise v5.FilterError(path, 'a group is one of {"AND": [...]} or {"OR": [...]}')
        name, items = next(iter(raw.items()))
        where = f"{path}.{name}"
        if name not in ("AND", "OR"):
            raise v5.FilterError(where, "unknown field")
        if not isinstance(items, list):
            raise v5.FilterError(where, "expected an array")
        if not items:
            raise v5.FilterError(where, "expected at least one condition")
        op = name.lower()
        operands = [
            out
            for i, item in enumerate(items)
            for out in self.node(item, f"{where}[{i}]", depth + 1, op)
        ]
        return {"operator": op, "operands": operands}

    def condition(self, raw: object, path: str) -> tuple[list[Raw], str]:
        """The condition's predicates and how they combine (`or`, or `and` when negated)."""
        if not isinstance(raw, dict):
            raise v5.FilterError(path, "expected a condition or a group")
        for name in raw:
            if name not in _CONDITION_KEYS:
                raise v5.FilterError(f"{path}.{name}", "unknown field")
        key, value = _required_text(raw, path, "key"), _required_text(raw, path, "value")
        if not v5.FIELD.fullmatch(key):
            raise v5.FilterError(f"{path}.key", "expected a string matching ^[a-zA-Z0-9_.-]+$")
        if "\x00" in value or len(value) > v5.MAX_VALUE_CHARS:
            raise v5.FilterError(
                f"{path}.value", f"must hold no U+0000 and at most {v5.MAX_VALUE_CHARS} characters"
            )
        kind = raw.get("filterType", "metadata")
        if kind not in _TYPES:
            raise v5.FilterError(f"{path}.filterType", f"expected one of {', '.join(_TYPES)}")
        negate = _flag(raw, path, "negate")
        ignore_case = _flag(raw, path, "ignoreCase")
        if ignore_case and kind not in ("metadata", "string_contains"):
            raise v5.FilterError(f"{path}.ignoreCase", f"not allowed with filterType {kind}")
        if "numericOperator" in raw and kind != "numeric":
            raise v5.FilterError(f"{path}.numericOperator", "allowed with filterType numeric only")
        case = {"caseSensitive": False} if ignore_case else {}
        if kind == "numeric":
            preds, op = self.numeric(raw, path, value, negate), "or"
        elif kind == "metadata":
            preds = [_pred(key, "neq" if negate else "eq", value, **case)]
            number = _number(value)
            if number is not None:
                preds.append(_pred(key, "neq" if negate else "eq", number))
            if value in ("true", "false"):
                preds.append(_pred(key, "neq" if negate else "eq", value == "true"))
            op = "and" if negate else "or"
        elif kind == "array_contains":
            preds, op = [_pred(key, "arrayNotContains" if negate else "arrayContains", value)], "or"
        else:
            preds, op = [_pred(key, "notContains" if negate else "contains", value, **case)], "or"
        self.predicates += len(preds)
        if self.predicates > v5.MAX_PREDICATES:
            raise v5.FilterError(
                path, f"more than {v5.MAX_PREDICATES} predicates in one filter once translated"
            )
        return preds, op

    def numeric(self, raw: Raw, path: str, value: str, negate: bool) -> list[Raw]:
        operator = raw.get("numericOperator", "=")
        if operator not in _NUMERIC:
            raise v5.FilterError(f"{path}.numericOperator", "expected one of >, <, >=, <=, =")
        number = _number(value)
        if number is None:
            raise v5.FilterError(f"{path}.value", "expected a finite number (as a string)")
        if negate:
            operator = _FLIPPED[operator]
        key = raw["key"]
        if operator == "!=":  # a number other than it: either side, so a missing key is not one
            return [_pred(key, "lt", number), _pred(key, "gt", number)]
        return [_pred(key, _NUMERIC[operator], number)]


def _pred(field: str, op: str, value: object, **extra: object) -> Raw:
    return {"field": field, "operator": op, "value": value, **extra}


def _required_text(raw: Raw, path: str, name: str) -> str:
    if name not in raw:
        raise v5.FilterError(f"{path}.{name}", "required")
    value = raw[name]
    if not isinstance(value, str):
        raise v5.FilterError(f"{path}.{name}", "expected a string")
    return value


def _flag(raw: Raw, path: str, name: str) -> bool:
    value = raw.get(name, False)
    if value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        raise v5.FilterError(f"{path}.{name}", 'expected a boolean, "true" or "false"')
    return value


def _number(text: str) -> int | float | None:
    """`text` as a JSON number when it reads as one the v5 filter can hold, else None."""
    if not _NUMBER.fullmatch(text):
        return None
    if _INTEGER.fullmatch(text) and -(2**63) <= int(text) < 2**63:
        return int(text)
    number = float(text)
    return number if math.isfinite(number) else None
