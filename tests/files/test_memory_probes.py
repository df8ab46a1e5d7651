"""The memory probes of ``llm_from_scratch.files``, one a question: the machine's memory, what
this process holds now, and the most it has held (or a child, from its ``ru_maxrss``)."""

from __future__ import annotations

import mmap
import os
import resource
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_from_scratch.files import machine_memory_bytes, peak_memory_bytes, resident_memory_bytes

linux_only = pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="reads /proc")


@linux_only
def test_the_machine_memory_is_what_the_kernel_reports_as_total() -> None:
    meminfo = Path("/proc/meminfo").read_text(encoding="ascii").splitlines()
    total_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    assert abs(machine_memory_bytes() - total_kib * 1024) < os.sysconf("SC_PAGE_SIZE")


@linux_only
def test_the_resident_memory_grows_by_what_the_process_touches() -> None:
    fresh = mmap.mmap(-1, 64 << 20)  # new pages: an allocator may hand back resident ones
    before = resident_memory_bytes()
    pages = np.frombuffer(fresh, dtype=np.uint8)
    pages[:] = 1  # 64 MiB, every page written
    grown = resident_memory_bytes() - before
    assert 60 << 20 < grown < 80 << 20
    assert grown < peak_memory_bytes() < machine_memory_bytes()
    del pages
    fresh.close()


def test_the_peak_is_this_process_high_water_mark_in_bytes() -> None:
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    scale = 1 if sys.platform == "darwin" else 1024
    assert peak_memory_bytes() >= maxrss * scale
    assert peak_memory_bytes(maxrss) == maxrss * scale


@linux_only
def test_a_child_peak_from_wait4_is_converted_as_its_own_bytes() -> None:
    program = "import numpy; numpy.ones(96 << 20, dtype=numpy.uint8)"
    pid = os.posix_spawn(sys.executable, [sys.executable, "-c", program], os.environ)
    _, status, usage = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert 96 << 20 < peak_memory_bytes(usage.ru_maxrss) < machine_memory_bytes()
