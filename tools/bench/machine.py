"""What the benchmark ran on: CPU, memory, library versions and how busy the machine was."""

from __future__ import annotations

import contextlib
import os
import platform
import resource
import shutil
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Sequence

import psutil

CPUINFO = Path("/proc/cpuinfo")
MEMINFO = Path("/proc/meminfo")
PROC_STAT = Path("/proc/stat")
BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""user, nice, system, irq, softirq and steal (time the hypervisor gave other guests) of
/proc/stat's `cpu` line; not idle and iowait."""
PROC_UTIME = 11
"""Index of utime (field 14 of /proc/PID/stat) counted from the state field; stime follows."""
KIB = 1024
GIB = 1024**3
VERSIONED_PACKAGES = ("llama_cpp_python", "torch", "numpy", "wyoming")
"""Distributions whose versions the report names (no import: torch takes seconds to import)."""


@dataclass(frozen=True)
class Machine:
    """The machine and software a benchmark ran on."""

    cpu: str
    cores: int
    ram_gib: float
    python: str
    versions: dict[str, str]
    gpus: list[str]
    """`nvidia-smi`'s name, memory and driver of each NVIDIA GPU; empty without one."""


def _proc_field(path: Path, name: str) -> str | None:
    """The value of the first `name: value` line of a /proc file (None off Linux)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def _cpu_name() -> str:
    """Model name plus family/model: a VM often shows just "AMD EPYC" for several generations."""
    name = _proc_field(CPUINFO, "model name") or platform.processor() or "unknown"
    family, model = _proc_field(CPUINFO, "cpu family"), _proc_field(CPUINFO, "model")
    return f"{name} (family {family}, model {model})" if family and model else name


def describe_machine() -> Machine:
    """CPU model, core count, RAM and the versions of the libraries that set the speed."""
    mem_kib = _proc_field(MEMINFO, "MemTotal")  # "24563012 kB"
    return Machine(
        cpu=_cpu_name(),
        cores=os.cpu_count() or 1,
        ram_gib=int(mem_kib.split()[0]) * KIB / GIB if mem_kib else 0.0,
        python=platform.python_version(),
        versions={name: _version(name) for name in VERSIONED_PACKAGES},
        gpus=nvidia_gpus(),
    )


def nvidia_gpus() -> list[str]:
    """'NVIDIA H200, 143771 MiB, driver 580.159.03' per GPU; empty without `nvidia-smi`."""
    if shutil.which("nvidia-smi") is None:
        return []
    query = ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    try:
        lines = subprocess.run(query, capture_output=True, text=True, check=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in lines.stdout.splitlines():
        fields = [field.strip() for field in line.rsplit(",", 2)]
        if len(fields) == 3:  # name, memory, driver
            gpus.append(f"{fields[0]}, {fields[1]}, driver {fields[2]}")
    return gpus


def load_average() -> tuple[float, float, float]:
    """1, 5 and 15-minute load averages (other jobs on a shared machine show up here)."""
    return os.getloadavg()


@dataclass(frozen=True)
class CpuClock:
    """CPU seconds used so far by the whole machine and by the processes of the benchmark."""

    wall_s: float
    machine_s: float | None
    """None where /proc/stat is missing (not Linux)."""
    ours_s: float


def _process_cpu_s(pid: int) -> float:
    """User + system seconds of a running process, all threads (0 once it has gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()  # fields[0] is field 3 (state) of proc(5)
    return (int(fields[PROC_UTIME]) + int(fields[PROC_UTIME + 1])) / os.sysconf("SC_CLK_TCK")


def _with_descendants(pids: Sequence[int]) -> list[int]:
    """`pids` and every running process below them (the server's model workers)."""
    found = list(pids)
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            found.extend(child.pid for child in psutil.Process(pid).children(recursive=True))
    return found


def cpu_clock(pids: Sequence[int] = ()) -> CpuClock:
    """Read the clocks now. Ours: this process, its waited-for children and the running `pids`
    with their descendants (a worker that exits between two readings is miscounted once)."""
    ours = sum(
        usage.ru_utime + usage.ru_stime
        for usage in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    ) + sum(map(_process_cpu_s, _with_descendants(pids)))
    try:
        fields = PROC_STAT.read_text(encoding="ascii").splitlines()[0].split()[1:]
        ticks = sum(int(fields[i]) for i in BUSY_FIELDS)
        machine_s: float | None = ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        machine_s = None
    return CpuClock(time.monotonic(), machine_s, ours)


def others_cores(start: CpuClock, end: CpuClock) -> float | None:
    """Cores other processes kept busy on average between two readings (a disturbance measure)."""
    if start.machine_s is None or end.machine_s is None or end.wall_s <= start.wall_s:
        return None
    others_s = (end.machine_s - start.machine_s) - (end.ours_s - start.ours_s)
    return max(0.0, others_s) / (end.wall_s - start.wall_s)
