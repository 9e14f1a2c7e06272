"""Winograd's weight transforms computed on a thread while `fuse-ops` builds kernels.

A call of a Winograd convolution's kernel passes `winograd_weights(w)` of its
constant weights as a derived parameter (kernels/conv_winograd.py): one
`einsum` per convolution, in float64, which `fuse-ops` computed when it
created each call. They were most of the pass and a serial part of every
compile (ResNet-34: 0.53 s of CPU, ResNet-50 0.22 s), while the second core
was idle: before the compile forks its lowering process, and through the
whole compile of a model whose kernels all come from the cache.

`WinogradPrefetch` finds the constant weights of the module's Winograd
convolutions when the pass starts and transforms them, in module order, on
worker threads (NumPy's `einsum` and `astype` release the GIL); the pass
takes each result where it would have computed it. The result is the same
function of the same array, so the IR is the same; a weight the pass never
derives from is simply not used, and a transform the workers have not
started yet is computed by the pass itself, as before. `close()` (at the
end of the pass) waits for the threads, so none is alive when the compile
forks. docs/compile-speed.md, "Winograd's weights on a thread".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, ModuleOp, StringAttr
from xdsl.ir import Attribute, SSAValue

from lamina.core.dense import dense_value
from lamina.dialects import graph
from lamina.kernels import KernelParameters
from lamina.kernels.conv_winograd import winograd_weights
from lamina.runtime.host import build_threads

_WINOGRAD = StringAttr("winograd")


def _transform(attr: DenseIntOrFPElementsAttr) -> np.ndarray:
    """What `derived_constants` computes from a weight: `winograd_weights` of its
    value, as an array of the weight's dtype."""
    source = dense_value(attr)
    return np.asarray(winograd_weights(source), dtype=source.dtype)


class WinogradPrefetch:
    """The Winograd weight transforms of a module, computing on threads (see the module doc)."""

    def __init__(self, module: ModuleOp | None = None):
        self._pending: dict[int, tuple[Attribute, Future[np.ndarray]]] = {}
        self._pool: ThreadPoolExecutor | None = None
        weights = _winograd_weights(module) if module is not None else []
        threads = build_threads()
        if not weights or threads < 2:  # one thread: the pass computes them, as before
            return
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="lamina-winograd")
        for attr in weights:
            self._pending[id(attr)] = (attr, self._pool.submit(_transform, attr))

    def parameters(self, params: KernelParameters, inputs: Sequence[SSAValue]) -> KernelParameters:
        """`params` with every Winograd transform of an input whose result is at hand
        replaced by that result (a function returning it)."""
        if not self._pending or not params.derived:
            return params
        derived = []
        for d in params.derived:
            owner = inputs[d.source].owner
            if d.fn is winograd_weights and isinstance(owner, graph.ConstantOp):
                result = self._take(owner.value)
                if result is not None:
                    d = dataclasses.replace(d, fn=lambda _source, result=result: result)
            derived.append(d)
        return dataclasses.replace(params, derived=tuple(derived))

    def _take(self, attr: Attribute) -> np.ndarray | None:
        """The transform of `attr` (waiting for it if a thread is computing it), or None
        if it was not started: the caller computes it."""
        entry = self._pending.pop(id(attr), None)
        if entry is None or entry[0] is not attr:
            return None
        future = entry[1]
        if future.cancel():  # not started yet: the pass computes it now, no wait
            return None
        return future.result()

    def close(self) -> None:
        """Stop the threads (transforms not started are dropped)."""
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None


def _winograd_weights(module: ModuleOp) -> list[DenseIntOrFPElementsAttr]:
    """The distinct constant weights of the module's Winograd convolutions, in order."""
    found: dict[int, DenseIntOrFPElementsAttr] = {}
    for op in module.walk():
        if not isinstance(op, graph.Conv2dOp):
            continue
        if op.attributes.get(graph.CONV_ALGORITHM_ATTR) != _WINOGRAD:
            continue
        owner = op.operands[1].owner
        if isinstance(owner, graph.ConstantOp) and isinstance(
            owner.value, DenseIntOrFPElementsAttr
        ):
            found.setdefault(id(owner.value), owner.value)
    return list(found.values())


__all__ = ["WinogradPrefetch"]
