"""Every error a user can act on, each with the stable `code` its Wyoming `error` event carries.

The handler sends `Error(text=for_client(str(err)), code=err.code)` and closes that connection
(the log keeps the whole text: `for_client` takes the folders off absolute paths); the codes are
part of the protocol (docs/errors.md lists them), so a class may be renamed but its code stays.
Messages name the voice or model, the file, and the next step; context is added where an error
is caught (`raise … from err`, see `context`), not threaded through signatures.
"""

from __future__ import annotations

import contextlib
import re
from typing import Iterator

ABSOLUTE_PATH = re.compile(r"(?<![\w/.:~-])/(?:[^\s/:;,()'\"]+/)+(?=[^\s/:;,()'\"])")
"""The folders of an absolute path in a message (not a URL's: after `:` or `/`)."""


def for_client(message: str) -> str:
    """`message` as a client sees it: absolute paths lose their folders, which say how the
    server's machine is laid out to anyone on the network (the log keeps them)."""
    return ABSOLUTE_PATH.sub("…/", message)


class VoiceError(RuntimeError):
    """A problem with a voice's model, files, device or options. The handler sends it to the
    client as an `error` event."""

    code = "voice-error"


class EngineError(VoiceError):
    """An engine failed in a way the user can act on (a malformed file, text it cannot speak)."""

    code = "engine-error"


class OptionError(VoiceError, ValueError):
    """An option in the catalog has an unknown name or a value of the wrong type."""

    code = "bad-option"


class DeviceError(VoiceError):
    """The requested device is not available in this build or on this machine."""

    code = "device-unavailable"


class ModelFileError(VoiceError):
    """A model file could not be found or downloaded; the message says which and what to do."""

    code = "model-file-missing"


class LlamaError(VoiceError):
    """llama.cpp refused a model or a step; the message names the file and what to check."""

    code = "llama-cpp-failed"


class ConvertError(VoiceError):
    """A checkpoint cannot be converted to what the engine runs (Qwen3-TTS); the message names
    the folder, the missing file, key or tensor, and what to do."""

    code = "conversion-failed"


class SpeakerError(VoiceError):
    """A speaker profile or reference recording is missing or malformed; the message names the
    file and the problem."""

    code = "bad-speaker"


class VocabularyError(VoiceError):
    """The model's vocabulary lacks a token the engine needs or has them out of order."""

    code = "bad-vocabulary"


class ModelTooLargeError(VoiceError):
    """A model does not fit the memory budget even with every other model unloaded."""

    code = "model-too-large"


class ModelBusyError(VoiceError):
    """Too many requests already wait for this model (`--max-waiting`)."""

    code = "model-busy"


class WorkerDiedError(VoiceError):
    """The model's worker process ended unexpectedly (crash, abort, kill)."""

    code = "model-crashed"


class NotEnoughDiskError(ModelFileError):
    """The model's files would leave less free space on the cache's disk than it must keep."""

    code = "not-enough-disk"


class RefusedInstructionError(WorkerDiedError):
    """The worker died of SIGILL: its native code uses an instruction this CPU refuses."""

    code = "cpu-refused-instruction"


class LoadTimeoutError(VoiceError):
    """Loading took longer than `--load-timeout`; the worker was killed."""

    code = "load-timeout"


class InternalError(VoiceError):
    """A bug or an unforeseen library failure; the message keeps the original exception."""

    code = "internal-error"


VOICE_ERRORS: tuple[type[VoiceError], ...] = (
    VoiceError,
    EngineError,
    OptionError,
    DeviceError,
    ModelFileError,
    NotEnoughDiskError,
    LlamaError,
    ConvertError,
    SpeakerError,
    VocabularyError,
    ModelTooLargeError,
    ModelBusyError,
    WorkerDiedError,
    RefusedInstructionError,
    LoadTimeoutError,
    InternalError,
)
"""Every class above; `code_error` and the documentation test read it."""


@contextlib.contextmanager
def context(where: str) -> Iterator[None]:
    """Prefix `where` to any `VoiceError` raised inside: the same class and code, the message
    `f"{where}: {err}"`, chained `from` the original.

    The caller that knows who asked ("voice tara (model orpheus-3b)") wraps the work; the code
    below it names only the file, the problem and the next step.
    """
    try:
        yield
    except VoiceError as err:
        wrapped = type(err)(f"{where}: {err}")
        wrapped.code = err.code  # also a code set on the instance (`code_error`)
        raise wrapped from err


def code_error(code: str, message: str) -> VoiceError:
    """The error of `code` with `message`: how a worker's failure is raised again in the server."""
    kind = next((kind for kind in VOICE_ERRORS if kind.code == code), VoiceError)
    error = kind(message)
    error.code = code  # an unknown code (a newer worker) travels unchanged
    return error
