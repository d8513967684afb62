"""What every benchmark records beside its numbers: the CPU (model and the flags that change kernels), the torch
thread count and the load; and the one way the benchmarks summarise repeated measurements (median and range)."""

from __future__ import annotations

import os
import platform
import statistics
from collections.abc import Sequence

# The CPU flags that decide which kernels run: AVX2 vs AVX-512, native bf16, AMX tiles.
KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")
# Variables that cap the instruction set torch, oneDNN and MKL dispatch to (e.g. AVX2 kernels on an AVX-512 CPU).
KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS")


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_flags() -> list[str]:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((ln.split(":", 1)[1].split() for ln in f if ln.startswith("flags")), [])
    except OSError:
        flags = []
    return [flag for flag in KERNEL_FLAGS if flag in flags]


def load() -> float:
    """The 1-minute load average (how busy the machine was)."""
    return os.getloadavg()[0]


def host(threads: int | None = None) -> dict[str, object]:
    import torch

    return {"cpu": cpu_model(), "flags": cpu_flags(), "cores": os.cpu_count(),
            "threads": threads if threads is not None else torch.get_num_threads(), "load_at_start": load(),
            "torch": torch.__version__, "python": platform.python_version(),
            "kernel_caps": {name: os.environ[name] for name in KERNEL_VARIABLES if os.environ.get(name)}}


def host_line(info: dict[str, object]) -> str:
    caps = info.get("kernel_caps") or {}
    capped = f", kernels capped by {' '.join(f'{k}={v}' for k, v in caps.items())}" if caps else ""
    return (f"CPU {info['cpu']} ({', '.join(info['flags']) or 'no AVX2'}){capped}, {info['cores']} cores, "
            f"{info['threads']} torch thread(s), load {info['load_at_start']:.2f} at the start, torch {info['torch']}")


def spread(values: Sequence[float]) -> tuple[float, float, float]:
    """(median, min, max)."""
    return statistics.median(values), min(values), max(values)


def fmt(values: Sequence[float], spec: str = ".2f", unit: str = "") -> str:
    """'median [min, max]' of `values`."""
    if not values:
        return "-"
    m, lo, hi = spread(values)
    return f"{m:{spec}}{unit} [{lo:{spec}}, {hi:{spec}}]"
