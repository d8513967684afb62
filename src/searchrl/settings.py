"""Declaring and validating config sections: the one machinery every section of searchrl uses.

A section is a dataclass whose fields are declared with :func:`setting` (default, help text, bounds, allowed
values). :func:`build` makes one from plain data (YAML, dotted overrides, verl's config); :func:`check` validates
one made in Python (call it from ``__post_init__``). Both raise :class:`~searchrl.errors.SettingError` naming the
dotted key (``rollout.max_turns``, ``algorithm.sapo.gamma``) and the allowed values, derived from the declaration,
so they are never typed a second time. :func:`to_dict`, :func:`known_keys` and :func:`describe` serve saving,
suggestions and ``searchrl train --show-config``.

What ``build`` understands besides one field per key:

- a nested section (a field typed with a dataclass) is built from a mapping, starting from the field's default;
- a map of sections (``dict[str, Section]``) changes only the entries and keys given; a new entry needs every key
  that has no default, and ``false`` (or null) switches an existing entry off (its ``enabled`` becomes false);
- ``preset: NAME`` starts a section from ``cls.presets()[NAME]``, for a class that offers ``presets()``;
- ``setting(alias=...)`` accepts a second name for a key (a monitor rule's ``metric`` for ``metrics``).

This module imports nothing from searchrl but ``searchrl.errors``, so every layer (``algorithms`` included) can use it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar, Union

from searchrl.errors import ConfigError, SettingError

__all__ = ["SettingError", "build", "check", "describe", "known_keys", "setting", "to_dict", "unknown_key"]

T = TypeVar("T")
_MISSING = dataclasses.MISSING


def setting(
    default: Any = _MISSING,
    help: str = "",
    *,
    ge: float | None = None,
    gt: float | None = None,
    le: float | None = None,
    lt: float | None = None,
    choices: Sequence[Any] | None = None,
    alias: str | None = None,
    factory: Any = _MISSING,
) -> Any:
    """A dataclass field carrying its help text and constraints. No default: the key is required. `factory`: a
    mutable default or a nested section (`setting(factory=LoraConfig)`). `alias`: a second accepted key name."""
    metadata = {
        "help": help, "ge": ge, "gt": gt, "le": le, "lt": lt, "alias": alias,
        "choices": tuple(choices) if choices is not None else None,
    }
    if factory is not _MISSING:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def build(cls: type[T], raw: Mapping[str, Any] | None, where: str = "", *, strict: bool = False) -> T:
    """Make section `cls` from a mapping (None: all defaults), validating every key and value; errors name
    `where.<key>`.

    Values from text may spell numbers and booleans as strings (`"0.5"`, `"true"`; YAML 1.1 reads `1e-6` as a
    string), write an integer as `3.0` and a one-item list as its item. `strict=True` takes values as the Python
    types they are: the algorithm knobs, which Python callers and verl's typed config hand over.
    """
    return _Reader(strict=strict, building=True, root=cls, root_where=where).section(cls, raw, where, None)


def check(obj: Any, where: str = "") -> None:
    """Validate a section made in Python, in place: types (ints widen to floats, lists become tuples where
    declared so), bounds and allowed values. Call it from `__post_init__` so that direct construction is checked
    too; errors name `where.<field>` (a builder re-homes them under the path it builds at)."""
    reader = _Reader(strict=True, building=False, root=type(obj), root_where=where)
    hints = _hints(type(obj))
    for f in dataclasses.fields(obj):
        if not f.init:
            continue
        value = getattr(obj, f.name)
        try:
            out = reader.value(value, hints[f.name], f.name, f.metadata, None)
        except SettingError as err:
            raise err.at(where) from None
        if out is not value:
            object.__setattr__(obj, f.name, out)  # works on frozen dataclasses


def unknown_key(key: str, allowed: Sequence[str], where: str = "", elsewhere: Sequence[str] = ()) -> SettingError:
    """The error for an unknown `key` of section `where`, with the allowed keys and a suggestion: the closest
    allowed key, else a dotted key of `elsewhere` (the whole tree) with the same last part (`lr` meant as
    `train.lr`), else one close to the whole dotted key whose last part starts alike (`model.lora.rank`)."""
    near = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    if near:
        best: str | None = _join(where, near[0])
    else:
        same_leaf = [k for k in elsewhere if k.rsplit(".", 1)[-1] == key]
        alike = [k for k in elsewhere if k.rsplit(".", 1)[-1][:1] == key[:1]]
        best = (same_leaf or difflib.get_close_matches(_join(where, key), alike, n=1, cutoff=0.6) or [None])[0]
    hint = f"did you mean '{best}'? " if best else ""
    listing = f"allowed keys: {', '.join(allowed)}" if allowed else "this section takes no keys"
    return SettingError(key, f"unknown key; {hint}{listing}", where)


def to_dict(obj: Any) -> Any:
    """A section as plain YAML-safe data (tuples become lists); `init=False` fields are left out."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_dict(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.init}
    if isinstance(obj, (list, tuple)):
        return [to_dict(v) for v in obj]
    if isinstance(obj, Mapping):
        return {str(k): to_dict(v) for k, v in obj.items()}
    return obj


def known_keys(cls: type, prefix: str = "") -> list[str]:
    """Every dotted leaf key of a section tree (a nested section's keys, not the section itself)."""
    hints = _hints(cls)
    out = [f"{prefix}preset"] if _presets(cls) is not None else []
    for f in _init_fields(cls).values():
        tp = hints[f.name]
        out.extend(known_keys(tp, f"{prefix}{f.name}.") if dataclasses.is_dataclass(tp) else [f"{prefix}{f.name}"])
    return out


def describe(cls: type, prefix: str = "") -> list[tuple[str, str, str, str]]:
    """(key, type, default, help) for every leaf key: the table `searchrl train --show-config` prints."""
    hints = _hints(cls)
    rows = []
    presets = _presets(cls)
    if presets is not None:
        rows.append((f"{prefix}preset", "str | null", "None",
                     f"start from a named preset, then apply the keys given [allowed: {', '.join(presets)}]"))
    for f in _init_fields(cls).values():
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            rows.extend(describe(tp, f"{prefix}{f.name}."))
            continue
        help_text = f.metadata.get("help", "")
        if f.metadata.get("choices"):
            help_text += f" [allowed: {', '.join(map(str, f.metadata['choices']))}]"
        default = _default(f)
        shown = "(required)" if default is _MISSING else _show(to_dict(default))
        rows.append((f"{prefix}{f.name}", _type_name(tp), shown, help_text))
    return rows


# ------------------------------------------------------------------------------------------------ internals


@functools.lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _init_fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def _required(f: dataclasses.Field) -> bool:
    return f.default is _MISSING and f.default_factory is _MISSING


def _default(f: dataclasses.Field) -> Any:
    if f.default is not _MISSING:
        return f.default
    if f.default_factory is not _MISSING:
        return f.default_factory()
    return _MISSING


def _presets(cls: type) -> Mapping[str, Any] | None:
    presets = getattr(cls, "presets", None)
    return presets() if callable(presets) else None


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where and key else where or key


def _is_section_map(tp: Any) -> bool:
    args = typing.get_args(tp)
    return typing.get_origin(tp) is dict and len(args) == 2 and dataclasses.is_dataclass(args[1])


class _Reader:
    """One validation pass: `strict` (Python types only) or not (text spellings too), `building` sections from
    mappings (build) or only accepting built ones (check). `root` and `root_where` feed unknown-key suggestions."""

    def __init__(self, *, strict: bool, building: bool, root: type, root_where: str) -> None:
        self.strict, self.building, self.root, self.root_where = strict, building, root, root_where

    def section(self, cls: type, raw: Any, where: str, base: Any) -> Any:
        """Section `cls` from mapping `raw`, starting from `base` (a preset, a default entry) or the defaults."""
        if raw is None:
            raw = {}
        if not isinstance(raw, Mapping):
            raise SettingError("", f"expected a mapping of keys, got {_show(raw)}", where)
        raw = dict(raw)
        fields = _init_fields(cls)
        allowed: list[str] = []
        presets = _presets(cls)
        if presets is not None:
            allowed.append("preset")
            if "preset" in raw:
                name = raw.pop("preset")
                if not isinstance(name, str) or name not in presets:
                    listing = ", ".join(presets)
                    raise SettingError("preset", f"unknown preset {name!r}; allowed values: {listing}", where)
                base = presets[name]
        for f in fields.values():
            allowed.append(f.name)
            alias = f.metadata.get("alias")
            if alias:
                allowed.append(alias)
                if alias in raw:
                    if f.name in raw:
                        raise SettingError("", f"give either `{alias}` or `{f.name}`, not both", where)
                    raw[f.name] = raw.pop(alias)
        for key in raw:
            if key not in fields:
                elsewhere = [_join(self.root_where, k) for k in known_keys(self.root)]
                raise unknown_key(str(key), allowed, where, elsewhere)
        hints = _hints(cls)
        kwargs = {}
        for name, value in raw.items():
            f = fields[name]
            inner = getattr(base, name) if base is not None else _default(f)
            inner = None if inner is _MISSING else inner
            kwargs[name] = self.value(value, hints[name], _join(where, name), f.metadata, inner)
        if base is None:
            missing = [n for n, f in fields.items() if n not in kwargs and _required(f)]
            if missing:
                raise SettingError("", f"missing {', '.join(missing)}", where)
        try:
            return cls(**kwargs) if base is None else dataclasses.replace(base, **kwargs)
        except SettingError as err:  # the section's own __post_init__ check: it names keys relative to itself
            raise err.at(where) from None
        except ConfigError:
            raise
        except (TypeError, ValueError) as exc:
            raise SettingError("", str(exc), where) from None

    def value(self, value: Any, tp: Any, key: str, meta: Mapping[str, Any], base: Any) -> Any:
        """`value` converted to type `tp`, then checked against the field's allowed values and bounds."""
        out = self.convert(value, tp, key, base)
        choices = meta.get("choices")
        if choices is not None and out is not None:
            for item in out if isinstance(out, (list, tuple)) else (out,):
                if item not in choices:
                    raise _not_allowed(key, item, choices, nullable=type(None) in typing.get_args(tp))
        if isinstance(out, (int, float)) and not isinstance(out, bool):
            _check_bounds(out, meta, key)
        return out

    def convert(self, value: Any, tp: Any, key: str, base: Any = None) -> Any:
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if tp is Any:
            return value
        if origin in (Union, types.UnionType):
            if value is None:
                if type(None) in args:
                    return None
                raise SettingError(key, f"may not be null; expected {_type_name(tp)}")
            errors = []
            for inner in (a for a in args if a is not type(None)):
                try:
                    return self.convert(value, inner, key, base)
                except SettingError as exc:
                    errors.append(exc)
            if len(errors) == 1:
                raise errors[0]
            raise SettingError(key, f"expected {_type_name(tp)}, got {_show(value)}")
        if origin is Literal:
            if value not in args:
                raise _not_allowed(key, value, args)
            return value
        if dataclasses.is_dataclass(tp):
            if isinstance(value, tp):
                return value
            if self.building and (value is None or isinstance(value, Mapping)):
                return self.section(tp, value, key, base)
            raise SettingError(key, f"expected a mapping of {tp.__name__} keys, got {_show(value)}")
        if _is_section_map(tp):
            return self.section_map(value, args[1], key, base)
        if tp is bool:
            if isinstance(value, bool):
                return value
            if not self.strict and isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise SettingError(key, f"expected true or false, got {_show(value)}")
        if tp is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            number = None if self.strict else _as_float(value)
            if number is not None and number.is_integer():
                return int(number)
            raise SettingError(key, f"expected an integer, got {_show(value)}")
        if tp is float:
            number = _as_float(value) if not self.strict or not isinstance(value, str) else None
            if number is None:
                raise SettingError(key, f"expected a number, got {_show(value)}")
            if not math.isfinite(number):
                raise SettingError(key, f"expected a finite number, got {value}")
            return number
        if tp is str:
            if isinstance(value, str):
                return value
            if not self.strict and isinstance(value, (int, float)) and not isinstance(value, bool):
                return str(value)
            raise SettingError(key, f"expected a string, got {_show(value)}")
        if origin in (tuple, list):
            fixed = origin is tuple and args and args[-1] is not Ellipsis
            if not self.strict and not fixed and isinstance(value, (str, int, float, bool)):
                value = [value]  # a one-item list written as its item (`metric: reward/mean`)
            if not isinstance(value, (list, tuple)):
                raise SettingError(key, f"expected a list, got {_show(value)} (write it as [a, b])")
            if fixed:
                if len(value) != len(args):
                    raise SettingError(key, f"expected a list of {len(args)} values, got {len(value)}")
                return tuple(self.convert(v, a, f"{key}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
            items = [self.convert(v, args[0] if args else Any, f"{key}[{i}]") for i, v in enumerate(value)]
            return tuple(items) if origin is tuple else items
        if origin is dict or tp is dict:
            if not isinstance(value, Mapping):
                raise SettingError(key, f"expected a mapping, got {_show(value)}")
            return dict(value)
        raise TypeError(f"{key}: unsupported setting type {tp!r}")  # a declaration bug, not user input

    def section_map(self, value: Any, cls: type, key: str, base: Any) -> dict[str, Any]:
        """A `dict[str, Section]`: built, each entry merged onto the entry of the same name in `base`."""
        if not self.building:
            if not isinstance(value, Mapping) or not all(isinstance(v, cls) for v in value.values()):
                raise SettingError(key, f"expected a mapping of name -> {cls.__name__}, got {_show(value)}")
            return dict(value)
        out = dict(base) if isinstance(base, Mapping) else {}
        if value is None:
            return out
        if not isinstance(value, Mapping):
            raise SettingError(key, f"expected a mapping of name -> settings, got {_show(value)}")
        for name, spec in value.items():
            name, where = str(name), _join(key, str(name))
            prior = out.get(name)
            if spec is False or spec is None:
                if prior is None or not hasattr(prior, "enabled"):
                    raise SettingError(name, "only an existing entry can be switched off with false; existing "
                                       f"entries: {', '.join(out)}", key)
                out[name] = dataclasses.replace(prior, enabled=False)
            elif isinstance(spec, cls):
                out[name] = spec
            elif isinstance(spec, Mapping):
                if prior is None:
                    given = set(spec) | {f.name for f in _init_fields(cls).values() if f.metadata.get("alias") in spec}
                    missing = [n for n, f in _init_fields(cls).items() if _required(f) and n not in given]
                    if missing:
                        raise SettingError(name, f"a new entry needs {', '.join(missing)} (existing entries: "
                                           f"{', '.join(out)})", key)
                out[name] = self.section(cls, spec, where, prior)
            else:
                raise SettingError(name, f"expected a mapping of settings or false, got {_show(spec)}", key)
        return out


def _not_allowed(key: str, value: Any, choices: Sequence[Any], *, nullable: bool = False) -> SettingError:
    near = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    listing = ", ".join(map(str, choices)) + (" or null" if nullable else "")
    return SettingError(key, f"{_show(value)} is not allowed; allowed values: {listing}{hint}")


def _check_bounds(value: float, meta: Mapping[str, Any], key: str) -> None:
    ge, gt, le, lt = (meta.get(k) for k in ("ge", "gt", "le", "lt"))
    if (
        (ge is None or value >= ge) and (gt is None or value > gt)
        and (le is None or value <= le) and (lt is None or value < lt)
    ):
        return
    lower = ("[", ge) if ge is not None else ("(", gt) if gt is not None else None
    upper = ("]", le) if le is not None else (")", lt) if lt is not None else None
    if lower and upper:
        rule = f"in {lower[0]}{lower[1]}, {upper[1]}{upper[0]}"
    elif lower:
        rule = f"{'>=' if lower[0] == '[' else '>'} {lower[1]}"
    else:
        rule = f"{'<=' if upper[0] == ']' else '<'} {upper[1]}"
    raise SettingError(key, f"must be {rule}, got {value}")


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is Literal:
        return "|".join(map(str, typing.get_args(tp)))
    if origin in (tuple, list):
        return "list"
    if tp is type(None):
        return "null"
    return getattr(tp, "__name__", str(tp))


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
