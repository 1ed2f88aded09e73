"""Error codes are part of the protocol: each is unique, documented in docs/errors.md, and survives
the trip from a worker process to the client as the same class."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from wyoming_multitts.errors import (
    VOICE_ERRORS,
    EngineError,
    ModelFileError,
    VoiceError,
    code_error,
    context,
    for_client,
)

from .conftest import read_until, start_server

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTED = set(re.findall(r"^\| `([a-z-]+)` \|", (ROOT / "docs" / "errors.md").read_text(), re.M))


def request_error_codes() -> set[str]:
    """The string codes the package raises `RequestError` with (the handler, the request path
    in `speech.py`, the web page)."""
    trees = [
        ast.parse(path.read_text(encoding="utf-8"))
        for path in (ROOT / "wyoming_multitts").glob("*.py")
    ]
    return {
        node.args[1].value
        for tree in trees
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and getattr(node.func, "id", None) == "RequestError"
        and len(node.args) == 2
        and isinstance(node.args[1], ast.Constant)
    }


def test_every_code_is_unique_and_documented() -> None:
    voice_codes = [kind.code for kind in VOICE_ERRORS]
    request_codes = request_error_codes()
    assert len(set(voice_codes)) == len(voice_codes)
    assert request_codes and not request_codes & set(voice_codes)
    assert set(voice_codes) | request_codes == DOCUMENTED


def test_every_voice_error_class_is_listed() -> None:
    import wyoming_multitts.errors as errors

    classes = {
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, errors.VoiceError)
    }
    assert classes == set(VOICE_ERRORS)


@pytest.mark.parametrize("kind", VOICE_ERRORS)
def test_a_code_comes_back_as_its_class(kind: type) -> None:
    error = code_error(kind.code, "voice v: what happened")
    assert (
        type(error) is kind and error.code == kind.code and str(error) == "voice v: what happened"
    )


def test_an_unknown_code_travels_unchanged() -> None:
    error = code_error("from-a-newer-worker", "text")
    assert error.code == "from-a-newer-worker" and not isinstance(error, EngineError)


def test_a_class_keeps_its_code_whatever_its_name() -> None:
    assert ModelFileError.code == "model-file-missing"


@pytest.mark.parametrize("kind", VOICE_ERRORS)
def test_context_prefixes_the_message_and_keeps_the_class(kind: type) -> None:
    with pytest.raises(kind) as caught:
        with context("voice tara (model orpheus-3b)"):
            raise kind("file /m/x.gguf is truncated; download it again")
    error = caught.value
    assert type(error) is kind and error.code == kind.code
    assert (
        str(error)
        == "voice tara (model orpheus-3b): file /m/x.gguf is truncated; download it again"
    )
    assert type(error.__cause__) is kind and str(error.__cause__).startswith("file /m/x.gguf")


def test_context_keeps_a_code_set_on_the_error_and_nests() -> None:
    with pytest.raises(VoiceError) as caught:
        with context("voice v"):
            with context("reference audio"):
                raise code_error("from-a-newer-worker", "what happened")
    assert str(caught.value) == "voice v: reference audio: what happened"
    assert type(caught.value) is VoiceError and caught.value.code == "from-a-newer-worker"


def test_context_lets_other_exceptions_and_success_through() -> None:
    with pytest.raises(KeyError):
        with context("voice v"):
            raise KeyError("x")
    with context("voice v"):
        value = 1
    assert value == 1


@pytest.mark.parametrize(
    ("text", "client_sees"),
    [
        ("cannot write /data/hf/models--a--b/x/model.gguf (No space)", "cannot write …/model.gguf"),
        ("[Errno 2] No such file: '/root/voices/me.wav'", "No such file: '…/me.wav'"),
        ("fetching http://hub.local/org/name/resolve/main/x.gguf", "http://hub.local/org/name/"),
        ("voice a/b (model c): needs ~870 MB", "voice a/b (model c): needs ~870 MB"),
    ],
)
def test_clients_see_file_names_not_folders(text: str, client_sees: str) -> None:
    assert client_sees in for_client(text)
    assert "/data/hf" not in for_client(text) and "/root/" not in for_client(text)


async def test_warnings_about_one_client_are_limited_per_minute(
    tiny_models: Path, tmp_path: Path
) -> None:
    """A client looping on bad requests gets an error each time; the log a WARNING for the first
    5 of them in a minute, the rest at DEBUG."""
    server = start_server(tiny_models / "voices.yaml", tmp_path)
    try:
        for _ in range(8):
            async with server.client() as client:
                request = Synthesize(text="Hi.", voice=SynthesizeVoice("no-such-voice"))
                await client.write_event(request.event())
                assert (await read_until(client, "audio-stop"))[-1].data["code"] == "unknown-voice"
    finally:
        server.stop()
    assert server.log().count("WARNING:wyoming_multitts.handler:Refusing request") == 5
