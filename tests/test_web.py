"""The web page in a real headless browser: Debian's chromium and its chromedriver, driven by
selenium, click through the page of a real server (`python -m wyoming_multitts --web PORT`) over
the tiny models, as a user would. Downloads come from a local HTTP hub (`hub_server.py`,
`HF_ENDPOINT`) that sends slowly, through the real huggingface_hub. The screenshots in
docs/images/ (shown in the README) are taken here: `MULTITTS_SCREENSHOTS=1` writes them there
(else into a temporary folder, so that a test run leaves the checkout as it was).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml
from aiohttp import ClientSession, web
from wyoming.info import Describe, Info

from wyoming_multitts.own_voices import MAX_RECORDING_BYTES

from .conftest import RunningServer, free_port, missing_prerequisite, read_until, start_server
from .hub_server import LocalHub

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "images"
SCREENSHOTS_ENV = "MULTITTS_SCREENSHOTS"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
HUB_REPO = "example/orpheus-hub"
HUB_BYTES_PER_SECOND = 3e6
"""The tiny Orpheus GGUF (44 MB) takes about 15 s from the local hub: long enough to watch."""
WAIT_SECONDS = 90.0
"""Longest wait for anything on the page (a first load of a model on 2 shared cores)."""
ENGINE_VOICES = ("tiny-tara", "tiny-oute3-en-male-1", "tiny-qwen3-ryan", "tiny-bark-en")
"""A tiny voice of every engine."""
INGRESS_PREFIX = "/api/hassio_ingress/0123abcd/"
"""The path Home Assistant's ingress serves an add-on's page under."""
INGRESS_PROXY = "172.30.32.2"
"""The address Home Assistant's ingress proxy reaches add-ons from."""


@pytest.fixture(scope="module")
def local_hub(tiny_models: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalHub]:
    root = tmp_path_factory.mktemp("hub")
    (root / HUB_REPO).mkdir(parents=True)
    shutil.copy(tiny_models / "orpheus-tiny.gguf", root / HUB_REPO / "orpheus-tiny.gguf")
    hub = LocalHub(root, bytes_per_second=HUB_BYTES_PER_SECOND)
    yield hub
    hub.close()


@pytest.fixture(scope="module")
def page_server(
    tiny_models: Path, local_hub: LocalHub, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunningServer, str, Path]]:
    """The server with the page on, over the tiny catalog plus one model on the local hub; its
    page's URL and its download folder."""
    catalog = yaml.safe_load((tiny_models / "voices.yaml").read_text())
    orpheus = catalog["models"]["orpheus-tiny"]
    catalog["models"]["orpheus-hub"] = {
        **orpheus,
        "description": "Tiny Orpheus on the local hub (tests)",
        "files": {
            "model": {"repo": HUB_REPO, "file": "orpheus-tiny.gguf"},
            "codec": orpheus["files"]["codec"],
        },
    }
    catalog["voices"]["hub-tara"] = {"model": "orpheus-hub", "speaker": "tara"}
    voices = tiny_models / "web-voices.yaml"  # beside the models: their paths are relative
    voices.write_text(yaml.safe_dump(catalog, sort_keys=False))
    folder = tmp_path_factory.mktemp("web")
    port = free_port()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_ENDPOINT", local_hub.endpoint)
        server = start_server(
            voices,
            folder,
            *("--web", str(port), "--data-dir", str(folder / "data")),
            *("--download-dir", str(folder / "cache")),
        )
    yield server, f"http://127.0.0.1:{port}/", folder / "cache"
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not (CHROMIUM and CHROMEDRIVER):
        missing_prerequisite(
            "no chromium and chromedriver (apt-get install chromium chromium-driver)"
        )
    os.environ.setdefault("SE_OFFLINE", "true")  # selenium: never download a driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in (
        "--headless=new",
        "--no-sandbox",  # root in CI
        "--disable-dev-shm-usage",
        "--autoplay-policy=no-user-gesture-required",
        "--window-size=1200,1300",
        # a microphone that plays a tone, allowed without asking: "Record" works headless
        "--use-fake-device-for-media-stream",
        "--use-fake-ui-for-media-stream",
    ):
        options.add_argument(argument)
    driver = webdriver.Chrome(options=options, service=Service(CHROMEDRIVER))
    yield driver
    driver.quit()


def wait_for(what: Callable[[], Any], message: str, timeout: float = WAIT_SECONDS) -> Any:
    """`what()` once it is truthy; fails with `message` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = what()
        if value:
            return value
        assert time.monotonic() < deadline, message
        time.sleep(0.2)


def click(driver: Any, css: str) -> None:
    """Click the first element `css` finds, as a user does (the page redraws its tables when
    the state changes: an element found a moment ago may be gone, so it is found again)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    def clicked() -> bool:
        try:
            element = driver.find_elements(By.CSS_SELECTOR, css)[0]
            driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", element)
            element.click()
        except (IndexError, StaleElementReferenceException):
            return False
        return True

    wait_for(clicked, f"could not click {css}")


def choose(driver: Any, select_id: str, value: str) -> None:
    """Pick `value` in the select `select_id`, as a user does (again if the page redrew its
    options in between: a state update replaces them)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.support.ui import Select

    def chosen() -> bool:
        select = driver.find_element("id", select_id)
        try:
            Select(select).select_by_value(value)
        except StaleElementReferenceException:
            return False
        return bool(select.get_attribute("value") == value)

    wait_for(chosen, f"could not choose {value} in #{select_id}")


def texts(driver: Any, css: str) -> list[str]:
    """The text of every element `css` finds, read at one moment."""
    script = "return [...document.querySelectorAll(arguments[0])].map(e => e.innerText)"
    return list(driver.execute_script(script, css))


def try_voice(driver: Any, row_css: str, voice: str) -> dict[str, Any]:
    """Click a voice's button and wait for its audio to end; what the page received."""
    driver.execute_script("window.lastSpeech = null")
    click(driver, row_css)
    result = wait_for(
        lambda: (r := driver.execute_script("return window.lastSpeech"))
        and (r["done"] or r["error"])
        and r,
        f"voice {voice} did not finish",
    )
    assert result["voice"] == voice
    assert result["error"] is None, result["error"]
    return dict(result)


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the screenshots go: docs/images with `MULTITTS_SCREENSHOTS=1`."""
    return IMAGES if os.environ.get(SCREENSHOTS_ENV) else tmp_path_factory.mktemp("screenshots")


def screenshot(driver: Any, folder: Path, name: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    driver.save_screenshot(str(folder / name))


async def describe(server: RunningServer) -> set[str]:
    async with server.client() as client:
        await client.write_event(Describe().event())
        events = await read_until(client, "info")
    info = Info.from_event(events[-1])
    return {voice.name for voice in info.tts[0].voices}


def test_try_a_voice_of_every_engine(
    browser: Any, page_server: tuple[RunningServer, str, Path], screenshots: Path
) -> None:
    server, url, _ = page_server
    browser.get(url)
    wait_for(lambda: len(texts(browser, "#voices tbody tr")) > 10, "no voices listed")
    for voice in ENGINE_VOICES:
        result = try_voice(browser, f'#voices tr[data-voice="{voice}"] button.try', voice)
        assert result["samples"] > 0 and result["rate"] > 0, result
        assert 0 < result["firstAudioMs"] < WAIT_SECONDS * 1000
        assert "First audio after" in browser.find_element("id", "try-status").text
    state = wait_for(
        lambda: "loaded" in " ".join(texts(browser, '#models tr[data-model="bark-tiny"]')),
        "the page does not show bark-tiny loaded",
    )
    assert state
    screenshot(browser, screenshots, "web-voices.png")
    assert "Web page: spoke voice tiny-bark-en" in server.log()


@pytest.mark.parametrize(
    "model, recording, text",
    [
        ("qwen3tts-tiny-base", "qwen3tts-tiny-reference.wav", "Hello, this is my voice."),
        ("outetts-1.0-tiny", "outetts-tiny-reference.wav", "The quick brown fox."),
    ],
)
async def test_make_hear_and_delete_an_own_voice(
    browser: Any,
    page_server: tuple[RunningServer, str, Path],
    tiny_models: Path,
    screenshots: Path,
    model: str,
    recording: str,
    text: str,
) -> None:
    server, url, _ = page_server
    name = f"My {model} voice"
    key = f"my-{model.replace('.', '-')}-voice"
    browser.get(url)
    wait_for(lambda: len(texts(browser, "#own-model option")) >= 2, "no models take recordings")
    browser.find_element("id", "own-name").send_keys(name)
    choose(browser, "own-model", model)
    browser.find_element("id", "own-text").send_keys(text)
    browser.find_element("id", "own-file").send_keys(str(tiny_models / recording))
    click(browser, "#own-make")
    wait_for(lambda: texts(browser, f'#own-voices tr[data-voice="{key}"]'), f"{key} not listed")
    assert key in await describe(server)  # Home Assistant sees it: no restart
    # made ready at once (OuteTTS: its speaker profile, in a process of its own), shown so
    ready = f'#own-voices tr[data-voice="{key}"] td.preparing'
    wait_for(
        lambda: texts(browser, ready) == ["ready"], f"{key} never ready: {texts(browser, ready)}"
    )

    result = try_voice(browser, f'#own-voices tr[data-voice="{key}"] button.listen', key)
    assert result["samples"] > 0
    screenshot(browser, screenshots, f"web-own-voice-{model.split('-')[0]}.png")

    click(browser, f'#own-voices tr[data-voice="{key}"] button.delete')
    wait_for(lambda: browser.switch_to.alert, "no confirmation asked").accept()
    wait_for(lambda: not texts(browser, f'#own-voices tr[data-voice="{key}"]'), "not deleted")
    assert key not in await describe(server)


def test_a_bad_recording_is_refused_with_a_message(
    browser: Any, page_server: tuple[RunningServer, str, Path], tmp_path: Path
) -> None:
    server, url, _ = page_server
    bad = tmp_path / "not-a-recording.wav"
    bad.write_bytes(b"this is text, not a WAV file" * 100)
    browser.get(url)
    wait_for(lambda: texts(browser, "#own-model option"), "no models take recordings")
    browser.find_element("id", "own-name").send_keys("Broken")
    browser.find_element("id", "own-file").send_keys(str(bad))
    click(browser, "#own-make")
    message = wait_for(
        lambda: browser.find_element("id", "own-status").get_attribute("class") == "error"
        and browser.find_element("id", "own-status").text,
        "no error shown",
    )
    assert "broken" in message and "\n" not in message, message
    assert "Web page: 127.0.0.1 /api/own-voices refused" in server.log()


def test_watch_a_download_and_cancel_it(
    browser: Any, page_server: tuple[RunningServer, str, Path], screenshots: Path
) -> None:
    server, url, cache = page_server
    row = '#models tr[data-model="orpheus-hub"]'
    browser.get(url)
    wait_for(lambda: "not downloaded" in " ".join(texts(browser, row)), "not shown missing")
    click(browser, f"{row} button.download")

    def progress() -> float:
        value = browser.execute_script(
            "const bar = document.querySelector(arguments[0] + ' progress');"
            "return bar && bar.hasAttribute('value') ? bar.value : 0",
            row,
        )
        return float(value or 0)

    first = wait_for(progress, "the progress bar did not move")
    wait_for(lambda: progress() > first, "the progress bar stopped")
    assert "left" in " ".join(texts(browser, row))
    screenshot(browser, screenshots, "web-download.png")
    click(browser, f"{row} button.cancel")
    wait_for(lambda: "not downloaded" in " ".join(texts(browser, row)), "still downloading")
    assert "Download of model orpheus-hub cancelled" in server.log()
    wait_for(lambda: not list(cache.glob("*/blobs/*.incomplete")), "a partial file was left")
    assert not list(cache.glob("*/snapshots/*/orpheus-tiny.gguf"))


def test_download_then_delete_a_models_files(
    browser: Any, page_server: tuple[RunningServer, str, Path], local_hub: LocalHub
) -> None:
    _, url, cache = page_server
    row = '#models tr[data-model="orpheus-hub"]'
    local_hub.bytes_per_second = None  # at once
    try:
        browser.get(url)
        wait_for(lambda: "not downloaded" in " ".join(texts(browser, row)), "not shown missing")
        click(browser, f"{row} button.download")
        wait_for(lambda: "on disk" in " ".join(texts(browser, row)), "never on disk")
        assert list(cache.glob("*/snapshots/*/orpheus-tiny.gguf"))
        click(browser, f"{row} button.delete-files")
        wait_for(lambda: browser.switch_to.alert, "no confirmation asked").accept()
        wait_for(lambda: "not downloaded" in " ".join(texts(browser, row)), "not deleted")
        assert not list(cache.glob("*/snapshots/*/orpheus-tiny.gguf"))
        assert not [blob for blob in cache.glob("*/blobs/*") if blob.stat().st_size > 1e6]
    finally:
        local_hub.bytes_per_second = HUB_BYTES_PER_SECOND


async def test_a_download_a_request_started_shows_on_the_page(
    browser: Any, page_server: tuple[RunningServer, str, Path]
) -> None:
    """The first request for a voice downloads its model in the model's worker: the page shows
    that download's progress as well."""
    from wyoming.tts import Synthesize, SynthesizeVoice

    server, url, _ = page_server
    row = '#models tr[data-model="orpheus-hub"]'
    await asyncio.to_thread(browser.get, url)
    async with server.client() as client:
        await client.write_event(Synthesize(text="Hi.", voice=SynthesizeVoice("hub-tara")).event())

        def moving() -> bool:
            bar = texts(browser, f"{row} td")
            return "downloading" in " ".join(bar) and " of " in " ".join(bar)

        await asyncio.to_thread(wait_for, moving, "the request's download is not shown")
    # the client left; the load goes on in the registry, and the server stops it at the end


def test_record_a_voice_in_the_browser(
    browser: Any, page_server: tuple[RunningServer, str, Path]
) -> None:
    """Record (the fake microphone's tone), stop, and make a voice of it: the page's own WAV."""
    _, url, _ = page_server
    browser.get(url)
    wait_for(lambda: texts(browser, "#own-model option"), "no models take recordings")
    click(browser, "#own-record")
    wait_for(lambda: "Stop" in browser.find_element("id", "own-record").text, "not recording")
    time.sleep(2.5)
    click(browser, "#own-record")
    recorded = wait_for(lambda: browser.find_element("id", "own-recorded").text, "no recording")
    assert recorded.startswith("recorded 2.") or recorded.startswith("recorded 3."), recorded
    browser.find_element("id", "own-name").send_keys("Recorded")
    choose(browser, "own-model", "qwen3tts-tiny-base")
    browser.find_element("id", "own-text").send_keys("A tone.")
    click(browser, "#own-make")
    wait_for(lambda: texts(browser, '#own-voices tr[data-voice="recorded"]'), "not made")
    click(browser, '#own-voices tr[data-voice="recorded"] button.delete')
    wait_for(lambda: browser.switch_to.alert, "no confirmation asked").accept()
    wait_for(lambda: not texts(browser, '#own-voices tr[data-voice="recorded"]'), "not deleted")


async def test_the_page_works_under_the_ingress_prefix(
    browser: Any, page_server: tuple[RunningServer, str, Path]
) -> None:
    """Home Assistant's ingress serves the page under a path prefix, from its own address: a
    proxy that strips the prefix, as ingress does, and the page's relative URLs keep working."""
    _, url, _ = page_server
    async with ClientSession() as session:

        async def forward(request: web.Request) -> web.StreamResponse:
            path = request.match_info["path"]
            headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
            headers["X-Ingress-Path"] = INGRESS_PREFIX.rstrip("/")  # what ingress adds
            headers["X-Forwarded-Host"] = request.host
            async with session.request(
                request.method, url + path, headers=headers, data=await request.read()
            ) as upstream:
                response = web.StreamResponse(status=upstream.status)
                response.content_type = upstream.content_type
                await response.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                return response

        app = web.Application()
        app.router.add_route("*", INGRESS_PREFIX + "{path:.*}", forward)
        runner = web.AppRunner(app)
        await runner.setup()
        port = free_port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            await asyncio.to_thread(browser.get, f"http://127.0.0.1:{port}{INGRESS_PREFIX}")
            await asyncio.to_thread(
                wait_for, lambda: texts(browser, "#voices tbody tr"), "no voices via ingress"
            )
            result = await asyncio.to_thread(
                try_voice, browser, '#voices tr[data-voice="tiny-tara"] button.try', "tiny-tara"
            )
            assert result["samples"] > 0
        finally:
            await runner.cleanup()


def post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(url, body, headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {}
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_state_changes_need_the_token_and_the_page_origin(
    page_server: tuple[RunningServer, str, Path],
) -> None:
    _, url, _ = page_server
    with urllib.request.urlopen(url, timeout=30) as response:
        page = response.read().decode()
    token = page.split('name="multitts-token" content="')[1].split('"')[0]
    body = json.dumps({"voice": "tiny-tara", "text": "Hi."}).encode()
    status, reply = post(url + "api/models/orpheus-hub/download", b"", {})
    assert status == 403 and "token" in reply["error"]
    status, reply = post(
        url + "api/own-voices/x/delete", b"", {"X-MultiTTS-Token": "x" * len(token)}
    )
    assert status == 403 and "token" in reply["error"]
    evil = {"X-MultiTTS-Token": token, "Origin": "http://evil.example"}
    status, reply = post(url + "api/speak", body, evil)
    assert status == 403 and "evil.example" in reply["error"]
    status, reply = post(
        url + "api/speak", b'{"voice": "nobody", "text": "Hi."}', {"X-MultiTTS-Token": token}
    )
    assert status == 400 and reply["code"] == "unknown-voice", reply
    boundary = "x" * 20
    too_large = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="recording"; '
        f'filename="a.wav"\r\n\r\n'.encode()
        + bytes(MAX_RECORDING_BYTES + 100_000)
        + f"\r\n--{boundary}--\r\n".encode()
    )
    form = {"X-MultiTTS-Token": token, "Content-Type": f"multipart/form-data; boundary={boundary}"}
    status, reply = post(url + "api/own-voices", too_large, form)
    assert status == 400 and reply["code"] == "upload-too-large", reply


def test_only_allowed_clients_get_the_page(tiny_models: Path, tmp_path: Path) -> None:
    port = free_port()
    server = start_server(
        tiny_models / "voices.yaml", tmp_path, "--web", str(port), "--web-allow", "10.9.8.7"
    )
    try:
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30)
        assert refused.value.code == 403
        assert "--web-allow" in json.loads(refused.value.read())["error"]
        assert "refused client 127.0.0.1" in server.log()
    finally:
        server.stop()


def test_the_addon_serves_the_page_through_ingress(tmp_path: Path) -> None:
    """The add-on's config turns ingress on at the port its run script gives `--web`, and the
    page answers only the ingress proxy."""
    from wyoming_multitts.__main__ import parse_settings

    from .test_deploy import addon_config, run_addon_script

    config = addon_config()
    assert config["ingress"] is True and config["panel_title"]
    argv = run_addon_script(config["options"], tmp_path)[1:]
    web = parse_settings(argv).web
    assert web is not None
    assert web.port == config["ingress_port"]
    assert web.host == "0.0.0.0" and web.allowed == (INGRESS_PROXY,)
    assert f"{config['ingress_port']}/tcp" not in config["ports"]  # not on the host's network
