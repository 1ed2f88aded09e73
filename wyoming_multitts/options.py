"""Typed engine options from the catalog's `options:` mappings (model level, then voice level)."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, Mapping, TypeVar

from .errors import OptionError
from .sampling import SamplingConfig

ConfigT = TypeVar("ConfigT")
SamplingT = TypeVar("SamplingT", SamplingConfig, None)


def apply_options(defaults: ConfigT, options: Mapping[str, Any]) -> ConfigT:
    """`defaults` (a dataclass) with the entries of `options` that name its fields.

    Values are converted to the type of the field's default (bool, int, float, str); errors name
    the option (the caller adds whose options they are).
    """
    changes: dict[str, Any] = {}
    for item in dataclasses.fields(defaults):  # type: ignore[arg-type]
        if item.name not in options:
            continue
        value, kind = options[item.name], type(getattr(defaults, item.name))
        if kind is bool and not isinstance(value, bool):
            raise OptionError(f"option {item.name} must be true or false, got {value!r}")
        try:
            changes[item.name] = kind(value) if value is not None else None
        except (TypeError, ValueError) as err:
            raise OptionError(
                f"option {item.name} must be a {kind.__name__}, got {value!r}"
            ) from err
    try:
        return dataclasses.replace(defaults, **changes)  # type: ignore[type-var]
    except ValueError as err:
        raise OptionError(str(err)) from err


def check_option_names(options: Mapping[str, Any], *configs: object) -> None:
    """Reject option names that none of `configs` (dataclasses) has: catches typos early."""
    known = {
        item.name
        for config in configs
        for item in dataclasses.fields(config)  # type: ignore[arg-type]
    }
    unknown = sorted(set(options) - known)
    if unknown:
        raise OptionError(
            f"unknown option(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})"
        )


@dataclasses.dataclass(frozen=True)
class Settings(Generic[ConfigT, SamplingT]):
    """What a request runs with: the engine's options and its sampling (None for an engine that
    samples with settings of its own, like Bark)."""

    options: ConfigT
    sampling: SamplingT


class VoiceOptions(Generic[ConfigT, SamplingT]):
    """An engine's options and sampling from the model's `options:`, then each voice's: names
    checked and values converted once per model and once per voice, not on every request.

    Errors name the option; the caller's context names the model (at load) or the voice (in a
    request)."""

    def __init__(
        self,
        options: ConfigT,
        sampling: SamplingT,
        model_options: Mapping[str, Any],
        model_only: tuple[str, ...] = (),
    ) -> None:
        """`model_only`: options a voice may not set (they shape what is loaded, e.g. the weight
        type)."""
        self._configs: tuple[object, ...] = (options,) if sampling is None else (options, sampling)
        self._model_only = frozenset(model_only)
        check_option_names(model_options, *self._configs)
        self.model: Settings[ConfigT, SamplingT] = Settings(
            apply_options(options, model_options), _merged(sampling, model_options)
        )
        """The model's settings (before any voice's options)."""
        self._voices: dict[str, Settings[ConfigT, SamplingT]] = {}

    def for_voice(
        self, name: str, voice_options: Mapping[str, Any]
    ) -> Settings[ConfigT, SamplingT]:
        """The settings of voice `name` (its options over the model's), checked on first use."""
        key = f"{name} {sorted(voice_options.items())!r}"  # one entry per voice and options
        if key not in self._voices:
            refused = sorted(self._model_only.intersection(voice_options))
            if refused:
                raise OptionError(f"{', '.join(refused)} is a model option, not a voice option")
            check_option_names(voice_options, *self._configs)
            model = self.model
            self._voices[key] = Settings(
                apply_options(model.options, voice_options),
                _merged(model.sampling, voice_options),
            )
        return self._voices[key]


def _merged(sampling: ConfigT, options: Mapping[str, Any]) -> ConfigT:
    """`apply_options` for a sampling that may be None (an engine without one)."""
    return sampling if sampling is None else apply_options(sampling, options)
