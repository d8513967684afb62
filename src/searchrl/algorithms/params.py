"""Typed, self-validating hyperparameter records for the registered algorithm components.

Every registered loss, penalty and advantage estimator takes one frozen dataclass of its own knobs. A field is
declared with :func:`knob`, which records its help text and its constraints (bounds, allowed choices) in the
field metadata; :func:`check_params` enforces them, and :func:`describe_field` renders them for error messages,
so the allowed values a user sees are derived from the declaration and never typed a second time.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

P = TypeVar("P")


class ParamError(ValueError):
    """A hyperparameter has a bad value. ``field`` is the dotted name relative to its record."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def knob(
    default: Any,
    *,
    help: str,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Sequence[str] | None = None,
) -> Any:
    """Declare a hyperparameter field with its help text and constraints (kept in the field metadata)."""
    meta = {"help": help, "ge": ge, "gt": gt, "le": le, "lt": lt, "choices": tuple(choices) if choices else None}
    return dataclasses.field(default=default, metadata=meta)


def _field_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def describe_field(cls: type, name: str) -> str:
    """Human-readable allowed values of one field, e.g. ``a float >= 0`` or ``one of ['action', 'token']``."""
    field = {f.name: f for f in dataclasses.fields(cls)}[name]
    meta = field.metadata
    if meta.get("choices"):
        return f"one of {list(meta['choices'])}"
    kind = _type_name(_field_types(cls)[name])
    operators = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))
    bounds = [f"{op} {meta[key]}" for key, op in operators if meta.get(key) is not None]
    return kind + (" " + " and ".join(bounds) if bounds else "")


def _type_name(tp: Any) -> str:
    args = typing.get_args(tp)
    if args and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return f"{_type_name(inner[0])} or null"
    return {float: "a number", int: "an integer", bool: "true or false", str: "a string"}.get(tp, str(tp))


def _coerce(tp: Any, value: Any) -> Any:
    """Return ``value`` converted to ``tp`` or raise TypeError; bools are never numbers here."""
    args = typing.get_args(tp)
    if args and type(None) in args:
        if value is None:
            return None
        tp = next(a for a in args if a is not type(None))
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError
        value = float(value)
        if not math.isfinite(value):
            raise TypeError
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise TypeError
        return value
    if tp is str:
        if not isinstance(value, str):
            raise TypeError
        return value
    return value


def check_params(obj: Any) -> None:
    """Validate (and coerce ints to floats on) every field of a params dataclass; raise ParamError on the first bad one.

    Called from each params class's ``__post_init__``; works on frozen dataclasses.
    """
    cls = type(obj)
    types = _field_types(cls)
    for field in dataclasses.fields(cls):
        value = getattr(obj, field.name)
        try:
            coerced = _coerce(types[field.name], value)
        except TypeError:
            raise ParamError(field.name, f"got {value!r}; expected {describe_field(cls, field.name)}") from None
        if coerced is not value:
            object.__setattr__(obj, field.name, coerced)
        if coerced is None:
            continue
        meta = field.metadata
        ok = True
        if meta.get("choices") is not None:
            ok = coerced in meta["choices"]
        else:
            for key, test in (
                ("ge", lambda v, b: v >= b),
                ("gt", lambda v, b: v > b),
                ("le", lambda v, b: v <= b),
                ("lt", lambda v, b: v < b),
            ):
                bound = meta.get(key)
                if bound is not None and not test(coerced, bound):
                    ok = False
        if not ok:
            raise ParamError(field.name, f"got {coerced!r}; expected {describe_field(cls, field.name)}")


def params_from_mapping(cls: type[P], raw: Mapping[str, Any] | None) -> P:
    """Build a params record from a plain mapping; unknown keys raise ParamError naming the allowed fields."""
    raw = {} if raw is None else raw
    if not isinstance(raw, Mapping):
        raise ParamError("", f"expected a mapping of {field_names(cls)}, got {type(raw).__name__}")
    allowed = field_names(cls)
    for key in raw:
        if key not in allowed:
            listing = allowed if allowed else "nothing (this component has no parameters)"
            raise ParamError(str(key), f"unknown key; allowed: {listing}")
    return cls(**raw)


def field_names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def params_to_dict(obj: Any) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


@dataclasses.dataclass(frozen=True)
class NoParams:
    """The params record of a component that has no knobs."""

    def __post_init__(self) -> None:
        check_params(self)
