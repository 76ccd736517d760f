"""Process set-up for training and running networks on CPU: torch threads, and the C allocator.

A CNN forward and backward pass over a chunk of observations allocates a few tensors of tens of
megabytes, and frees them a moment later. glibc's malloc serves blocks that large with a fresh
``mmap`` (over ``M_MMAP_THRESHOLD``, 128 KiB to 32 MiB) and returns freed memory at the top of
its heap to the OS (over ``M_TRIM_THRESHOLD``), so every such tensor is new memory whose pages
fault in, zero-filled by the kernel, on first touch: on the 2-core development machine that was
~600,000 page faults and close to half the time of a paper-size DeepRM_Plus iteration
(``benchmarks/bench_deeprm_plus.py``). :func:`retain_freed_memory` tells malloc to serve every
block from its heap and keep up to 1 GiB of freed memory for reuse (the same settings as the
``MALLOC_MMAP_MAX_=0 MALLOC_TRIM_THRESHOLD_=...`` environment variables, applied at run time):
results are unchanged, the process's resident memory stays at its peak.
"""

from __future__ import annotations

import ctypes
import functools
import sys

import torch

from schedlab.errors import SchedlabError

_M_TRIM_THRESHOLD = -1  # glibc's <malloc.h>
_M_MMAP_MAX = -4
RETAINED_BYTES = 1 << 30
"""Freed memory at the top of the heap that malloc keeps instead of returning it (1 GiB)."""


@functools.cache  # once per process: evaluation calls it before every learned policy's run
def retain_freed_memory() -> bool:
    """Make glibc's malloc reuse freed memory instead of mapping fresh pages (module
    docstring); returns whether it took effect (False on other C libraries and platforms,
    where nothing changes). Idempotent; lasts for the life of the process."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt  # the C library this process runs on
    except (OSError, AttributeError):  # e.g. musl, which has no mallopt
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_MAX, 0)) and bool(mallopt(_M_TRIM_THRESHOLD, RETAINED_BYTES))


def training_process(threads: int) -> None:
    """Set up this process to train a network: ``threads`` torch threads, freed memory kept
    for reuse (:func:`retain_freed_memory`)."""
    torch.set_num_threads(threads)
    retain_freed_memory()


def torch_device(name: str) -> torch.device:
    """The torch device ``name`` (``cpu``, ``cuda``, ``cuda:1``); one that this torch cannot
    use is a :class:`~schedlab.errors.SchedlabError` of one line."""
    try:
        device = torch.device(name)
    except RuntimeError as exc:
        msg = f"device {name!r}: {exc}"
        raise SchedlabError(msg) from None
    if device.type == "cuda" and not torch.cuda.is_available():
        msg = f"device {name!r}: this torch ({torch.__version__}) sees no CUDA GPU (use cpu)"
        raise SchedlabError(msg)
    return device
