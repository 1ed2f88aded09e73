"""The model registry with real tiny engines: lazy single-flight loads, the memory budget with LRU
eviction, idle unload, failures that stay with their voice, and device resolution."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import AsyncIterator

import pytest

from wyoming_multitts.catalog import Catalog, load_catalog
from wyoming_multitts.devices import (
    CPU,
    parse_device_name,
    resolve_device,
    torch_device_for,
)
from wyoming_multitts.errors import DeviceError, EngineError, ModelFileError, ModelTooLargeError
from wyoming_multitts.hub import Hub
from wyoming_multitts.llm import build
from wyoming_multitts.registry import ModelRegistry, RegistrySettings

from .conftest import tiny_model_entry, write_catalog

_OPEN: list[ModelRegistry] = []
"""Registries made by the running test; closed after it, whatever happened (no stray workers)."""


@pytest.fixture(autouse=True)
async def close_registries() -> AsyncIterator[None]:
    yield
    while _OPEN:
        await _OPEN.pop().close()


def new_registry(catalog: Catalog, hub: Hub | None = None, **settings: object) -> ModelRegistry:
    """A registry over `catalog` with offline tiny-model settings, closed after the test."""
    registry = ModelRegistry(
        catalog,
        RegistrySettings(hub=hub or Hub(offline=True), threads=2, **settings),  # type: ignore
    )
    _OPEN.append(registry)
    return registry


def registry_for(
    tmp_path: Path, tiny_models: Path, n_models: int, **settings: object
) -> ModelRegistry:
    """A registry over `n_models` copies of the tiny Orpheus model (one voice each)."""
    models = {f"m{i}": tiny_model_entry(tiny_models) for i in range(n_models)}
    voices = {f"v{i}": {"model": f"m{i}", "speaker": "tara"} for i in range(n_models)}
    return new_registry(
        load_catalog(write_catalog(tmp_path, tiny_models, models, voices)), **settings
    )


async def test_concurrent_requests_load_a_model_once(tmp_path: Path, tiny_models: Path) -> None:
    registry = registry_for(tmp_path, tiny_models, 1)
    seen = []

    async def use() -> None:
        async with registry.acquire("m0", "v0") as engine:
            seen.append(engine)

    await asyncio.gather(*(use() for _ in range(4)))
    assert len({id(engine) for engine in seen}) == 1
    assert list(registry.loaded_models()) == ["m0"]
    await registry.close()
    assert registry.loaded_models() == {}


async def test_budget_evicts_the_least_recently_used_idle_model(
    tmp_path: Path, tiny_models: Path
) -> None:
    probe = registry_for(tmp_path / "probe", tiny_models, 1)
    async with probe.acquire("m0", "v0"):
        pass
    one_model = probe.loaded_models()["m0"]  # what the estimate says one tiny model takes
    await probe.close()

    registry = registry_for(
        tmp_path, tiny_models, 3, max_loaded_bytes=int(one_model * 2.5), keep_recent=0.0
    )
    for name in ("m0", "m1"):
        async with registry.acquire(name, "v"):
            pass
    assert list(registry.loaded_models()) == ["m0", "m1"]
    async with registry.acquire("m0", "v"):  # m0 is now the most recently used
        pass
    async with registry.acquire("m2", "v"):
        pass
    assert list(registry.loaded_models()) == ["m0", "m2"]  # m1 was the LRU idle model
    await registry.close()


async def test_a_recently_used_model_is_not_evicted_for_another(
    tmp_path: Path, tiny_models: Path
) -> None:
    """A client asking for model after model cannot push out the one just used (--keep-recent);
    once that time has passed, it can."""
    probe = registry_for(tmp_path / "probe", tiny_models, 1)
    async with probe.acquire("m0", "v0"):
        pass
    one_model = probe.loaded_models()["m0"]
    await probe.close()

    keep = 3.0
    registry = registry_for(
        tmp_path, tiny_models, 2, max_loaded_bytes=int(one_model * 1.5), keep_recent=keep
    )
    async with registry.acquire("m0", "v0"):
        pass
    used = time.monotonic()
    with pytest.raises(ModelTooLargeError, match=r"m0 spoke in the last 3 s \(--keep-recent\)"):
        async with registry.acquire("m1", "v1"):
            pass
    assert list(registry.loaded_models()) == ["m0"]
    await asyncio.sleep(max(0.0, used + keep - time.monotonic()))
    async with registry.acquire("m1", "v1"):
        pass
    assert list(registry.loaded_models()) == ["m1"]
    await registry.close()


async def test_a_model_bigger_than_the_budget_is_an_error_for_its_voice(
    tmp_path: Path, tiny_models: Path
) -> None:
    registry = registry_for(tmp_path, tiny_models, 1, max_loaded_bytes=1000)
    with pytest.raises(ModelTooLargeError, match="voice v0.*--max-loaded-bytes"):
        async with registry.acquire("m0", "v0"):
            pass


async def test_busy_models_are_not_evicted(tmp_path: Path, tiny_models: Path) -> None:
    probe = registry_for(tmp_path / "probe", tiny_models, 1)
    async with probe.acquire("m0", "v0"):
        pass
    one_model = probe.loaded_models()["m0"]
    await probe.close()

    registry = registry_for(
        tmp_path, tiny_models, 2, max_loaded_bytes=int(one_model * 1.5), keep_recent=0.0
    )
    async with registry.acquire("m0", "v0"):
        with pytest.raises(ModelTooLargeError, match="in use"):
            async with registry.acquire("m1", "v1"):
                pass
    async with registry.acquire("m1", "v1"):  # m0 is idle now: it makes room
        pass
    assert list(registry.loaded_models()) == ["m1"]
    await registry.close()


async def test_idle_models_are_unloaded(tmp_path: Path, tiny_models: Path) -> None:
    registry = registry_for(tmp_path, tiny_models, 1, unload_after=0.2)
    registry.start()
    async with registry.acquire("m0", "v0"):
        await asyncio.sleep(0.5)  # in use: never unloaded, however long
        assert list(registry.loaded_models()) == ["m0"]
    for _ in range(50):
        await asyncio.sleep(0.1)
        if not registry.loaded_models():
            break
    assert registry.loaded_models() == {}
    await registry.close()


async def test_failed_load_is_retried_by_the_next_request(
    tmp_path: Path, tiny_models: Path
) -> None:
    models = {"m0": tiny_model_entry(tiny_models)}
    missing = tmp_path / "later.gguf"
    models["m0"]["files"]["model"] = {"path": str(missing)}
    catalog = load_catalog(write_catalog(tmp_path, tiny_models, models, {"v0": {"model": "m0"}}))
    registry = new_registry(catalog)
    with pytest.raises(ModelFileError, match=f"voice v0.*{missing.name}") as failure:
        async with registry.acquire("m0", "v0"):
            pass
    assert failure.value.code == "model-file-missing"
    shutil.copy(tiny_models / "orpheus-tiny.gguf", missing)
    async with registry.acquire("m0", "v0"):
        pass
    await registry.close()


async def test_offline_hub_download_is_a_clear_error(tmp_path: Path, tiny_models: Path) -> None:
    models = {"m0": tiny_model_entry(tiny_models)}
    models["m0"]["files"]["model"] = {"repo": "example/not-cached-GGUF", "file": "model.gguf"}
    catalog = load_catalog(write_catalog(tmp_path, tiny_models, models, {"v0": {"model": "m0"}}))
    hub = Hub(cache_dir=tmp_path / "cache", offline=True)
    registry = new_registry(catalog, hub)
    with pytest.raises(
        ModelFileError, match="example/not-cached-GGUF/model.gguf.*--offline"
    ) as err:
        async with registry.acquire("m0", "v0"):
            pass
    assert err.value.code == "model-file-missing"


async def test_missing_file_role_names_what_the_engine_needs(
    tmp_path: Path, tiny_models: Path
) -> None:

    models = {"m0": tiny_model_entry(tiny_models)}
    del models["m0"]["files"]["codec"]
    catalog = load_catalog(write_catalog(tmp_path, tiny_models, models, {"v0": {"model": "m0"}}))
    registry = new_registry(catalog)
    with pytest.raises(EngineError, match="files.codec"):
        async with registry.acquire("m0", "v0"):
            pass


def test_device_names() -> None:
    assert parse_device_name("cuda:1") == ("cuda", 1)
    assert parse_device_name("HTP") == ("htp", 0)
    with pytest.raises(DeviceError, match="unknown device"):
        parse_device_name("tpu")
    assert resolve_device("cpu") == CPU
    assert resolve_device("auto") == CPU  # this machine has no GPU backend


def test_torch_only_engines_take_the_device_torch_has() -> None:
    """Bark runs wholly in torch: its device is checked against torch, not llama.cpp's build."""
    assert resolve_device("auto", uses_llama=False) == CPU  # this torch is a CPU build
    cuda = resolve_device("cuda:1", uses_llama=False)
    assert (cuda.name, cuda.llama_device, cuda.torch_device) == ("cuda:1", None, "cuda:1")
    with pytest.raises(DeviceError, match="this torch is a CPU build"):
        torch_device_for(cuda)
    htp = resolve_device("htp", uses_llama=False)  # the engine refuses it by name
    assert (htp.name, htp.torch_device, htp.picked_automatically) == ("htp:0", "cpu", False)


@pytest.mark.parametrize("name", ["cuda", "vulkan:0", "metal", "htp"])
def test_a_device_the_build_lacks_is_an_error_naming_what_it_has(name: str) -> None:
    with pytest.raises(DeviceError, match=r"^device .* this llama-cpp-python build has"):
        resolve_device(name)


def test_a_backend_without_its_device_says_what_to_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A build with the Hexagon backend on a machine where it finds no NPU (no FastRPC library,
    no DSP): the error names the backend and what to check for that kind, not a CUDA tool."""
    monkeypatch.setattr(build, "built_backends", lambda: {"cpu", "hexagon", "htp"})
    with pytest.raises(DeviceError, match="has the hexagon backend, but it found no such") as err:
        resolve_device("htp")
    assert "libcdsprpc.so" in str(err.value) and "ADSP_LIBRARY_PATH" in str(err.value)
    assert "nvidia-smi" not in str(err.value)


def test_the_backends_built_are_read_from_the_libraries_beside_libllama() -> None:
    """A backend whose device is missing (a CUDA build without a driver) registers no device,
    so the error for its device names the backend; this CPU build has the CPU one only among
    the kinds a device names."""
    backends = build.built_backends()
    assert "cpu" in backends
    assert "base" not in backends  # libggml-base holds no backend
    assert not backends & {"cuda", "vulkan", "metal", "hexagon"}
