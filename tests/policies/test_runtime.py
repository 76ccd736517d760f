"""The training process's set-up: torch threads, and malloc reusing freed memory."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from schedlab.policies.runtime import training_process

MALLOC_STATE = """
import ctypes, json, sys
import numpy as np
from schedlab.policies.runtime import retain_freed_memory

class MallInfo2(ctypes.Structure):  # glibc >= 2.33
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

mallinfo2 = ctypes.CDLL(None).mallinfo2
mallinfo2.restype = MallInfo2
took = retain_freed_memory() if sys.argv[1] == "retain" else None
a = np.ones(1 << 23)  # 64 MiB
mapped = mallinfo2().hblkhd  # bytes in blocks served by their own mmap
del a
print(json.dumps({"took": took, "mapped": mapped, "kept": mallinfo2().fordblks}))
"""


def _malloc_state(mode: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", MALLOC_STATE, mode], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_big_blocks_come_from_the_heap_and_stay_there_for_reuse() -> None:
    size = 1 << 26
    default = _malloc_state("default")
    assert default["mapped"] >= size  # its own mapping, unmapped when freed: pages fault again
    assert default["kept"] < size
    retained = _malloc_state("retain")
    assert retained["took"] is True
    assert retained["mapped"] < size
    assert retained["kept"] >= size  # freed, kept for the next allocation


def test_training_process_sets_the_threads() -> None:
    previous = torch.get_num_threads()
    try:
        for threads in (2, 1):  # each differs from the setting before it
            training_process(threads)
            assert torch.get_num_threads() == threads
    finally:
        torch.set_num_threads(previous)


ONE_THREAD_CNN = """
import numpy as np, torch
torch.set_num_threads(1)
from schedlab.policies.networks import make_network
from schedlab.simulator.views.deeprm_image import ObsGeometry, SparseObs

geometry = ObsGeometry(cap_units=(4, 3), slots=2, horizon=5, backlog_view=7)
net = make_network("cnn-plus", geometry)
terms = np.zeros((4, geometry.n_terms), np.int32)
net.forward_obs(SparseObs(terms, np.ones(terms.shape, np.float32), geometry)).sum().backward()
print(torch.get_num_threads())
"""


@pytest.mark.slow
def test_the_cnn_keeps_the_processs_torch_threads() -> None:
    """The sparse first layer's compiled loops start numba's OpenMP pool on first use, which
    reset torch to every core: a ``--threads 1`` training ran on two (fresh process)."""
    out = subprocess.run(
        [sys.executable, "-c", ONE_THREAD_CNN], capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1"]
