"""Lamina as an ONNX backend (`onnx.backend.base.Backend`).

    from lamina.frontends.onnx_backend import LaminaBackend
    rep = LaminaBackend.prepare(model)          # import + compile
    outputs = rep.run([x])                      # one array per graph output

This is the interface `onnx.backend.test` drives. `prepare` raises
`OnnxImportError` for a model the importer cannot represent exactly.
`compile_models` compiles many models into one module (one function
each), which is how the test suite runs the hundreds of ONNX node tests
without paying a compilation per test.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from onnx.backend.base import Backend, BackendRep
from xdsl.dialects.builtin import ModuleOp, StringAttr

import lamina
from lamina.frontends.onnx import import_model


class LaminaBackendRep(BackendRep):
    """A compiled model: `run(inputs)` with the graph inputs in order (or by name)."""

    def __init__(self, executable, entry: str, input_names: Sequence[str]):
        self.executable = executable
        self.entry = entry
        self.input_names = list(input_names)

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:  # noqa: ARG002 - ONNX API
        if isinstance(inputs, dict):
            arrays = [inputs[name] for name in self.input_names]
        elif isinstance(inputs, np.ndarray):
            arrays = [inputs]
        else:
            arrays = list(inputs)
        result = self.executable.run(self.entry, *arrays)
        return result if isinstance(result, tuple) else (result,)


def _input_names(model) -> list[str]:
    initializers = {init.name for init in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


class LaminaBackend(Backend):
    """Import with `lamina.frontends.onnx`, compile with `lamina.compile`, run natively."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> LaminaBackendRep:
        """Import and compile `model`; `input_shapes={name: shape}` fixes dynamic inputs."""
        input_shapes = kwargs.pop("input_shapes", None)
        super().prepare(model, device, **kwargs)
        module = import_model(model, input_shapes).module
        return LaminaBackendRep(lamina.compile(module), "main", _input_names(model))

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"


def compile_models(models: Sequence) -> list[LaminaBackendRep]:
    """Compile several models as the functions `@m0`, `@m1`, ... of one module."""
    funcs = []
    for index, model in enumerate(models):
        module = import_model(model).module
        func = module.body.block.first_op
        assert func is not None
        func.detach()
        func.properties["sym_name"] = StringAttr(f"m{index}")
        funcs.append(func)
    executable = lamina.compile(ModuleOp(funcs))
    return [
        LaminaBackendRep(executable, f"m{index}", _input_names(model))
        for index, model in enumerate(models)
    ]


__all__ = ["LaminaBackend", "LaminaBackendRep", "compile_models"]
