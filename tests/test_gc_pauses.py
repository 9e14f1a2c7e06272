"""A compile raises the collector's young and middle thresholds, and restores them."""

from __future__ import annotations

import gc

from lamina.core.gc_pauses import COMPILE_MIDDLE_THRESHOLD, COMPILE_THRESHOLD, fewer_gc_pauses


def test_thresholds_raised_and_restored():
    saved = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with fewer_gc_pauses():
            assert gc.get_threshold() == (COMPILE_THRESHOLD, COMPILE_MIDDLE_THRESHOLD, 10)
            with fewer_gc_pauses():  # reentrant: the outermost compile restores
                pass
            assert gc.get_threshold() == (COMPILE_THRESHOLD, COMPILE_MIDDLE_THRESHOLD, 10)
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*saved)


def test_collection_left_off():
    """A process that turned automatic collection off keeps it off."""
    saved = gc.get_threshold()
    try:
        gc.set_threshold(0, 10, 10)
        with fewer_gc_pauses():
            assert gc.get_threshold()[0] == 0
        assert gc.get_threshold() == (0, 10, 10)
    finally:
        gc.set_threshold(*saved)
