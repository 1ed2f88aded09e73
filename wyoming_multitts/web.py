"""The web page: every voice and its model's state, try a voice, download or delete a model's
files, and make your own voices from a recording. A second face beside the Wyoming handler: it
calls the same live catalog, registry and request path (`speech.py`), never an engine, and
nothing below it knows it exists.

Off unless `--web PORT` is given; it listens on `--web-host` (127.0.0.1) and answers only the
client addresses of `--web-allow` (loopback unless told otherwise; the add-on names Home
Assistant's ingress proxy, which does the authentication). Requests that change anything carry
the page's per-process token in a header (`TOKEN_HEADER`) and, when the browser sends one, an
`Origin` of the page's own host: another site open in the same browser cannot forge them. Every
URL the page uses is relative, so it works under Home Assistant's ingress path prefix as well.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import secrets
import struct
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlparse

from aiohttp import web

from .catalog import Catalog, ModelSpec
from .errors import VoiceError, for_client
from .hub import Hub
from .live_catalog import LiveCatalog
from .model_files import ModelFiles, ModelFilesError
from .own_voices import MAX_RECORDING_BYTES, OwnVoiceError
from .registry import ModelRegistry
from .speech import RequestError, Speech, SpeechSettings, voice_settings
from .web_settings import WebSettings

_LOGGER = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent / "static"
"""The page's HTML, JavaScript and CSS (package data: no build step)."""
TOKEN_HEADER = "X-MultiTTS-Token"
"""Header that carries the page's token on every request that changes state."""
TOKEN_PLACEHOLDER = "{{TOKEN}}"
"""Where index.html takes the token."""
MAX_FORM_BYTES = MAX_RECORDING_BYTES + 64 * 1024
"""Largest request body: a recording at the size own voices take, and its form fields."""
FRAME = struct.Struct("<cI")
"""The speech stream's frames: a kind byte and a payload length, then the payload. Kinds: `S`
(the sample rate, a little-endian u32), `A` (16-bit mono PCM), `E` (an error's one-line
text, UTF-8), `D` (done, empty). The page reads them with fetch's stream reader."""
RECORDING_ENGINES = ("qwen3tts", "outetts")
"""Engines whose models can speak from a recording (Qwen3-TTS Base, OuteTTS 0.3 and 1.0)."""
RECORDING_MODEL_HINTS = ("base", "0.3", "1.0")
"""Words in a model's description, repo or path that make it one of those models."""


class WebPage:
    """The page's application and what it serves from."""

    def __init__(
        self,
        settings: WebSettings,
        live: LiveCatalog,
        registry: ModelRegistry,
        speech: SpeechSettings,
        hub: Hub,
    ) -> None:
        self._settings = settings
        self._live = live
        self._registry = registry
        self._speech = Speech(live, registry, speech)
        self._max_text_chars = speech.max_text_chars
        self.files = ModelFiles(live.current, hub)
        self.token = secrets.token_urlsafe(32)
        self._allowed = [ipaddress.ip_network(a, strict=False) for a in settings.allowed]
        self._runner: web.AppRunner | None = None
        self._preparing: dict[str, _Preparation] = {}
        """Own voices being made ready (an OuteTTS speaker profile), by name."""
        live.subscribe(self._catalog_changed)

    def _catalog_changed(self, catalog: Catalog) -> None:
        self.files.catalog = catalog
        self.files.refresh()

    def app(self) -> web.Application:
        """The aiohttp application (tests serve it themselves)."""
        app = web.Application(
            middlewares=[self._guard], client_max_size=MAX_FORM_BYTES
        )  # fmt: skip
        app.router.add_get("/", self._index)
        app.router.add_static("/static/", STATIC_DIR)
        app.router.add_get("/api/state", self._state)
        app.router.add_post("/api/speak", self._speak)
        app.router.add_post("/api/models/{name}/download", self._download)
        app.router.add_post("/api/models/{name}/cancel", self._cancel)
        app.router.add_post("/api/models/{name}/delete", self._delete_files)
        app.router.add_post("/api/own-voices", self._add_voice)
        app.router.add_post("/api/own-voices/{name}/rename", self._rename_voice)
        app.router.add_post("/api/own-voices/{name}/delete", self._delete_voice)
        return app

    async def start(self) -> None:
        """Listen; `OSError` when the port is taken."""
        self.files.refresh()
        # a browser that stops listening cancels its request, inside the worker too
        self._runner = web.AppRunner(self.app(), access_log=None, handler_cancellation=True)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._settings.host, self._settings.port)
        await site.start()
        _LOGGER.info("Web page on http://%s:%d/", self._settings.host, self._settings.port)

    async def close(self) -> None:
        """Stop downloads started here and stop listening."""
        await self.files.close()
        for preparation in self._preparing.values():
            preparation.task.cancel()  # the profile's own run belongs to the registry
        if self._runner is not None:
            await self._runner.cleanup()

    # ---- every request

    @web.middleware
    async def _guard(
        self, request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """Only allowed clients; state changes only with the token and from the page's origin;
        a refusal is one line the page shows, and the log names the client."""
        client = request.remote or ""
        try:
            address = ipaddress.ip_address(client.split("%")[0])
        except ValueError:
            address = None
        if address is None or not any(address in network for network in self._allowed):
            _LOGGER.warning("Web page: refused client %s (not in --web-allow)", client)
            return _error(
                403,
                RequestError(
                    f"client {client} is not allowed; add it with --web-allow",
                    "client-not-allowed",
                ),
            )
        if request.method == "POST":
            if not secrets.compare_digest(request.headers.get(TOKEN_HEADER, ""), self.token):
                _LOGGER.warning("Web page: %s %s without the page's token", client, request.path)
                return _error(
                    403,
                    RequestError(
                        "this request lacks the page's token; reload the page", "missing-token"
                    ),
                )
            origin = request.headers.get("Origin")
            host = request.headers.get("X-Forwarded-Host", request.host)
            if origin and origin != "null" and urlparse(origin).netloc != host:
                _LOGGER.warning("Web page: %s %s from origin %s", client, request.path, origin)
                return _error(
                    403,
                    RequestError(
                        f"requests from {origin[:80]} are not accepted; use the page",
                        "foreign-origin",
                    ),
                )
        try:
            return await handler(request)
        except (RequestError, VoiceError) as err:
            refusal = RequestError(str(err), err.code)
        except OwnVoiceError as err:
            refusal = RequestError(str(err), "own-voice-refused")
        except ModelFilesError as err:
            refusal = RequestError(str(err), "model-files-failed")
        _LOGGER.warning("Web page: %s %s refused: %s", client, request.path, refusal)
        return _error(400, refusal)

    # ---- the page and its state

    async def _index(self, request: web.Request) -> web.Response:
        html = await asyncio.to_thread((STATIC_DIR / "index.html").read_text, "utf-8")
        return web.Response(
            text=html.replace(TOKEN_PLACEHOLDER, self.token),
            content_type="text/html",
            headers={"Cache-Control": "no-store"},
        )

    async def _state(self, request: web.Request) -> web.Response:
        """Every voice and model, with each model's state and download."""
        catalog = self._live.current
        loaded = self._registry.loaded_models()
        downloads = await self.files.downloads()
        models = {
            name: {
                "engine": spec.engine,
                "description": spec.description or "",
                "state": _state_of(name, loaded, downloads, self.files.on_disk),
                "memory": loaded.get(name),
                "download": downloads.get(name),
                "error": self.files.errors.get(name),
                "takes_recording": _takes_recording(spec, catalog),
                "downloadable": any(ref.repo for ref in spec.files.values()),
            }
            for name, spec in catalog.models.items()
        }
        own = set(catalog.own_voices)
        voices = [
            {
                "name": spec.name,
                "model": spec.model,
                "engine": catalog.models[spec.model].engine,
                "languages": list(spec.languages),
                "speakers": list(spec.speakers or ((spec.speaker,) if spec.speaker else ())),
                "description": spec.description or spec.name,
                "own": spec.name in own,
                "preparing": (
                    self._preparing[spec.name].view()
                    if spec.name in own and spec.name in self._preparing
                    else None
                ),
            }
            for spec in catalog.voices.values()
        ]
        return web.json_response({"voices": voices, "models": models})

    # ---- try a voice

    async def _speak(self, request: web.Request) -> web.StreamResponse:
        """Speak a text in a voice through the same path as a Wyoming request; the audio
        streams back in frames (`FRAME`) as it is made."""
        body = await _json(request)
        text, name, speaker = body.get("text"), body.get("voice"), body.get("speaker") or None
        catalog = self._live.current
        if not isinstance(text, str) or not isinstance(name, str):
            raise RequestError("give a voice and a text", "malformed-request")
        spec = catalog.voices.get(name)
        if spec is None:
            raise RequestError(f"unknown voice {name[:80]!r}; reload the page", "unknown-voice")
        if speaker is not None and speaker not in (spec.speakers or (spec.speaker,)):
            raise RequestError(
                f"voice {name} has no speaker {str(speaker)[:40]!r}", "unknown-speaker"
            )
        self._speech.check_text(text)
        response = web.StreamResponse(
            headers={"Content-Type": "application/octet-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        sink = _FrameSink(response)
        started = time.monotonic()
        try:
            voice = voice_settings(spec, speaker or spec.speaker)
            await self._speech.speak_once(spec, voice, text, sink)
        except (RequestError, VoiceError) as err:
            _LOGGER.warning("Web page: voice %s: %s", name, err)
            await sink.frame(b"E", for_client(str(err)).encode("utf-8"))
        except ConnectionResetError:
            _LOGGER.info("Web page: the browser stopped listening to voice %s", name)
            return response
        else:
            _LOGGER.info("Web page: spoke voice %s in %.2f s", name, time.monotonic() - started)
        await sink.frame(b"D", b"")
        await response.write_eof()
        return response

    # ---- models

    def _model(self, request: web.Request) -> str:
        name = request.match_info["name"]
        if name not in self._live.current.models:
            raise RequestError(f"unknown model {name[:80]!r}; reload the page", "unknown-model")
        return name

    async def _download(self, request: web.Request) -> web.Response:
        await self.files.download(self._model(request))
        return web.json_response({"ok": True})

    async def _cancel(self, request: web.Request) -> web.Response:
        name = self._model(request)
        if not await self.files.cancel(name):
            raise RequestError(
                f"model {name}: no download started on this page to cancel", "nothing-to-cancel"
            )
        return web.json_response({"ok": True})

    async def _delete_files(self, request: web.Request) -> web.Response:
        name = self._model(request)
        if name in self._registry.loaded_models() or self.files.downloading(name):
            raise RequestError(
                f"model {name} is loaded or downloading; delete its files once it is unloaded "
                "(--unload-after) or the download has ended",
                "model-in-use",
            )
        freed = await self.files.delete(name)
        _LOGGER.info("Web page: deleted %.1f MB of model %s", freed / 1e6, name)
        return web.json_response({"freed": freed})

    # ---- your own voices

    async def _add_voice(self, request: web.Request) -> web.Response:
        """Make a voice from an uploaded or recorded WAV (multipart form)."""
        try:
            form = await request.post()
        except web.HTTPRequestEntityTooLarge:
            raise RequestError(
                f"the recording is over {MAX_RECORDING_BYTES / 1e6:g} MB; record 20 s at most",
                "upload-too-large",
            ) from None
        upload = form.get("recording")
        if not isinstance(upload, web.FileField):
            raise RequestError("choose or record a WAV file", "malformed-request")
        wav = await asyncio.to_thread(upload.file.read, MAX_RECORDING_BYTES + 1)
        fields = {key: str(form.get(key) or "") for key in ("name", "model", "language", "text")}
        voice = await self._live.add_own_voice(
            fields["name"], fields["model"], wav, fields["text"], fields["language"] or "en"
        )
        _LOGGER.info("Web page: made voice %s (model %s)", voice.name, voice.model)
        self._prepare(voice.name)
        return web.json_response({"name": voice.name})

    async def _rename_voice(self, request: web.Request) -> web.Response:
        body = await _json(request)
        new = body.get("name")
        if not isinstance(new, str):
            raise RequestError("give the new name", "malformed-request")
        voice = await self._live.rename_own_voice(request.match_info["name"], new)
        self._prepare(voice.name)
        return web.json_response({"name": voice.name})

    def _prepare(self, name: str) -> None:
        """Make a new own voice ready now, the way its first request would (an OuteTTS speaker
        profile, made by `create-speaker` in its own process), so the page can show it being
        made and any error, and the voice's first request does not wait for it."""
        spec = self._live.current.voices[name]
        work = self._speech.with_reference(spec, voice_settings(spec, spec.speaker))
        task = asyncio.create_task(work, name=f"prepare voice {name}")
        task.add_done_callback(partial(_log_preparation, name))
        self._preparing[name] = _Preparation(task, time.monotonic())

    async def _delete_voice(self, request: web.Request) -> web.Response:
        await self._live.delete_own_voice(request.match_info["name"])
        self._preparing.pop(request.match_info["name"], None)
        return web.json_response({"ok": True})


@dataclass
class _Preparation:
    """An own voice being made ready in the background."""

    task: asyncio.Task[Any]
    started: float

    def view(self) -> dict[str, Any]:
        """What the page shows: making (with the seconds so far), ready, or the error."""
        if not self.task.done():
            return {"state": "making", "seconds": time.monotonic() - self.started}
        if self.task.cancelled():
            return {"state": "failed", "error": "stopped with the server"}
        error = self.task.exception()
        if error is None:
            return {"state": "ready"}
        return {"state": "failed", "error": for_client(str(error))}


def _log_preparation(name: str, task: asyncio.Task[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        _LOGGER.warning("Web page: voice %s is not ready: %s", name, task.exception())
    elif not task.cancelled():
        _LOGGER.info("Web page: voice %s is ready", name)


class _FrameSink:
    """The audio sink of `Speech` for the page: frames on an HTTP response."""

    def __init__(self, response: web.StreamResponse) -> None:
        self._response = response

    async def frame(self, kind: bytes, payload: bytes) -> None:
        await self._response.write(FRAME.pack(kind, len(payload)) + payload)

    async def audio_start(self, rate: int) -> None:
        await self.frame(b"S", struct.pack("<I", rate))

    async def audio_chunk(self, rate: int, pcm: bytes) -> None:
        await self.frame(b"A", pcm)

    async def audio_stop(self) -> None:
        pass  # one cycle per request: `D` ends it


def _error(status: int, err: RequestError) -> web.Response:
    """The page's refusal: one line naming what is wrong and what to do, and its code."""
    return web.json_response({"error": for_client(str(err)), "code": err.code}, status=status)


async def _json(request: web.Request) -> dict[str, Any]:
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise RequestError("the request body is not JSON", "malformed-request") from None
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object", "malformed-request")
    return body


def _state_of(
    name: str, loaded: dict[str, int], downloads: dict[str, Any], on_disk: dict[str, bool]
) -> str:
    if name in loaded:
        return "loaded"
    if name in downloads:
        return "downloading"
    return "on disk" if on_disk.get(name) else "not downloaded"


def _takes_recording(spec: ModelSpec, catalog: Catalog) -> bool:
    """Whether the page offers `spec` for a voice made from a recording: one of the catalog's
    voices already speaks through it from one, or it is of an engine that can and its
    description or files name a version that can (`RECORDING_MODEL_HINTS`). The catalog check
    of a new voice is the authority; this only keeps the list short."""
    if any(v.model == spec.name and v.reference for v in catalog.voices.values()):
        return True
    if spec.engine not in RECORDING_ENGINES:
        return False
    words = " ".join([spec.description or "", *(ref.describe() for ref in spec.files.values())])
    return any(hint in words.lower() for hint in RECORDING_MODEL_HINTS)
