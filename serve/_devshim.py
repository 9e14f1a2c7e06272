"""TEMPORARY (development only, removed once lamina.runtime.load exists): a model
path compiled with lamina.compile, exposing the artifact API."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np


class _Shim:
    def __init__(self, exe):
        self.exe = exe
        sig = exe.signatures["main"]
        names = sig.param_names or (None,) * len(sig.params)
        self._inputs = [
            SimpleNamespace(name=n or f"in{i}", dtype=s.dtype, shape=s.shape)
            for i, (n, s) in enumerate(zip(names, sig.params, strict=True))
        ]
        self._outputs = [
            SimpleNamespace(name=f"out{i}", dtype=s.dtype, shape=s.shape)
            for i, s in enumerate(sig.results)
        ]

    def get_inputs(self):
        return self._inputs

    def get_outputs(self):
        return self._outputs

    def run(self, arrays):
        got = self.exe.run("main", *[np.asarray(arrays[p.name]) for p in self._inputs])
        return got


def load(path: str):
    import lamina.runtime as runtime

    if hasattr(runtime, "load"):
        return runtime.load(path)  # pyright: ignore
    import lamina

    return _Shim(lamina.compile(path))
