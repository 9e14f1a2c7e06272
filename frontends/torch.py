"""PyTorch → Lamina: the `lamina` backend of `torch.compile`, and `torch.export` programs.

    import torch, torchvision
    model = torchvision.models.resnet18().eval()
    fast = torch.compile(model, backend="lamina")   # no import: an entry point
    with torch.no_grad():
        y = fast(torch.randn(1, 3, 224, 224))

`lamina_backend` is registered in the `torch_dynamo_backends` entry-point
group (pyproject.toml), so dynamo finds it by name. What it does with the
FX graph dynamo captured (docs/pytorch.md):

1. AOTAutograd (`aot_autograd`) lowers it to ATen with the core ATen
   decompositions (`torch._decomp.core_aten_decompositions()`, less the
   ones `KEEP` lists, which Lamina translates whole).
2. `CapabilityBasedPartitioner` splits the ATen graph into partitions of
   operators `lamina.frontends.torch_import` translates (`SUPPORTED`);
   every other node stays in the graph and runs in eager PyTorch. One
   warning (`LaminaFallbackWarning`) names those nodes, their operators and
   source lines; an unsupported operator is never an error.
3. Each partition becomes a `LaminaPartition`: on its first call with a
   given set of input shapes it imports the partition (the model's
   parameters and buffers baked in as constants), prints the graph IR
   (deterministic text, weights in hex) and compiles it with
   `lamina.compile`, whose disk cache is keyed by that text: a second
   process compiling the same model loads the code instead. A partition
   that fails to import or compile runs in eager PyTorch, with a warning.

With `torch.compile(..., dynamic=True)` (or the automatic dynamic shapes
dynamo switches to when a second batch size arrives), a partition whose
runtime inputs share one symbolic leading dimension compiles once with a
dynamic batch (`?`, bounds `DEFAULT_BATCH_BOUNDS`) that every later batch
size in those bounds reuses (`BatchPlan`, docs/dynamic-shapes.md). A
partition where that fails (an operator mixing the samples, a size computed
from the batch) compiles per batch size instead, with a warning.

Weights are read when a partition is compiled; a weight changed in place
afterwards (its `_version` moves) makes the partition compile again.

`from_exported_program(ep)` translates a `torch.export.ExportedProgram`
into a graph-dialect module (`@main` over the program's user inputs, the
weights as constants) for `lamina.compile`, raising `TorchImportError` on
the first node it cannot translate.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence

import numpy as np
import torch

from lamina.frontends.sources import DEFAULT_BATCH_BOUNDS
from lamina.frontends.torch_import import (
    Input,
    TorchImportError,
    import_graph,
    node_error,
    numpy_dtype,
    op_name,
    source_of,
    unsupported,
)

aten = torch.ops.aten

KEEP = (
    aten._safe_softmax.default,
    aten.adaptive_avg_pool2d.default,
    aten.hardswish.default,
    aten.hardsigmoid.default,
    aten.silu.default,
)
"""Operators with a core ATen decomposition that Lamina translates directly instead
(one graph op, or a composite without the decomposition's boolean masks or
strided views). Where Lamina refuses one's arguments (an adaptive pooling
whose output size does not divide the input's), PyTorch runs the operator."""

MAX_VARIANTS = 16
"""Executables a partition keeps in memory (per input shapes and weight versions);
the oldest is dropped first (the disk cache still has it)."""

CACHE_FILENAME = "<torch.compile>"
"""The file name a partition's IR is compiled under (part of the disk cache's key)."""

_NON_COMPUTE = (
    "_operator.getitem",
    "torch.ops.aten.view.default",
    "torch.ops.aten._unsafe_view.default",
    "torch.ops.aten.permute.default",
    "torch.ops.aten.t.default",
    "torch.ops.aten.clone.default",
    "torch.ops.aten.alias.default",
    "torch.ops.aten.expand.default",
    "torch.ops.aten.unsqueeze.default",
    "torch.ops.aten.squeeze.dim",
    "torch.ops.aten.squeeze.dims",
)
"""Operators that do not make a partition worth compiling on their own: a partition
of only these runs in eager PyTorch (where they are views, not copies)."""


STATS = {"compiled": 0, "cache_hits": 0, "eager_partitions": 0, "dynamic": 0, "per_shape": 0}
"""Counters of this process's partition compiles: `compiled` (Lamina executables
made), `cache_hits` (of those, loaded from the disk cache), `eager_partitions`
(partitions left to eager PyTorch after a failed import or compile), `dynamic`
(executables compiled with a dynamic batch), `per_shape` (symbolic-batch
partitions that fell back to one compile per batch size)."""


def stats() -> dict[str, int]:
    """A copy of `STATS`."""
    return dict(STATS)


class LaminaFallbackWarning(UserWarning):
    """Part of a model runs in eager PyTorch: an unsupported operator, or a partition
    Lamina failed to compile."""


def decompositions() -> dict:
    """The core ATen decompositions, less those of the operators in `KEEP`."""
    from torch._decomp import core_aten_decompositions

    table = dict(core_aten_decompositions())
    for op in KEEP:
        table.pop(op, None)
    return table


# ---------------------------------------------------------------------------
# The torch.compile backend
# ---------------------------------------------------------------------------


def lamina_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence, options: dict | None = None, mode=None
):
    """The `lamina` backend of `torch.compile` (see the module docstring).

    `options` (`torch.compile(..., options={...})`): `targets` (Lamina
    targets, default the host CPU) and `cache` (the disk cache, default on).
    `mode` (`torch.compile(..., mode=...)`) is accepted and has no effect.
    """
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.aot_autograd import make_boxed_func

    options = dict(options or {})
    unknown = sorted(set(options) - {"targets", "cache"})
    if unknown:
        raise ValueError(f"unknown lamina backend option(s) {unknown} (known: cache, targets)")
    settings = {"targets": options.get("targets"), "cache": options.get("cache")}

    def compile_forward(aten_gm: torch.fx.GraphModule, inputs: Sequence):
        return make_boxed_func(partition_graph(aten_gm, **settings).forward)

    def eager_backward(aten_gm: torch.fx.GraphModule, inputs: Sequence):
        return make_boxed_func(aten_gm.forward)

    backend = aot_autograd(
        fw_compiler=compile_forward,
        inference_compiler=compile_forward,
        bw_compiler=eager_backward,
        decompositions=decompositions(),
    )
    return backend(gm, example_inputs)


class _Support(torch.fx.passes.operator_support.OperatorSupportBase):
    """Lamina takes the nodes the importer translates (`torch_import.unsupported`)."""

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        return unsupported(node) is None


def partition_graph(gm: torch.fx.GraphModule, targets=None, cache=None) -> torch.fx.GraphModule:
    """`gm` with its Lamina-supported parts replaced by `LaminaPartition`s; the rest
    (named in one `LaminaFallbackWarning`) runs in eager PyTorch."""
    from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

    partitioner = CapabilityBasedPartitioner(gm, _Support(), allows_single_node_partition=True)
    partitions = [p for p in partitioner.propose_partitions() if _computes(p.nodes)]
    _warn_unsupported(gm)
    if not partitions:
        return gm
    fused = partitioner.fuse_partitions(partitions)
    for name, sub in list(fused.named_children()):
        if name.startswith("fused_") and isinstance(sub, torch.fx.GraphModule):
            setattr(fused, name, LaminaPartition(sub, name, targets, cache))
    return fused


def _computes(nodes) -> bool:
    """Is a partition worth compiling: does it do more than move data (views, getitem)?"""
    return any(_qualified_name(n.target) not in _NON_COMPUTE for n in nodes)


def _qualified_name(target) -> str:
    from torch.fx.node import _get_qualified_name

    return _get_qualified_name(target)


def _warn_unsupported(gm: torch.fx.GraphModule) -> None:
    """One warning naming the nodes left to eager PyTorch, why, and where they come from
    (a `getitem` of such a node is not named again)."""
    nodes = []
    for node in gm.graph.nodes:
        reason = unsupported(node) if node.op == "call_function" else None
        if _is_size(node):  # `s0 * 784`: Python arithmetic on sizes, not tensor work
            continue
        if reason is not None and node.target is not operator.getitem:
            nodes.append((node, reason))
    if not nodes:
        return
    ops = sorted({op_name(n) for n, _ in nodes})
    lines = []
    for node, reason in nodes[:20]:
        location, code = source_of(node)
        where = f" at {location.file}:{location.line}: {code}" if location else ""
        lines.append(f"  FX node '{node.name}' ({op_name(node)}, {reason}){where}")
    if len(nodes) > 20:
        lines.append(f"  ... and {len(nodes) - 20} more")
    message = (
        f"lamina: {len(nodes)} node(s) run in eager PyTorch, Lamina does not translate "
        f"them: {', '.join(ops)}\n" + "\n".join(lines)
    )
    warnings.warn(message, LaminaFallbackWarning, stacklevel=2)


def _is_size(node: torch.fx.Node) -> bool:
    return isinstance(node.meta.get("val"), torch.SymInt | torch.SymFloat | torch.SymBool)


# ---------------------------------------------------------------------------
# One compiled partition
# ---------------------------------------------------------------------------


def is_weight(value: object) -> bool:
    """A module parameter or buffer (dynamo marks both as unguarded static inputs)."""
    return isinstance(value, torch.nn.Parameter) or (
        getattr(value, "_dynamo_static_input_type", None) == "unguarded"
    )


class LaminaPartition(torch.nn.Module):
    """A partition of an ATen graph run by Lamina-compiled code, one compile per
    distinct set of input shapes (and weight versions); eager PyTorch when that fails."""

    def __init__(self, gm: torch.fx.GraphModule, name: str, targets=None, cache=None):
        super().__init__()
        self.eager = gm
        self.label = name
        self.targets = targets
        self.cache = cache
        self.compiled: dict[tuple, _Compiled | None] = {}
        output = next(n for n in gm.graph.nodes if n.op == "output")
        self.returns_tuple = isinstance(output.args[0], list | tuple)
        plan = BatchPlan.of(gm)
        self.plan = plan if isinstance(plan, BatchPlan) else None
        if isinstance(plan, str):
            STATS["per_shape"] += 1
            self._warn(f"compiles per batch size, not for a dynamic batch: {plan}")

    def forward(self, *args):
        if self.plan is not None:
            key = self.plan.key(args)
            if key is not None:
                entry = self._entry(key, lambda: self._compile(args, self.plan))
                if entry is not None:
                    return entry(args, self.returns_tuple)
            elif self.plan.out_of_bounds(args):
                self._warn(
                    f"compiles for batch size {self.plan.batch_size(args)} alone: it is "
                    f"outside the dynamic batch's bounds {list(self.plan.bounds)}"
                )
        entry = self._entry(tuple(_arg_key(a) for a in args), lambda: self._compile(args))
        if entry is None:
            return self.eager(*args)
        return entry(args, self.returns_tuple)

    def _entry(self, key: tuple, compile_) -> _Compiled | None:
        """The executable compiled for `key`, compiling it (`compile_()`) the first time."""
        if key not in self.compiled:
            if len(self.compiled) >= MAX_VARIANTS:  # the oldest shapes or weight versions
                del self.compiled[next(iter(self.compiled))]
            self.compiled[key] = compile_()
        return self.compiled[key]

    def _compile(self, args: Sequence, plan: BatchPlan | None = None) -> _Compiled | None:
        """Import and compile for these arguments (with `plan`: for every batch size);
        None (with a warning) if that fails."""
        import lamina
        from lamina.core.dense_text import print_module
        from lamina.core.diagnostics import DiagnosticError

        specs, runtime = [], []
        for index, arg in enumerate(args):
            if plan is not None and plan.kinds[index] == BATCH:
                specs.append(None)  # the batch size: `None` keeps the batch in a size
            elif isinstance(arg, torch.Tensor):
                dtype = numpy_dtype(arg.dtype)
                if dtype is None or arg.device.type != "cpu":
                    return self._fallback(f"input {index} is a {arg.dtype} tensor on {arg.device}")
                if is_weight(arg):
                    specs.append(arg.detach().contiguous().numpy())
                else:
                    shape = tuple(arg.shape)
                    if plan is not None and plan.kinds[index] == BATCHED:
                        shape = (None, *shape[1:])
                    specs.append(Input(shape, dtype))
                    runtime.append(index)
            elif isinstance(arg, bool | int | float):
                specs.append(arg)
            else:
                return self._fallback(f"input {index} is a {type(arg).__name__}")
        bounds = plan.bounds if plan is not None else DEFAULT_BATCH_BOUNDS
        try:
            module, constants = import_graph(self.eager.graph, specs, self.eager, bounds)
            text = print_module(module)
            memo = (text, repr(self.targets), self.cache)
            if plan is not None and memo in _DYNAMIC_BUILDS:  # the same partition, recaptured
                return _Compiled(_DYNAMIC_BUILDS[memo], runtime, constants)
            exe = lamina.compile(text, self.targets, filename=CACHE_FILENAME, cache=self.cache)
            if plan is not None:
                _DYNAMIC_BUILDS[memo] = exe
        except DiagnosticError as err:
            return self._fallback(str(err), plan)
        except Exception as err:  # any failure in Lamina costs speed, not the run
            return self._fallback(f"{type(err).__name__}: {err}", plan)
        STATS["compiled"] += 1
        STATS["cache_hits"] += exe.cache_hit is True
        STATS["dynamic"] += plan is not None
        return _Compiled(exe, runtime, constants)

    def _fallback(self, reason: str, plan: BatchPlan | None = None) -> None:
        if plan is not None:  # the caller compiles per batch size instead
            STATS["per_shape"] += 1
            self._warn(f"compiles per batch size, not for a dynamic batch: {reason}")
            return None
        STATS["eager_partitions"] += 1
        self._warn(f"runs in eager PyTorch: {reason}")
        return None

    def _warn(self, message: str) -> None:
        warnings.warn(
            f"lamina: partition '{self.label}' {message}", LaminaFallbackWarning, stacklevel=4
        )


BATCHED, BATCH, OTHER = "batched", "batch", "other"

_DYNAMIC_BUILDS: dict[tuple, object] = {}
"""Dynamic-batch executables by IR text: dynamo recaptures a graph when one of
PyTorch's own guards on the batch fails (a convolution guards `2 <= N <= 15`),
and the partition it makes again reuses the executable instead of compiling."""


class BatchPlan:
    """How a partition keeps dynamo's symbolic batch: per placeholder, `BATCHED` (a
    tensor whose leading dimension is the batch symbol), `BATCH` (the symbol itself,
    a size argument) or `OTHER` (weights, static tensors, other sizes: part of the
    compile key as today). Made only when the symbol appears nowhere else in the
    inputs (a non-leading dimension, a size computed from it): Lamina's batch is the
    leading dimension only."""

    def __init__(self, kinds: list[str], bounds: tuple[int, int]):
        self.kinds = kinds
        self.bounds = bounds

    @staticmethod
    def of(gm: torch.fx.GraphModule) -> BatchPlan | str | None:
        """The plan; None without a symbolic batch; why not (a message) when refused."""
        values = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
        symbol = next((s for v in values if (s := _leading_symbol(v)) is not None), None)
        if symbol is None:
            return None
        kinds = []
        for value in values:
            if isinstance(value, torch.SymInt):
                expr = value.node.expr
                if expr == symbol:
                    kinds.append(BATCH)
                    continue
                if symbol in expr.free_symbols:
                    return f"it takes the size {expr}, computed from the batch size {symbol}"
                kinds.append(OTHER)
            elif isinstance(value, torch.Tensor):
                batched = _leading_symbol(value) == symbol
                rest = value.shape[1:] if batched else value.shape
                if any(_mentions(d, symbol) for d in rest):
                    return (
                        f"an input of shape {list(value.shape)} has the batch size {symbol} "
                        "in another dimension than the leading one"
                    )
                kinds.append(BATCHED if batched else OTHER)
            else:
                kinds.append(OTHER)
        return BatchPlan(kinds, DEFAULT_BATCH_BOUNDS)

    def batch_size(self, args: Sequence) -> int | None:
        """The batch size of these arguments, None when they disagree."""
        sizes = {
            int(a.shape[0]) if k == BATCHED else int(a)
            for k, a in zip(self.kinds, args, strict=True)
            if k in (BATCHED, BATCH)
        }
        return sizes.pop() if len(sizes) == 1 else None

    def out_of_bounds(self, args: Sequence) -> bool:
        n = self.batch_size(args)
        return n is not None and not self.bounds[0] <= n <= self.bounds[1]

    def key(self, args: Sequence) -> tuple | None:
        """The compile key of the dynamic build (the batch size left out), or None when
        these arguments cannot use it (sizes that disagree or are out of bounds)."""
        n = self.batch_size(args)
        if n is None or not self.bounds[0] <= n <= self.bounds[1]:
            return None
        key: list[tuple] = [("dynamic",)]
        for kind, arg in zip(self.kinds, args, strict=True):
            if kind == BATCH:
                key.append(("s", "N"))
            elif kind == BATCHED:
                key.append(("t", ("N", *arg.shape[1:]), arg.dtype, arg.device.type))
            else:
                key.append(_arg_key(arg))
        return tuple(key)


def _leading_symbol(value: object):
    """The sympy symbol a fake tensor's leading dimension is, if it is one."""
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return None
    size = value.shape[0]
    if isinstance(size, torch.SymInt) and size.node.expr.is_Symbol:
        return size.node.expr
    return None


def _mentions(size: object, symbol) -> bool:
    return isinstance(size, torch.SymInt) and symbol in size.node.expr.free_symbols


def _arg_key(arg: object) -> tuple:
    """What a compiled partition depends on: a weight's identity and version, a
    runtime tensor's shape and dtype, a scalar's value."""
    if isinstance(arg, torch.Tensor):
        if is_weight(arg):
            return ("w", id(arg), arg.data_ptr(), arg._version)
        return ("t", tuple(arg.shape), arg.dtype, arg.device.type)
    return ("s", type(arg).__name__, arg)


class _Compiled:
    """An executable for one partition and the indices of its runtime-tensor arguments."""

    def __init__(self, exe, runtime: list[int], constants: list):
        self.exe = exe
        self.runtime = runtime
        self.constants = constants

    def __call__(self, args: Sequence, returns_tuple: bool):
        arrays = [args[i].detach().numpy() for i in self.runtime]
        results = self.exe.run("main", *arrays)
        results = list(results) if isinstance(results, tuple) else [results]
        outputs = []
        for constant in self.constants:
            if constant is None:
                outputs.append(torch.from_numpy(results.pop(0)))
            else:
                outputs.append(_as_torch(constant))
        return tuple(outputs) if returns_tuple else outputs[0]


def _as_torch(value: object) -> object:
    if isinstance(value, np.ndarray):
        return torch.from_numpy(value)
    return value


# ---------------------------------------------------------------------------
# torch.export
# ---------------------------------------------------------------------------


def from_exported_program(ep, *, decompose: bool = True):
    """A verified graph-dialect module computing the `torch.export` program `ep`.

    `@main` takes the program's user inputs (in order, with the shapes they
    were exported with) and returns its user outputs; parameters, buffers
    and lifted constants are baked in as constants. `decompose`: first run
    the core ATen decompositions (less `KEEP`). Raises `TorchImportError`
    naming the first FX node (and its source line) Lamina cannot translate.
    Compile the result with `lamina.compile(module)`.
    """
    from torch.export.graph_signature import InputKind

    if decompose:
        ep = ep.run_decompositions(decompositions())
    signature = ep.graph_signature
    placeholders = [n for n in ep.graph.nodes if n.op == "placeholder"]
    specs, bounds = [], DEFAULT_BATCH_BOUNDS
    for node, spec in zip(placeholders, signature.input_specs, strict=True):
        if spec.kind == InputKind.USER_INPUT:
            specs.append(_user_input(node))
            if specs[-1].shape and specs[-1].shape[0] is None:
                bounds = _dim_bounds(ep, node)
        elif spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            specs.append(_weight(node, ep.state_dict[spec.target]))
        elif spec.kind == InputKind.CONSTANT_TENSOR:
            specs.append(_weight(node, ep.constants[spec.target]))
        else:
            raise node_error(node, f"input kind {spec.kind.name} is not supported")
    module, constants = import_graph(ep.graph, specs, ep.graph_module, bounds)
    for node, constant in zip(_outputs(ep.graph), constants, strict=False):
        if constant is not None:
            raise node_error(node, "an output computed at import time is not supported")
    return module


def _user_input(node: torch.fx.Node) -> Input:
    value = node.meta.get("val")
    if not isinstance(value, torch.Tensor):
        raise node_error(node, f"input of type {type(value).__name__} is not supported")
    dtype = numpy_dtype(value.dtype)
    if dtype is None:
        raise node_error(node, f"input dtype {value.dtype} is not supported")
    shape = list(value.shape)
    batched = bool(shape) and _is_symbol(shape[0])
    if not all(type(d) is int for d in shape[batched:]):
        raise node_error(
            node,
            f"input '{node.name}' has a dynamic shape {shape}; Lamina's only dynamic "
            "dimension is the leading (batch) one (export this dimension static, "
            "docs/dynamic-shapes.md)",
        )
    return Input((None, *shape[1:]) if batched else tuple(shape), dtype)


def _is_symbol(size: object) -> bool:
    return isinstance(size, torch.SymInt) and size.node.expr.is_Symbol


def _dim_bounds(ep, node: torch.fx.Node) -> tuple[int, int]:
    """The batch's bounds: the `Dim`'s range (`torch.export.Dim("batch", min=, max=)`),
    the default where it is unbounded."""
    expr = node.meta["val"].shape[0].node.expr
    ranges = ep.range_constraints.get(expr)
    lo, hi = DEFAULT_BATCH_BOUNDS
    if ranges is not None:
        lo = max(_finite(ranges.lower, lo), 1)
        hi = _finite(ranges.upper, hi)
    return lo, hi


def _finite(bound: object, default: int) -> int:
    """A range's bound as an int; `default` for an infinite one (sympy's `oo`, `int_oo`)."""
    try:
        return int(bound)  # pyright: ignore[reportArgumentType]
    except (TypeError, ValueError, OverflowError, AttributeError):
        return default


def _weight(node: torch.fx.Node, tensor) -> np.ndarray:
    if numpy_dtype(tensor.dtype) is None:
        raise node_error(node, f"dtype {tensor.dtype} is not supported")
    return tensor.detach().cpu().contiguous().numpy()


def _outputs(graph: torch.fx.Graph) -> list:
    output = next(n for n in graph.nodes if n.op == "output")
    flat = output.args[0]
    return list(flat) if isinstance(flat, list | tuple) else [flat]


__all__ = [
    "KEEP",
    "LaminaFallbackWarning",
    "LaminaPartition",
    "TorchImportError",
    "decompositions",
    "from_exported_program",
    "lamina_backend",
    "partition_graph",
    "stats",
]
