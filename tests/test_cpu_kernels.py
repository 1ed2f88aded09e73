"""The matrix kernels llama.cpp picks on this machine's CPU, run through our own wrapper.

On Intel Xeons with AMX, ggml's AMX kernels killed every quantized model with SIGILL on its first
multi-token decode (docs/cpus.md). Whatever CPU the suite runs on, these tests decode a prompt of
many tokens, then single tokens, with Q8_0 and Q4_K_M models through `LlamaModel`, each in a
subprocess: a kernel this CPU refuses fails its own test, named by its signal, and not the whole
run. The logits are compared with the same weights unquantized (F32), decoded the same way.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from wyoming.tts import Synthesize, SynthesizeVoice

from tools.modelgen.gguf_lm import byte_level_vocab, quantize_gguf, write_lm_gguf
from tools.modelgen.quantized import add_quantized_models
from wyoming_multitts.formats.gguf import LmShape
from wyoming_multitts.process import describe_exit

from .conftest import read_until, start_server

pytest.importorskip("llama_cpp")

N_THREADS = 2
N_VOCAB = 512
SHAPE = LmShape("llama", N_VOCAB, 256, 2, 4, 2, 64, 512, 10000.0, 1e-5)
"""Rows of 256 values: whole Q4_K blocks (QK_K), so every matrix really is Q4_K or Q6_K, and
multiples of the 32 columns ggml's AMX and repacked kernels take at a time."""
PROMPT = [(7 * i + 3) % 256 for i in range(48)]
"""A prompt of 48 tokens: the many-row kernels (prefill), where the AMX kernels died."""
NEXT = [11, 12, 13]
"""Then one token at a time: the one-row kernels (decode)."""
MAX_ERROR = {"q8_0": 0.05, "q4_k_m": 0.4}
"""Largest logit error of each type, as a fraction of the F32 model's largest logit (measured
on random weights: Q8_0 0.012-0.018, Q4_K_M 0.13-0.22; a broken kernel gives 1 or more)."""

DECODE = """
import json, sys
from pathlib import Path
from wyoming_multitts.devices import CPU
from wyoming_multitts.llm.model import LlamaModel

path, prompt, following = Path(sys.argv[1]), json.loads(sys.argv[2]), json.loads(sys.argv[3])
model = LlamaModel(path, CPU, n_ctx=128, threads=int(sys.argv[4]))
rows = [model.decode(prompt).tolist()]
rows += [model.decode([token]).tolist() for token in following]
print(json.dumps(rows))
"""


def decode_in_subprocess(path: Path) -> np.ndarray:
    """The logits after `PROMPT` and after each of `NEXT`, (1 + len(NEXT), N_VOCAB), decoded by
    `LlamaModel` in a process of its own; fails naming the signal if that process dies."""
    done = subprocess.run(
        [sys.executable, "-c", DECODE, str(path), json.dumps(PROMPT), json.dumps(NEXT)]
        + [str(N_THREADS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if done.returncode != 0:
        pytest.fail(
            f"decoding {path.name} ended with {describe_exit(done.returncode)}:\n"
            f"{done.stderr[-3000:]}"
        )
    return np.array(json.loads(done.stdout))  # (1 + len(NEXT), N_VOCAB)


@pytest.fixture(scope="module")
def f32_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gguf

    vocab = byte_level_vocab(N_VOCAB, {300: "<|bos|>", 301: "<|eos|>"}, pre="llama-bpe",
                             bos_id=300, eos_id=301)  # fmt: skip
    path = tmp_path_factory.mktemp("kernels") / "f32.gguf"
    write_lm_gguf(path, SHAPE, vocab, seed=3, weight_type=gguf.GGMLQuantizationType.F32)
    return path


@pytest.fixture(scope="module")
def f32_logits(f32_model: Path) -> np.ndarray:
    return decode_in_subprocess(f32_model)


@pytest.mark.parametrize("quant", sorted(MAX_ERROR))
def test_quantized_models_decode_a_prompt_on_this_cpu(
    quant: str, f32_model: Path, f32_logits: np.ndarray
) -> None:
    path = f32_model.with_name(f"{quant}.gguf")
    quantize_gguf(f32_model, path, quant, threads=N_THREADS)
    logits = decode_in_subprocess(path)
    assert np.isfinite(logits).all()
    error = np.abs(logits - f32_logits).max(axis=1) / np.abs(f32_logits).max(axis=1)
    assert (error < MAX_ERROR[quant]).all(), (quant, error)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 only")
def test_the_build_has_no_amx_kernels() -> None:
    """script/setup compiles llama.cpp without its AMX kernels (docs/cpus.md); llama.cpp's own
    report of the build says so on every x86 CPU, AMX or not."""
    from wyoming_multitts.llm import build

    features = build.system_features()
    assert "AVX2" in features or "SSE3" in features  # the report was read
    assert not features & {"AMX_INT8", "AMX_BF16"}, sorted(features)


async def test_quantized_tiny_voices_speak_over_wyoming(tiny_models: Path, tmp_path: Path) -> None:
    """Every quantized kind of voice, through the server and its workers, on this CPU: Orpheus
    and OuteTTS at Q8_0 and Q4_K_M, Qwen3-TTS at `matrix_type: q8_0`."""
    directory = tmp_path / "models"
    shutil.copytree(tiny_models, directory)
    voices = add_quantized_models(directory, N_THREADS)
    assert len(voices) == 7
    server = start_server(directory / "voices.yaml", tmp_path)
    try:
        for voice_name in voices:
            async with server.client() as client:
                request = Synthesize(text="Hello there.", voice=SynthesizeVoice(voice_name))
                await client.write_event(request.event())
                events = await read_until(client, "audio-stop")
            kinds = [event.type for event in events]
            assert kinds[-1] == "audio-stop", (voice_name, events[-1].data, server.log()[-3000:])
            assert "audio-chunk" in kinds, voice_name
    finally:
        assert server.stop() == 0
