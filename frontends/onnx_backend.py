"""Lamina as an ONNX backend (`onnx.backend.base.Backend`).

    from lamina.frontends.onnx_backend import LaminaBackend
    rep = LaminaBackend.prepare(model)          # import + compile
    outputs = rep.run([x])                      # one array per graph output

This is the interface `onnx.backend.test` drives. `prepare` raises
`OnnxImportError` for a model the importer cannot represent exactly.

Lamina compiles static shapes. A model whose axes, target shape, sizes, K,
repeats, ... arrive as graph *inputs* cannot be compiled before their values
are known: `prepare` then defers, and the first `run` binds those inputs to
the values it is given (`import_model(bind_inputs=...)`) and compiles; a
later run with other values for them compiles again (one executable per
distinct binding). `compile_models` compiles many models into one module
(one function each), which is how the test suite runs the hundreds of ONNX
node tests without paying a compilation per test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from onnx.backend.base import Backend, BackendRep
from xdsl.dialects.builtin import ModuleOp, StringAttr

import lamina
from lamina.frontends.onnx import NeedsConstantInput, import_model


class LaminaBackendRep(BackendRep):
    """A model ready to run: `run(inputs)` with the graph inputs in order (or by name).

    `bound` holds the graph inputs compiled in as constants; `run` drops them
    from the arguments (checking that their values are the bound ones, or
    compiling again for new values when the rep owns its model)."""

    def __init__(self, executable, entry: str, input_names: Sequence[str],
                 bound: Mapping[str, np.ndarray] | None = None, model=None,
                 input_shapes=None):  # fmt: skip
        self.executable = executable
        self.entry = entry
        self.input_names = list(input_names)
        self.bound = dict(bound or {})
        self.model = model
        self.input_shapes = input_shapes
        self._variants: dict[bytes, tuple[object, dict[str, np.ndarray]]] = {}

    def run(self, inputs, **kwargs) -> tuple[np.ndarray, ...]:  # noqa: ARG002 - ONNX API
        if isinstance(inputs, dict):
            arrays = [inputs[name] for name in self.input_names]
        elif isinstance(inputs, np.ndarray):
            arrays = [inputs]
        else:
            arrays = list(inputs)
        feeds = dict(zip(self.input_names, arrays, strict=False))
        executable = self._executable_for(feeds)
        args = [feeds[name] for name in self.input_names if name not in self.bound]
        result = executable.run(self.entry, *args)
        return result if isinstance(result, tuple) else (result,)

    def _executable_for(self, feeds: dict[str, np.ndarray]):
        if self.executable is not None and all(
            np.array_equal(feeds[name], value) for name, value in self.bound.items()
        ):
            return self.executable
        if self.model is None:
            changed = [n for n, v in self.bound.items() if not np.array_equal(feeds[n], v)]
            raise ValueError(f"inputs {changed} were compiled in as constants; pass those values")
        module, bound = bind_shape_inputs(self.model, feeds, self.input_shapes)
        key = b"".join(n.encode() + np.ascontiguousarray(v).tobytes() for n, v in bound.items())
        if key not in self._variants:
            self._variants[key] = (lamina.compile(module), bound)
        self.executable, self.bound = self._variants[key]
        return self.executable


def bind_shape_inputs(model, feeds: Mapping[str, np.ndarray], input_shapes=None):
    """(module, bound inputs): the model imported with each graph input the
    importer needs as a constant bound to its value in `feeds`."""
    bound: dict[str, np.ndarray] = {}
    while True:
        try:
            module = import_model(model, input_shapes, bind_inputs=bound).module
            return module, bound
        except NeedsConstantInput as err:
            if err.input_name not in feeds or err.input_name in bound:
                raise
            bound[err.input_name] = np.asarray(feeds[err.input_name])


def _input_names(model) -> list[str]:
    initializers = {init.name for init in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in initializers]


class LaminaBackend(Backend):
    """Import with `lamina.frontends.onnx`, compile with `lamina.compile`, run natively."""

    @classmethod
    def prepare(cls, model, device: str = "CPU", **kwargs) -> LaminaBackendRep:
        """Import and compile `model`; `input_shapes={name: shape}` fixes dynamic inputs.
        A model with shape-deciding graph inputs compiles at its first run."""
        input_shapes = kwargs.pop("input_shapes", None)
        super().prepare(model, device, **kwargs)
        names = _input_names(model)
        try:
            module = import_model(model, input_shapes).module
        except NeedsConstantInput:
            return LaminaBackendRep(None, "main", names, model=model, input_shapes=input_shapes)
        return LaminaBackendRep(lamina.compile(module), "main", names)

    @classmethod
    def run_model(cls, model, inputs, device: str = "CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device.upper() == "CPU"


def compile_models(
    models: Sequence, bind: Sequence[Mapping[str, np.ndarray]] | None = None
) -> list[LaminaBackendRep]:
    """Compile several models as the functions `@m0`, `@m1`, ... of one module;
    `bind[k]` gives model k's graph inputs that decide shapes (see `bind_shape_inputs`)."""
    funcs, bounds = [], []
    for index, model in enumerate(models):
        feeds = bind[index] if bind is not None else {}
        module, bound = bind_shape_inputs(model, feeds)
        func = module.body.block.first_op
        assert func is not None
        func.detach()
        func.properties["sym_name"] = StringAttr(f"m{index}")
        funcs.append(func)
        bounds.append(bound)
    executable = lamina.compile(ModuleOp(funcs))
    return [
        LaminaBackendRep(executable, f"m{index}", _input_names(model), bounds[index])
        for index, model in enumerate(models)
    ]


__all__ = ["LaminaBackend", "LaminaBackendRep", "bind_shape_inputs", "compile_models"]
