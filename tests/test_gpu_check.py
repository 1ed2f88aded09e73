"""script/gpu-check: its CPU mode end to end (the smoke test of the script the GPU machine runs),
and how it reads the server's log."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tools.bench.server import LOAD_LINE
from tools.gpu_check import BUFFER, OFFLOADED, Placement

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("environment", "models", "behaviour tests", "placement", "benchmark")


def test_cpu_mode_runs_every_step_into_one_report(tmp_path: Path) -> None:
    report = tmp_path / "gpu-check.md"
    command = [
        str(ROOT / "script" / "gpu-check"),
        "--device=cpu",
        "--tiny",
        "--engine=orpheus",
        "--runs=1",
        "--tests=one_audio_cycle and tara",
        f"--report={report}",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    text = report.read_text(encoding="utf-8")
    for step in STEPS:
        assert f"| {step} | passed |" in text
    assert "1 passed" in text  # the one selected behaviour test, on the CPU
    assert "| orpheus-tiny | orpheus | cpu |" in text
    assert "### Server over Wyoming" in text  # the benchmark's report, a level down


def test_a_failed_step_fails_the_run_and_says_why(tmp_path: Path) -> None:
    report = tmp_path / "gpu-check.md"
    command = [str(ROOT / "script" / "gpu-check"), "--device=cuda:0", f"--report={report}"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode != 0
    text = report.read_text(encoding="utf-8")
    assert "| environment | **FAILED** |" in text
    assert "torch sees no CUDA GPU" in text


def test_log_lines_are_read_per_worker() -> None:
    """The lines as the registry and llama.cpp (src/llama-model.cpp) write them, with
    gpu-check's `--log-format`."""
    loaded = (
        "100 INFO wyoming_multitts.registry: Loaded model orpheus-3b (orpheus) on cuda:0 in "
        "3.1 s: worker 4242, estimated 2822 MB, 2900 MB counted, torch holds 80 MB of GPU memory"
    )
    match = LOAD_LINE.search(loaded)
    assert match is not None
    assert (match["model"], match["device"], match["pid"], match["torch_mb"]) == (
        "orpheus-3b",
        "cuda:0",
        "4242",
        "80",
    )
    log = "\n".join(
        [
            "4242 DEBUG llama.cpp: load_tensors: offloaded 29/29 layers to GPU",
            "4243 DEBUG llama.cpp: load_tensors: offloaded 3/29 layers to GPU",
            "4242 DEBUG llama.cpp: load_tensors:        CUDA0 model buffer size =  1918.35 MiB",
            "4242 DEBUG llama.cpp: load_tensors:          CPU model buffer size =   263.67 MiB",
        ]
    )
    assert [(m["pid"], m["on_gpu"], m["layers"]) for m in OFFLOADED.finditer(log)] == [
        ("4242", "29", "29"),
        ("4243", "3", "29"),
    ]
    assert [(m["buffer"], m["mib"]) for m in BUFFER.finditer(log)] == [
        ("CUDA0", "1918.35"),
        ("CPU", "263.67"),
    ]


def placement(**changes: object) -> Placement:
    """Orpheus wholly on the GPU, changed by `changes`."""
    fields: dict = {
        "model": "orpheus-3b",
        "engine": "orpheus",
        "has_torch_part": True,
        "device": "cuda:0",
        "llama_layers": [(29, 29)],
        "llama_gpu_mb": 2011.0,
        "llama_cpu_mb": 276.0,
        "torch_gpu_mb": 80.0,
        "worker_gpu_mb": 2600.0,
        "audio_s": 1.7,
    }
    return Placement(**{**fields, **changes})


def test_placement_names_each_part_left_off_the_gpu() -> None:
    assert placement().problems("cuda") == []
    assert placement(device="cpu").problems("cuda") == ["loaded on cpu, not cuda"]
    assert placement(llama_layers=[(29, 29), (3, 6)]).problems("cuda") == [
        "only 3/6 llama.cpp layers on the GPU"
    ]
    assert placement(llama_layers=[], llama_gpu_mb=0.0).problems("cuda") == [
        "no llama.cpp offload line in the log",
        "llama.cpp put no weights in GPU buffers",
    ]
    assert placement(torch_gpu_mb=0.0).problems("cuda") == [
        "its torch part holds no GPU memory: the codec ran on the CPU"
    ]
    bark = placement(engine="bark", llama_layers=[], llama_gpu_mb=0.0, llama_cpu_mb=0.0)
    assert bark.problems("cuda") == []
    on_cpu = placement(device="cpu", llama_layers=[], llama_gpu_mb=0.0, torch_gpu_mb=0.0)
    assert on_cpu.problems("cpu") == []
