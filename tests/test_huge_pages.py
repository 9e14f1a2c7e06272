"""Weight blobs on transparent huge pages (`LAMINA_HUGE_PAGES`, runtime/constant_blob.py).

The kernel marks a mapping advised with MADV_HUGEPAGE by `hg` in its VmFlags
(/proc/self/smaps): the test reads that flag for the blob's own mapping.
"""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from lamina.runtime import constant_blob

SMAPS = Path("/proc/self/smaps")
pytestmark = pytest.mark.skipif(
    not SMAPS.exists() or not hasattr(mmap, "MADV_HUGEPAGE") or not hasattr(mmap, "MAP_POPULATE"),
    reason="needs Linux's /proc/self/smaps and MADV_HUGEPAGE",
)


def _vm_flags(address: int) -> list[str]:
    """The VmFlags of the mapping that holds `address`."""
    inside = False
    for line in SMAPS.read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            start, end = (int(x, 16) for x in head.split("-"))
            inside = start <= address < end
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError(f"no mapping holds {address:#x}")


def test_a_large_blob_is_advised_huge_pages_and_reads_back(monkeypatch):
    monkeypatch.delenv(constant_blob.HUGE_PAGES_ENV, raising=False)
    blob = constant_blob._aligned_buffer(constant_blob.HUGE_PAGE_BLOB)
    assert blob.ctypes.data % constant_blob.ALIGN == 0
    assert "hg" in _vm_flags(blob.ctypes.data)
    blob[:] = np.arange(blob.size, dtype=np.uint8)
    assert blob[257] == 1 and blob[-1] == (blob.size - 1) % 256


@pytest.mark.parametrize("value", ["0", "off", "false", "no"])
def test_the_environment_keeps_blobs_on_small_pages(monkeypatch, value):
    monkeypatch.setenv(constant_blob.HUGE_PAGES_ENV, value)
    blob = constant_blob._aligned_buffer(constant_blob.HUGE_PAGE_BLOB)
    assert "hg" not in _vm_flags(blob.ctypes.data)


def test_a_small_blob_stays_on_small_pages(monkeypatch):
    monkeypatch.delenv(constant_blob.HUGE_PAGES_ENV, raising=False)
    blob = constant_blob._aligned_buffer(constant_blob.HUGE_PAGE_BLOB // 2)
    assert "hg" not in _vm_flags(blob.ctypes.data)
