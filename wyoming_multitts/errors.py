"""The one base class of errors a user can act on."""


class VoiceError(RuntimeError):
    """A problem with a voice's model, files, device or options; the message names the voice (or
    the model) and the next step. The handler sends it to the client as an `error` event."""
