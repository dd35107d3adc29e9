"""Where model code runs and in which precision: the one place that decides.

    device "auto" -> "cuda" when CUDA is available, else "cpu"; or "cpu", "cuda", "cuda:N".
    dtype  "auto" -> bfloat16 on CUDA, float32 on CPU; or "float32", "bfloat16", "float16".

bfloat16 on CUDA halves memory and runs on tensor cores without float16's overflow; on CPU,
float32 is the safe default (float16 matmuls are slow or missing there, and bfloat16 needs a CPU
that has it).

Training (the house model's pre-training, ``training_autocast`` / ``training_threads``) keeps its
weights in float32 and computes under bfloat16 autocast where the hardware has bfloat16 (CUDA, or
a CPU with AVX512-BF16 / AMX): measured 1.5-2x faster per step on this project's CPUs. On CPU it
uses half the cores: OpenMP threads spin-wait on each other, and on a busy machine (tests, a web
server and a worker beside it) two threads on two cores ran 3-5x *slower* per step than one. On a
machine that does nothing else, every core is faster (the miniature's GRPO steps: 1.46x with two
threads on two cores): ``DIALAB_TRAINING_THREADS`` sets the count.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from models_gpu.spec.backends import DEVICE_PATTERN, DTYPES

if TYPE_CHECKING:
    import torch

DEVICE_CHOICES = ("auto", "cpu", "cuda", "cuda:N")
_DEVICE_PATTERN = re.compile(DEVICE_PATTERN)


def check_device_name(name: object) -> str:
    """``name`` if it is a device Dialab accepts (without importing torch), else ValueError."""
    if not isinstance(name, str) or not _DEVICE_PATTERN.fullmatch(name):
        raise ValueError(f"device must be one of {', '.join(DEVICE_CHOICES)}, got {name!r}")
    return name


def check_dtype_name(name: object) -> str:
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {name!r}")
    assert isinstance(name, str)
    return name


def resolve_device(name: str = "auto") -> torch.device:
    """The torch device for ``name``; ValueError when CUDA is asked for and not there."""
    import torch

    check_device_name(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r} was asked for, but CUDA is not available here")
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise ValueError(
                f"device {name!r} was asked for, but there are only "
                f"{torch.cuda.device_count()} CUDA device(s)"
            )
    return device


def resolve_dtype(name: str = "auto", device: torch.device | None = None) -> torch.dtype:
    """The torch dtype for ``name``; "auto" depends on ``device`` (default: the auto device)."""
    import torch

    check_dtype_name(name)
    if name == "auto":
        on = device if device is not None else resolve_device()
        return torch.bfloat16 if on.type == "cuda" else torch.float32
    dtype: torch.dtype = getattr(torch, name)
    return dtype


def training_autocast(device: torch.device) -> torch.dtype | None:
    """The autocast dtype for training on ``device``: bfloat16 where the hardware has it, else
    None (plain float32)."""
    import torch

    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else None
    # Private but long-standing probes; without them, assume no fast bfloat16.
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    has_bf16 = any(getattr(torch.cpu, probe, lambda: False)() for probe in probes)
    return torch.bfloat16 if has_bf16 else None


TRAINING_THREADS_ENV = "DIALAB_TRAINING_THREADS"


def training_threads() -> int:
    """CPU threads for training: ``DIALAB_TRAINING_THREADS`` when set, else half the cores this
    process may use, at least one."""
    configured = os.environ.get(TRAINING_THREADS_ENV, "").strip()
    if configured:
        if not configured.isdigit() or int(configured) < 1:
            raise ValueError(f"{TRAINING_THREADS_ENV} must be a whole number of at least 1, "
                             f"not {configured!r}")  # fmt: skip
        return int(configured)
    return max(1, usable_cores() // 2)


def usable_cores() -> int:
    """The CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # macOS and Windows have no affinity masks
        return os.cpu_count() or 1
