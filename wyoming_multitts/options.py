"""Typed engine options from the catalog's `options:` mappings (model level, then voice level)."""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping, TypeVar

from .errors import VoiceError

ConfigT = TypeVar("ConfigT")


class OptionError(VoiceError, ValueError):
    """An option in the catalog has an unknown name or a value of the wrong type."""


def apply_options(defaults: ConfigT, options: Mapping[str, Any], where: str) -> ConfigT:
    """`defaults` (a dataclass) with the entries of `options` that name its fields.

    Values are converted to the type of the field's default (bool, int, float, str); `where`
    names the catalog entry in errors.
    """
    changes: dict[str, Any] = {}
    for item in dataclasses.fields(defaults):  # type: ignore[arg-type]
        if item.name not in options:
            continue
        value, kind = options[item.name], type(getattr(defaults, item.name))
        if kind is bool and not isinstance(value, bool):
            raise OptionError(f"{where}: option {item.name} must be true or false, got {value!r}")
        try:
            changes[item.name] = kind(value) if value is not None else None
        except (TypeError, ValueError) as err:
            raise OptionError(
                f"{where}: option {item.name} must be a {kind.__name__}, got {value!r}"
            ) from err
    try:
        return dataclasses.replace(defaults, **changes)  # type: ignore[type-var]
    except ValueError as err:
        raise OptionError(f"{where}: {err}") from err


def check_option_names(options: Mapping[str, Any], where: str, *configs: object) -> None:
    """Reject option names that none of `configs` (dataclasses) has: catches typos early."""
    known = {
        item.name
        for config in configs
        for item in dataclasses.fields(config)  # type: ignore[arg-type]
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(
            f"{where}: unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )
