"""Weights laid out on a thread (`constant_blob.prefill`), taken by one caller each:
failed fills, abandoned ones and compiles on several threads (runtime/constant_blob.py)."""

import ctypes
import threading

import llvmlite.binding as llvm
import numpy as np

from lamina.runtime import constant_blob


def _constants(tag: str, count: int = 3) -> dict[str, bytes]:
    rng = np.random.default_rng(sum(map(ord, tag)))
    return {f"__lamina_w_blob_test_{tag}_{i}": rng.bytes(3000 + i) for i in range(count)}


def _resolves(constants: dict[str, bytes]) -> bool:
    return all(
        (address := llvm.address_of_symbol(symbol)) and ctypes.string_at(address, len(data)) == data
        for symbol, data in constants.items()
    )


def test_a_failed_fill_is_laid_out_again_by_register():
    """A prefill whose filling failed (here: a value that is no bytes) is not an error of
    the `register` that takes it: the constants are laid out there."""
    constants = _constants("failed", 2)
    symbol = next(iter(constants))
    fill = constant_blob.prefill({symbol: 12345})  # type: ignore[dict-item]
    assert fill is not None
    fill.wait()
    assert constant_blob.register(constants) > 0
    assert _resolves(constants)
    assert fill not in constant_blob._pending


def test_discard_drops_a_failed_fill_without_raising():
    """A build that failed before linking discards its prefills: a failed fill's error is
    not raised in place of the build's, and the next `register({})` sees nothing of it."""
    constants = _constants("discarded", 1)
    symbol = next(iter(constants))
    fill = constant_blob.prefill({symbol: object()})  # type: ignore[dict-item]
    constant_blob.discard([fill, None])
    assert fill not in constant_blob._pending
    assert constant_blob.register({}) == 0
    assert not llvm.address_of_symbol(symbol)  # dropped, not registered


def test_prefills_of_two_threads_are_registered_by_their_own_register():
    """Two compiles on two threads prefill and register their own weights: each `register`
    takes only the prefills holding its symbols, none is lost or taken twice."""
    sets = [_constants(f"thread{i}", 4) for i in range(2)]
    results: list[int] = [0, 0]
    failures: list[BaseException] = []
    barrier = threading.Barrier(2)

    def compile_like(i: int) -> None:
        try:
            constant_blob.prefill(sets[i])
            barrier.wait()  # both prefills pending at once
            results[i] = constant_blob.register(sets[i])
        except BaseException as err:  # noqa: BLE001 - reported by the assertion below
            failures.append(err)

    threads = [threading.Thread(target=compile_like, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures
    for i, constants in enumerate(sets):
        _, size = constant_blob.layout({s: len(d) for s, d in constants.items()})
        assert results[i] == size and _resolves(constants)


def test_a_constant_being_laid_out_is_not_prefilled_twice():
    """A second prefill of symbols already pending lays out nothing new (one blob each)."""
    constants = _constants("twice", 2)
    first = constant_blob.prefill(constants)
    assert first is not None and constant_blob.prefill(constants) is None
    constant_blob.register(constants)
    assert _resolves(constants)
