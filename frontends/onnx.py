"""ONNX → graph dialect: `import_model(model) → ModuleOp`.

The result has one entry function `@main` whose parameters are the graph's
inputs (initializers excluded) in ONNX order and whose results are its
outputs in order. Opsets 13 to the installed onnx package's newest
(`MAX_OPSET`) of the default domain are read with their own semantics; an
older model is first upgraded with `onnx.version_converter` (and a note says
so). An operator whose definition changed after `AUDITED_OPSET` (a newer onnx
package than the importer was written against) is refused by name.

How a node becomes graph IR:

* Initializers and `Constant` nodes are *known constants* (NumPy arrays).
  They become `graph.constant`s only where a graph op uses them, and their
  data stays binary (`lamina.frontends.builder.dense_attr`).
* A node whose inputs are all small known constants (shape arithmetic:
  `Shape`, `Gather`, `Concat`, `Unsqueeze`, `Equal`, `Where`, ...) is
  evaluated at import time with ONNX's reference evaluator, so static-shape
  models come out without shape computations. `Shape` of a runtime value is
  a constant too: shapes are static.
* Every other node is translated by its handler in `HANDLERS` into graph
  ops through `GraphBuilder`, whose ops infer their result types with the
  verifiers' shape rules. Larger constant computations (transposed weights,
  BatchNorm scales) are left to `fold-constants`.
* Anything the importer cannot represent exactly — an unknown op, an
  attribute it does not handle, a dynamic dimension, an opset out of range,
  a malformed file — raises `OnnxImportError` naming the node (name, op
  type, opset) and what is missing. It never imports a graph that would
  compute something else.
"""

from __future__ import annotations

import functools
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ArrayAttr, ModuleOp, NameLoc, NoneAttr, StringAttr
from xdsl.ir import OpResult

from lamina.core.diagnostics import Diagnostic, DiagnosticError
from lamina.core.locations import stamp_trailing
from lamina.dialects import graph
from lamina.driver.signatures import INPUT_NAMES_ATTR, OUTPUT_NAMES_ATTR
from lamina.frontends.builder import (
    BuilderError,
    GraphBuilder,
    Value,
    build_module,
    shape_of,
    ssa_name,
)
from lamina.frontends.sources import DEFAULT_BATCH_BOUNDS, candidate_path, is_model_proto


def _installed_max_opset() -> int:
    try:
        import onnx.defs
    except ImportError:  # the importer needs onnx anyway; importing this module does not
        return AUDITED_OPSET
    return int(onnx.defs.onnx_opset_version())


MIN_OPSET = 13
"""The oldest default-domain opset read directly (older ones are converted to it)."""

AUDITED_OPSET = 28
"""The newest opset whose operator changes the handlers were checked against
(attribute→input moves, new attributes and element types up to here are
handled or refused by name)."""

MAX_OPSET = _installed_max_opset()
"""The newest default-domain opset accepted: the installed onnx package's."""

FOLD_LIMIT = 1 << 16
"""Nodes whose constant inputs have at most this many elements in all are
evaluated at import time (shape arithmetic); bigger ones become graph ops."""

_NEVER_FOLD = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
               "Bernoulli", "Multinomial"}  # fmt: skip


@dataclass
class ModelLocation:
    """Where an import diagnostic points: the model file (ONNX has no lines)."""

    file: str

    def __str__(self) -> str:
        return self.file


class OnnxImportError(DiagnosticError):
    """The model cannot be imported; the message names the node and what is missing."""


class NeedsConstantInput(OnnxImportError):
    """A graph input decides a shape (axes, a target shape, K, ...) and must be
    bound to a value (`bind_inputs`); `input_name` names it."""

    input_name: str = ""


def _error(path: str, message: str) -> OnnxImportError:
    return OnnxImportError(Diagnostic(message, location=ModelLocation(path)))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------
# Entry points
# ---------------------------------------------------------------------------


@dataclass
class ImportResult:
    module: ModuleOp
    notes: list[str] = field(default_factory=list)


def load_model(path: str, data: bytes | None = None):
    """Read an ONNX file (with external data next to it), as a user error if it is not one.

    `data`: the file's bytes, already read (runtime/cache.py reads a model while
    hashing it): parsed instead of reading the file again, so the bytes imported
    are the bytes hashed."""
    import onnx
    from google.protobuf.message import DecodeError

    if not os.path.isfile(path):
        raise _error(path, "no such file")
    try:
        if data is None:
            return onnx.load(path)
        from onnx.external_data_helper import load_external_data_for_model

        model = onnx.load_model_from_string(data)
        load_external_data_for_model(model, os.path.dirname(path))
        return model
    except (DecodeError, ValueError, RuntimeError, OSError) as err:
        raise _error(path, f"not a valid ONNX model: {err}") from None


def import_file(
    path: str,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    cli: bool = False,
    bind_inputs: dict[str, np.ndarray] | None = None,
    batch_bounds: tuple[int, int] = DEFAULT_BATCH_BOUNDS,
    data: bytes | None = None,
) -> ImportResult:
    """Import the ONNX model at `path` (see `import_model`; `data`: see `load_model`)."""
    return import_model(
        load_model(path, data),
        input_shapes=input_shapes,
        path=path,
        cli=cli,
        bind_inputs=bind_inputs,
        batch_bounds=batch_bounds,
    )


def import_model(
    model,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    path: str = "<model>",
    *,
    cli: bool = False,
    bind_inputs: dict[str, np.ndarray] | None = None,
    batch_bounds: tuple[int, int] = DEFAULT_BATCH_BOUNDS,
) -> ImportResult:
    """Translate an `onnx.ModelProto` into a verified graph-dialect module.

    A `dim_param` (or unknown) leading dimension of an input that `input_shapes`
    does not fix becomes the dynamic batch `?` with `batch_bounds`
    (docs/dynamic-shapes.md); any other dynamic dimension must be fixed.

    `input_shapes` fixes dynamic input dimensions (`{"input": (1, 3, 224, 224)}`);
    each entry must name a graph input, have its rank and agree with its static
    dimensions. `cli`: diagnostics name the `--input-shape` flag instead of the
    `input_shapes=` argument. `bind_inputs={name: array}` makes graph inputs
    constants (they leave `@main`'s parameters): how a model whose axes,
    target shapes or K arrive as inputs becomes static (`NeedsConstantInput`
    names one that must be bound). Raises `OnnxImportError`.
    """
    notes: list[str] = []
    model = _checked_opset(model, path, notes)
    importer = _Importer(model, path, dict(input_shapes or {}), cli, _bounds(batch_bounds, path))
    for name, value in (bind_inputs or {}).items():
        importer.bind(name, value)
    return ImportResult(importer.run(), notes)


def import_source(
    source: object,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    *,
    cli: bool = False,
    filename: str = "<model>",
    batch_bounds: tuple[int, int] | None = None,
    data: bytes | None = None,
) -> ImportResult | None:
    """`source` imported if it is an ONNX model, else None (graph IR text or its path).

    `batch_bounds`: the dynamic batch's bounds the user gave (`--batch-bounds`,
    `batch_bounds=`; None: `DEFAULT_BATCH_BOUNDS`), which, like input shapes,
    a graph program cannot take.

    An ONNX model is an `onnx.ModelProto`, a path ending in `.onnx`, or a path to
    a file that is not UTF-8 text and loads as an ONNX model; any other binary
    file is a user error (never a `UnicodeDecodeError`). This is how
    `lamina.compile`, `lamina-run` and `lamina-compile` take ONNX models.
    `data`: the bytes of the file at path `source`, if already read (`load_model`).
    """
    given = batch_bounds is not None
    batch_bounds = batch_bounds or DEFAULT_BATCH_BOUNDS
    if is_model_proto(source):
        return import_model(source, input_shapes, filename, cli=cli, batch_bounds=batch_bounds)
    path = _onnx_path(source)
    if path is None:
        if input_shapes or given:
            names = ("--input-shape", "--batch-bounds") if cli else ("input_shapes", "batch_bounds")
            what = names[0] if input_shapes else names[1]
            raise _error(filename, f"{what} applies to ONNX models only")
        return None
    try:
        import onnx  # noqa: F401
    except ImportError:
        raise _error(
            path, "reading ONNX models needs the 'onnx' package: pip install 'lamina[onnx]'"
        ) from None
    return import_file(path, input_shapes, cli=cli, batch_bounds=batch_bounds, data=data)


def _bounds(bounds: tuple[int, int], path: str) -> tuple[int, int]:
    """`batch_bounds` checked: two integers 1 <= LO <= HI."""
    try:
        lo, hi = (int(b) for b in bounds)
    except (TypeError, ValueError):
        raise _error(path, f"batch bounds must be two integers (LO, HI), got {bounds!r}") from None
    if not 1 <= lo <= hi:
        raise _error(path, f"batch bounds must satisfy 1 <= LO <= HI, got [{lo}, {hi}]")
    return lo, hi


def _onnx_path(source: object) -> str | None:
    """The path of the ONNX model `source` names, None if it is not one."""
    path = candidate_path(source)
    if path is None or path.endswith(".onnx"):
        return path
    with open(path, "rb") as f:
        data = f.read()
    if not _loads_as_onnx(data):
        raise _error(path, "neither UTF-8 text (graph IR) nor an ONNX model")
    return path


def _loads_as_onnx(data: bytes) -> bool:
    try:
        import onnx
        from google.protobuf.message import DecodeError
    except ImportError:
        return False
    try:
        model = onnx.load_model_from_string(data)
    except (DecodeError, ValueError, RuntimeError):
        return False
    return bool(model.opset_import) and bool(model.graph.output)


def _checked_opset(model, path: str, notes: list[str]):
    import onnx

    opset = _default_opset(model)
    if opset is None:
        raise _error(path, "the model imports no default-domain ('ai.onnx') opset")
    if opset > MAX_OPSET:
        raise _error(
            path,
            f"opset {opset} is not supported (supported: {MIN_OPSET} to {MAX_OPSET}, the "
            f"installed onnx package's newest); convert the model with "
            f"onnx.version_converter.convert_version(model, {MAX_OPSET})",
        )
    if opset < MIN_OPSET:
        try:
            model = onnx.version_converter.convert_version(model, MIN_OPSET)
        except Exception as err:  # the converter raises bare RuntimeErrors and more
            raise _error(
                path,
                f"opset {opset} is older than {MIN_OPSET} and onnx.version_converter cannot "
                f"upgrade it: {err}".strip(),
            ) from None
        notes.append(f"the model was upgraded from opset {opset} to {MIN_OPSET}")
    return model


def _default_opset(model) -> int | None:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return entry.version
    return None


# ---------------------------------------------------------------------------
# The importer
# ---------------------------------------------------------------------------


class _Importer:
    def __init__(
        self,
        model,
        path: str,
        input_shapes: dict[str, Sequence[int]],
        cli: bool,
        batch_bounds: tuple[int, int] = DEFAULT_BATCH_BOUNDS,
    ):
        self.model = model
        self.path = path
        self.opset = _default_opset(model) or MIN_OPSET
        self.input_shapes = input_shapes
        self.cli = cli
        self.bound: dict[str, np.ndarray] = {}
        self.param_names: set[str] = set()
        self.g = GraphBuilder("main", batch_bounds)
        self.env: dict[str, Value | np.ndarray] = {}
        self.materialized: dict[str, Value] = {}

    def bind(self, name: str, value) -> None:
        """Graph input `name` becomes the constant `value` (in its declared element type)."""
        info = next((i for i in self.model.graph.input if i.name == name), None)
        if info is None:
            raise _error(self.path, f"bind_inputs names '{name}', which is not a graph input")
        dtype = _np_dtype(info.type.tensor_type.elem_type, self.path, f"input '{name}'")
        self.bound[name] = np.asarray(value, dtype=dtype)

    def run(self):
        from onnx import numpy_helper

        graph = self.model.graph
        for init in graph.initializer:
            self.env[init.name] = numpy_helper.to_array(init)
        for sparse in graph.sparse_initializer:
            self.env[sparse.values.name] = numpy_helper.to_array(sparse)
        self.env.update(self.bound)
        params = [info for info in graph.input if info.name not in self.env]
        self.param_names = {info.name for info in params}
        self._check_shape_names([info.name for info in params])
        for info in params:
            self.env[info.name] = self._param(info)
        for index, node in enumerate(graph.node):
            self._node(node, index)
        results = [self._output(info) for info in graph.output]
        if not results:
            raise _error(self.path, "the graph has no outputs")
        self.g.ret(*results)
        try:
            module = build_module(self.g)
        except BuilderError as err:
            raise _error(self.path, f"the imported graph does not verify: {err}") from None
        _name_inputs_and_outputs(module, [i.name for i in params], [o.name for o in graph.output])
        return module

    # -- inputs and outputs ----------------------------------------------------

    def _shape_option(self, name: str, shape: Sequence[object] | None = None) -> str:
        """How the user gives `name`'s shape: the tools' flag or the Python argument."""
        if self.cli:
            dims = ",".join(str(d) for d in shape) if shape else "D0,D1,..."
            return f"--input-shape {name}={dims}"
        dims = ", ".join(str(d) for d in shape) if shape else "D0, D1, ..."
        return f"input_shapes={{{name!r}: ({dims})}}"

    def _check_shape_names(self, names: list[str]) -> None:
        """Every given shape names a graph input (a typo would be silently ignored)."""
        import difflib

        what = "--input-shape" if self.cli else "input_shapes"
        for name in self.input_shapes:
            if name not in names:
                folded = {n.lower(): n for n in names}
                close = difflib.get_close_matches(name.lower(), list(folded), n=1, cutoff=0.5)
                hint = f"; did you mean '{folded[close[0]]}'?" if close else ""
                raise _error(
                    self.path,
                    f"{what} names '{name}', which is not an input of the model (inputs: "
                    f"{', '.join(repr(n) for n in names) or 'none'}){hint}",
                )

    def _param(self, info) -> Value:
        ttype = info.type.tensor_type
        if not info.type.HasField("tensor_type"):
            raise _error(self.path, f"input '{info.name}' is not a tensor")
        dtype = _np_dtype(ttype.elem_type, self.path, f"input '{info.name}'")
        declared: list[int | str] | None = None
        if ttype.HasField("shape"):
            declared = [
                d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in ttype.shape.dim
            ]
        if info.name in self.input_shapes:
            shape = self._given_shape(info.name, declared)
        else:
            if declared is None:
                raise _error(
                    self.path,
                    f"input '{info.name}' has no shape; give it with "
                    f"{self._shape_option(info.name)}",
                )
            dynamic = [k for k, d in enumerate(declared) if not isinstance(d, int)]
            if dynamic == [0]:  # the batch: one compile for every size (docs/dynamic-shapes.md)
                return self.g.param([None, *declared[1:]], dtype, name=info.name)
            if dynamic:
                k = next(k for k in dynamic if k != 0)
                raise _error(
                    self.path,
                    f"input '{info.name}' has a dynamic dimension {k} ('{declared[k]}'); Lamina "
                    "needs static shapes (only a leading batch dimension may be dynamic): "
                    f"give the input's shape with {self._shape_option(info.name, declared)}",
                )
            shape = declared
        return self.g.param(shape, dtype, name=info.name)

    def _given_shape(self, name: str, declared: list[int | str] | None) -> list[int]:
        """The user's shape for input `name`, checked against the model's rank and static dims."""
        what = "--input-shape" if self.cli else "input_shapes"
        given = [int(d) for d in self.input_shapes[name]]
        if any(d < 0 for d in given):
            raise _error(self.path, f"{what} gives input '{name}' a negative size: {given}")
        if declared is None:
            return given
        shown = "[" + ", ".join(str(d) for d in declared) + "]"
        if len(given) != len(declared):
            raise _error(
                self.path,
                f"input '{name}' has rank {len(declared)} (shape {shown}), but {what} gives "
                f"{len(given)} dimensions {given}",
            )
        for k, (want, got) in enumerate(zip(declared, given, strict=True)):
            if isinstance(want, int) and want != got:
                raise _error(
                    self.path,
                    f"input '{name}' has the static dimension {k} = {want} (shape {shown}); "
                    f"{what} cannot change it to {got}",
                )
        return given

    def _output(self, info) -> Value:
        if info.name not in self.env:
            raise _error(self.path, f"graph output '{info.name}' is never computed")
        value = self.value(info.name)
        ttype = info.type.tensor_type
        if ttype.elem_type:
            want = _np_dtype(ttype.elem_type, self.path, f"output '{info.name}'")
            got = np.dtype(_dtype_of(value))
            if want != got:
                raise _error(
                    self.path, f"output '{info.name}' is declared {want} but computes {got}"
                )
        if ttype.HasField("shape"):
            declared = [d.dim_value if d.HasField("dim_value") else None for d in ttype.shape.dim]
            got_shape = shape_of(value)
            if len(declared) != len(got_shape) or any(
                d is not None and d != g for d, g in zip(declared, got_shape, strict=False)
            ):
                raise _error(
                    self.path,
                    f"output '{info.name}' is declared with shape {declared} but computes "
                    f"{list(got_shape)}",
                )
        return value

    # -- values ----------------------------------------------------------------

    def value(self, name: str) -> Value:
        """The graph value of `name`, making a known constant a `graph.constant` once."""
        item = self.env[name]
        if isinstance(item, np.ndarray):
            if name not in self.materialized:
                self.materialized[name] = self.g.constant(item, name=name)
            return self.materialized[name]
        return item

    # -- nodes -----------------------------------------------------------------

    def _node(self, node, index: int) -> None:
        from onnx import helper

        ctx = Node(self, node, index)
        if node.domain not in ("", "ai.onnx"):
            raise ctx.error(f"operators of domain '{node.domain}' are not supported")
        for name in node.input:
            if name and name not in self.env:
                raise ctx.error(f"input '{name}' is not computed before this node")
        if self._foldable(node):
            outputs = self._fold(ctx)
        else:
            handler = HANDLERS.get(node.op_type)
            if handler is None:
                raise ctx.error(
                    "operator is not supported (supported: "
                    f"{', '.join(sorted(HANDLERS))}, and any operator on constants)"
                )
            # The definition in force at the model's opset was introduced at or before
            # it: only a model newer than the audited opset can use a newer definition
            # (so ONNX's schema registry, 25 ms to set up, is not asked otherwise).
            since = _since_version(node.op_type, self.opset) if self.opset > AUDITED_OPSET else 0
            if since > AUDITED_OPSET:
                raise ctx.error(
                    f"the operator's definition changed in opset {since}, after the newest "
                    f"the importer knows ({AUDITED_OPSET}); convert the model to opset "
                    f"{AUDITED_OPSET} with onnx.version_converter"
                )
            fn, known_attrs = handler
            for attr in node.attribute:
                if attr.name not in known_attrs:
                    value = helper.get_attribute_value(attr)
                    raise ctx.error(f"attribute '{attr.name}' (= {value!r}) is not supported")
            try:
                outputs = fn(ctx)
            except BuilderError as err:
                raise ctx.error(str(err) + self._batch_hint()) from None
            except (ValueError, IndexError, TypeError) as err:
                # Inconsistent attributes or shapes (a malformed model), as a diagnostic.
                raise ctx.error(f"invalid node: {err}{self._batch_hint()}") from None
        stamp_trailing(self.g.block, node_location(node, index))
        for k, name in enumerate(node.output):
            if not name:
                continue
            if k >= len(outputs) or outputs[k] is None:
                raise ctx.error(f"output #{k} ('{name}') is not supported")
            self.env[name] = outputs[k]

    def _batch_hint(self) -> str:
        """What to do when a node fails over the dynamic batch: pin it."""
        if self.g.batch_symbol is None:
            return ""
        what = "--input-shape NAME=1,..." if self.cli else "input_shapes={NAME: (1, ...)}"
        return (
            "; the batch dimension is dynamic here and this node's shape cannot be computed "
            f"for every batch size: pin it with {what}"
        )

    def _foldable(self, node) -> bool:
        if node.op_type in _NEVER_FOLD or node.op_type in ("Identity", "Dropout"):
            return False
        inputs = [self.env[n] for n in node.input if n]
        if not all(isinstance(v, np.ndarray) for v in inputs):
            return False
        return sum(v.size for v in inputs) <= FOLD_LIMIT  # type: ignore[union-attr]

    def _fold(self, ctx: Node) -> list[np.ndarray]:
        node = ctx.node
        feeds = {n: self.env[n] for n in node.input if n}
        quick = _fold_quickly(node, [self.env[n] if n else None for n in node.input])
        if quick is not None:
            return quick
        from onnx.reference import ReferenceEvaluator

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # NumPy's overflow/divide warnings
                evaluator = ReferenceEvaluator(node, opsets={"": self.opset})
                return [np.asarray(v) for v in evaluator.run(None, feeds)]
        except Exception as err:  # the reference runtime raises anything
            raise ctx.error(f"cannot evaluate the node on its constant inputs: {err}") from None


def _fold_quickly(node, inputs: list) -> list[np.ndarray] | None:
    """The shape arithmetic exported models fold most (Gather, Unsqueeze and Concat of
    small integer arrays), computed with the NumPy calls of ONNX's reference evaluator
    (onnx/reference/ops: `op_gather`, `op_unsqueeze`, `op_concat`), so the same arrays;
    None for anything else or anything unusual, which the evaluator then folds. Saves
    importing the evaluator (0.05-0.08 s of a transformer's compile) and building one
    per node."""
    op = node.op_type
    attrs = {a.name: a for a in node.attribute}
    if any(a.ref_attr_name for a in node.attribute):
        return None
    try:
        if op == "Gather" and len(inputs) == 2 and set(attrs) <= {"axis"}:
            x, indices = inputs
            if not (isinstance(x, np.ndarray) and isinstance(indices, np.ndarray)):
                return None
            if indices.dtype.kind not in "iu" or x.dtype == object:
                return None
            if "axis" in attrs and attrs["axis"].type != 2:  # AttributeProto.INT
                return None
            axis = attrs["axis"].i if "axis" in attrs else 0
            if not x.flags["C_CONTIGUOUS"]:  # as the evaluator (a 0-d array would grow)
                x = np.ascontiguousarray(x)
            if not indices.flags["C_CONTIGUOUS"]:
                indices = np.ascontiguousarray(indices)
            return [np.asarray(np.take(x, indices, axis=axis))]
        if op == "Unsqueeze" and len(inputs) == 2 and not attrs:
            data, axes = inputs
            if not (isinstance(data, np.ndarray) and isinstance(axes, np.ndarray)):
                return None
            if axes.dtype.kind not in "iu" or axes.ndim != 1 or data.dtype == object:
                return None
            return [np.asarray(np.expand_dims(data, axis=tuple(axes)))]
        if op == "Concat" and inputs and set(attrs) == {"axis"} and attrs["axis"].type == 2:
            axis = attrs["axis"].i
            if not all(
                isinstance(a, np.ndarray)
                and a.ndim > 0
                and -a.ndim <= axis < a.ndim
                and a.dtype != object
                for a in inputs
            ):
                return None
            return [np.asarray(np.concatenate(tuple(inputs), axis))]
    except (ValueError, IndexError, TypeError):  # (AxisError is both of the first two)
        return None  # the evaluator folds it, or reports the node's error
    return None


@functools.lru_cache(maxsize=512)
def _since_version(op_type: str, opset: int) -> int:
    """The opset that introduced the definition of `op_type` in force at `opset`
    (memoized: a network asks for a dozen op types a few hundred times)."""
    import onnx.defs

    try:
        return int(onnx.defs.get_schema(op_type, opset).since_version)
    except onnx.defs.SchemaError:
        return 0


def _np_dtype(elem_type: int, path: str, what: str) -> np.dtype:
    from onnx import TensorProto, helper

    supported = (TensorProto.FLOAT, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                 TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL)  # fmt: skip
    if elem_type not in supported:
        name = TensorProto.DataType.Name(elem_type) if elem_type else "undefined"
        raise _error(path, f"{what} has element type {name}, which Lamina does not support")
    return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))


def _dtype_of(value: Value | np.ndarray) -> np.dtype:
    if isinstance(value, np.ndarray):
        return value.dtype
    from lamina.frontends.builder import dtype_of

    return dtype_of(value)


# ---------------------------------------------------------------------------
# Per-node context
# ---------------------------------------------------------------------------


def node_location(node, index: int) -> NameLoc:
    """The location of the graph ops a node becomes: MLIR's `loc("name")` of the node.

    Passes carry it down (core/locations.py): a fused kernel's call has its nodes'
    names, so a profiling build times each call site under the ONNX nodes it runs
    (docs/onnx.md, "Which node is slow").
    """
    return NameLoc(StringAttr(node.name or f"{node.op_type}#{index}"), NoneAttr())


class Node:
    """One ONNX node being translated: its inputs, attributes and diagnostics."""

    def __init__(self, importer: _Importer, node, index: int):
        from onnx import helper

        self.importer = importer
        self.node = node
        self.g = importer.g
        self.opset = importer.opset
        self.attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        self.label = node.name or f"#{index}"

    def error(self, message: str) -> OnnxImportError:
        return _error(
            self.importer.path,
            f"node '{self.label}' ({self.node.op_type}, opset {self.opset}): {message}",
        )

    def has(self, i: int) -> bool:
        return i < len(self.node.input) and bool(self.node.input[i])

    def input(self, i: int) -> Value:
        if not self.has(i):
            raise self.error(f"input #{i} is required")
        return self.importer.value(self.node.input[i])

    def inputs(self) -> list[Value]:
        return [self.input(i) for i in range(len(self.node.input)) if self.has(i)]

    def const(self, i: int, what: str) -> np.ndarray:
        """Input `i` as a known constant (a user error if it is computed at run time)."""
        if not self.has(i):
            raise self.error(f"input #{i} ({what}) is required")
        name = self.node.input[i]
        item = self.importer.env[name]
        if not isinstance(item, np.ndarray):
            if name in self.importer.param_names:
                error = NeedsConstantInput(self.error(
                    f"input #{i} ({what}) is the graph input '{name}', which must be a "
                    "constant: make it an initializer, or bind its value (Python: "
                    f"bind_inputs={{{name!r}: ...}})"
                ).diagnostics)  # fmt: skip
                error.input_name = name
                raise error
            raise self.error(
                f"input #{i} ({what}) must be a constant (an initializer or computed from "
                "constants and static shapes), but it is computed at run time"
            )
        return item

    def opt_const(self, i: int, what: str) -> np.ndarray | None:
        return self.const(i, what) if self.has(i) else None

    def is_const(self, i: int) -> bool:
        return self.has(i) and isinstance(self.importer.env[self.node.input[i]], np.ndarray)

    def attr(self, name: str, default=None):
        value = self.attrs.get(name, default)
        return value.decode() if isinstance(value, bytes) else value

    def only_outputs(self, count: int) -> None:
        """Outputs beyond the first `count` (e.g. BatchNorm's running stats) must be unused."""
        extra = [n for n in self.node.output[count:] if n]
        if extra:
            raise self.error(f"output '{extra[0]}' is not supported (only the first {count})")

    def scalar(self, value: float, like: Value) -> Value:
        return self.g.constant(np.asarray(value, dtype=_dtype_of(like)))


Handler = Callable[[Node], list]
HANDLERS: dict[str, tuple[Handler, frozenset[str]]] = {}


def handles(*op_types: str, attrs: Sequence[str] = ()):
    """Register a handler for `op_types`, accepting the attributes `attrs`."""

    def register(fn: Handler) -> Handler:
        for op_type in op_types:
            HANDLERS[op_type] = (fn, frozenset(attrs))
        return fn

    return register


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

_BINARY = {"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div"}
_VARIADIC = {"Sum": "add", "Max": "maximum", "Min": "minimum", "Mean": "add"}
_UNARY = {"Neg": "neg", "Exp": "exp", "Log": "log", "Sqrt": "sqrt", "Tanh": "tanh",
          "Sigmoid": "sigmoid", "Erf": "erf", "Relu": "relu"}  # fmt: skip


@handles(*_BINARY)
def _binary(n: Node) -> list:
    return [getattr(n.g, _BINARY[n.node.op_type])(n.input(0), n.input(1))]


@handles(*_VARIADIC)
def _variadic(n: Node) -> list:
    values = n.inputs()
    if not values:
        raise n.error("needs at least one input")
    method = getattr(n.g, _VARIADIC[n.node.op_type])
    acc = values[0]
    for v in values[1:]:
        acc = method(acc, v)
    if n.node.op_type == "Mean" and len(values) > 1:
        acc = n.g.div(acc, n.scalar(len(values), acc))
    return [acc]


@handles(*_UNARY)
def _unary(n: Node) -> list:
    return [getattr(n.g, _UNARY[n.node.op_type])(n.input(0))]


@handles("Reciprocal")
def _reciprocal(n: Node) -> list:
    x = n.input(0)
    return [n.g.div(n.scalar(1, x), x)]


@handles("Abs")
def _abs(n: Node) -> list:
    x = n.input(0)
    return [n.g.maximum(x, n.g.neg(x))]


@handles("Gelu", attrs=["approximate"])
def _gelu(n: Node) -> list:
    return [n.g.gelu(n.input(0), n.attr("approximate", "none"))]


@handles("Identity")
def _identity(n: Node) -> list:
    return [n.importer.env[n.node.input[0]]]


@handles("Dropout", attrs=["seed"])
def _dropout(n: Node) -> list:
    """Inference (or training with ratio 0): the identity, and an all-true mask."""
    training = n.opt_const(2, "training_mode")
    if training is not None and bool(training):
        ratio = n.opt_const(1, "ratio")
        if ratio is None or float(ratio) != 0.0:
            raise n.error("training_mode = true with a ratio above 0 (random) is not supported")
    data = n.importer.env[n.node.input[0]]
    mask = np.ones(data.shape if isinstance(data, np.ndarray) else shape_of(data), dtype=bool)
    return [data, mask]


_POW_EXPONENTS = (0.5, -0.5, 1.0, 2.0, 3.0, -1.0)


@handles("Pow")
def _pow(n: Node) -> list:
    """`graph.pow`, with the exponents LayerNorm patterns use (x², √x, 1/x, ...)
    as exact arithmetic. The result has the base's type (ONNX): a float base
    takes the exponent converted to its type; an integer base is computed in
    f64 and truncated (exact while the result fits 53 bits)."""
    x = n.input(0)
    if n.is_const(1) and n.const(1, "exponent").size == 1:
        e = float(n.const(1, "exponent").reshape(()))
        if e in _POW_EXPONENTS and _dtype_of(x).kind == "f":
            return [_pow_special(n, x, e)]
    y = n.input(1)
    dtype = _dtype_of(x)
    if dtype.kind == "f":
        return [n.g.pow(x, y if _dtype_of(y) == dtype else n.g.cast(y, dtype))]
    wide = n.g.pow(n.g.cast(x, np.float64), n.g.cast(y, np.float64))
    return [n.g.cast(wide, dtype)]


def _pow_special(n: Node, x: Value, e: float) -> Value:
    g = n.g
    table = {
        0.5: lambda: g.sqrt(x),
        -0.5: lambda: g.rsqrt(x),
        1.0: lambda: x,
        2.0: lambda: g.mul(x, x),
        3.0: lambda: g.mul(g.mul(x, x), x),
        -1.0: lambda: g.div(n.scalar(1, x), x),
    }
    return table[e]()


@handles("Clip")
def _clip(n: Node) -> list:
    """`min(max(x, lo), hi)`: bounds may be constants or run-time scalars."""
    x = n.input(0)
    if n.has(1):
        x = n.g.maximum(x, n.input(1))
    if n.has(2):
        x = n.g.minimum(x, n.input(2))
    return [x]


@handles("Where")
def _where(n: Node) -> list:
    return [n.g.where(n.input(0), n.input(1), n.input(2))]


@handles("Cast", attrs=["to", "saturate", "round_mode"])
def _cast(n: Node) -> list:
    try:
        dtype = _np_dtype(n.attr("to"), n.importer.path, "the target type")
    except OnnxImportError as err:
        raise n.error(err.diagnostics[0].message) from None
    if n.attr("round_mode", "up") != "up":
        raise n.error(
            f"round_mode '{n.attr('round_mode')}' is not supported (only float8e8m0 uses it)"
        )
    source = n.importer.env[n.node.input[0]]
    if isinstance(source, np.ndarray):
        return [source.astype(dtype)]
    return [n.g.cast(source, dtype)]


@handles("Constant", attrs=["value", "value_float", "value_floats", "value_int", "value_ints"])
def _constant(n: Node) -> list:
    from onnx import numpy_helper

    if "value" in n.attrs:
        return [numpy_helper.to_array(n.attrs["value"])]
    for name, dtype in (("value_float", np.float32), ("value_floats", np.float32),
                        ("value_int", np.int64), ("value_ints", np.int64)):  # fmt: skip
        if name in n.attrs:
            return [np.asarray(n.attrs[name], dtype=dtype)]
    raise n.error("has no value")


@handles("ConstantOfShape", attrs=["value"])
def _constant_of_shape(n: Node) -> list:
    from onnx import numpy_helper

    shape = [int(d) for d in n.const(0, "shape")]
    fill = (
        numpy_helper.to_array(n.attrs["value"]).reshape(-1)[0]
        if "value" in n.attrs
        else np.float32(0)
    )
    return [np.full(shape, fill, dtype=np.asarray(fill).dtype)]


@handles("Shape", attrs=["start", "end"])
def _shape(n: Node) -> list:
    """Shapes are static: `Shape` of any value is a constant."""
    item = n.importer.env[n.node.input[0]]
    shape = item.shape if isinstance(item, np.ndarray) else shape_of(item)
    start, end = n.attr("start", 0), n.attr("end", None)
    return [np.asarray(shape[slice(start, end)], dtype=np.int64)]


@handles("Size")
def _size(n: Node) -> list:
    item = n.importer.env[n.node.input[0]]
    shape = item.shape if isinstance(item, np.ndarray) else shape_of(item)
    return [np.asarray(math.prod(shape), dtype=np.int64)]


# ---------------------------------------------------------------------------
# Contractions, convolution, normalization
# ---------------------------------------------------------------------------


@handles("MatMul")
def _matmul(n: Node) -> list:
    return [n.g.matmul(n.input(0), n.input(1))]


@handles("Gemm", attrs=["alpha", "beta", "transA", "transB"])
def _gemm(n: Node) -> list:
    g = n.g
    a, b = n.input(0), n.input(1)
    if n.attr("transA", 0):
        a = g.transpose(a, (1, 0))
    if n.attr("transB", 0):
        b = g.transpose(b, (1, 0))
    y = g.matmul(a, b)
    alpha, beta = float(n.attr("alpha", 1.0)), float(n.attr("beta", 1.0))
    if alpha != 1.0:
        y = g.mul(y, n.scalar(alpha, y))
    if n.has(2) and beta != 0.0:
        if n.is_const(2):
            c = g.constant((n.const(2, "C") * beta).astype(_dtype_of(y)))
        else:
            c = n.input(2)
            c = g.mul(c, n.scalar(beta, c)) if beta != 1.0 else c
        y = g.add(y, c)
    return [y]


def _spatial(n: Node, x: Value, kernel: Sequence[int], what: str) -> tuple:
    """(strides, dilations, (top, left, bottom, right)) of a 2-D window op."""
    rank = len(shape_of(x))
    if rank != 4 or len(kernel) != 2:
        raise n.error(f"only 2-D {what} (4-D NCHW input) is supported, got a rank-{rank} input")
    strides = tuple(n.attr("strides", [1, 1]))
    dilations = tuple(n.attr("dilations", [1, 1]))
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad == "NOTSET":
        p = list(n.attr("pads", [0, 0, 0, 0]))
        return strides, dilations, (p[0], p[1], p[2], p[3])
    if auto_pad == "VALID":
        return strides, dilations, (0, 0, 0, 0)
    if auto_pad not in ("SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad '{auto_pad}' is not supported")
    begin, end = [], []
    for size, k, s, d in zip(shape_of(x)[2:], kernel, strides, dilations, strict=True):
        total = max((math.ceil(size / s) - 1) * s + (k - 1) * d + 1 - size, 0)
        small, big = total // 2, total - total // 2
        begin.append(small if auto_pad == "SAME_UPPER" else big)
        end.append(big if auto_pad == "SAME_UPPER" else small)
    return strides, dilations, (begin[0], begin[1], end[0], end[1])


def _as_2d(n: Node, x: Value) -> Value:
    """A 1-D (N, C, L) tensor viewed as 2-D (N, C, 1, L); others unchanged."""
    shape = shape_of(x)
    return n.g.reshape(x, (*shape[:2], 1, shape[2])) if len(shape) == 3 else x


def _attrs_2d(n: Node, names: Sequence[str], one_d: bool) -> None:
    """Give the 1-D spatial attributes of `n` a leading unit H entry."""
    if not one_d:
        return
    for name in names:
        if name in n.attrs:
            v = list(n.attrs[name])
            n.attrs[name] = [0, v[0], 0, v[1]] if name == "pads" else [1, *v]


def _from_2d(n: Node, y: Value, one_d: bool) -> Value:
    shape = shape_of(y)
    return n.g.reshape(y, (*shape[:2], shape[3])) if one_d else y


@handles("Conv", attrs=["auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"])
def _conv(n: Node) -> list:
    """2-D convolution; a 1-D one runs as 2-D with a unit height, a 3-D one as
    a sum of 2-D ones (`_conv3d`)."""
    if len(shape_of(n.input(0))) == 5:
        return [_conv3d(n)]
    one_d = len(shape_of(n.input(0))) == 3
    x, w = _as_2d(n, n.input(0)), _as_2d(n, n.input(1))
    _attrs_2d(n, ("dilations", "kernel_shape", "pads", "strides"), one_d)
    kernel = n.attr("kernel_shape", list(shape_of(w)[2:]))
    strides, dilations, pads = _spatial(n, x, kernel, "convolution")
    y = n.g.conv2d(x, w, strides, pads, dilations, n.attr("group", 1))
    if n.has(2):
        y = n.g.add(y, n.g.reshape(n.input(2), (-1, 1, 1)))
    return [_from_2d(n, y, one_d)]


@handles("BatchNormalization", attrs=["epsilon", "momentum", "training_mode"])
def _batch_norm(n: Node) -> list:
    """Inference: `x * s + t` with `s = scale / sqrt(var + eps)`, `t = B - mean * s`
    (computed at import when the statistics are constants)."""
    if n.attr("training_mode", 0):
        return _batch_norm_training(n)
    n.only_outputs(1)
    x = n.input(0)
    rank = len(shape_of(x))
    if rank < 2:
        raise n.error(f"expected an input of rank >= 2, got rank {rank}")
    channel_shape = (-1,) + (1,) * (rank - 2)
    eps = float(n.attr("epsilon", 1e-5))
    dtype = _dtype_of(x)
    if all(n.is_const(i) for i in range(1, 5)):
        scale, bias, mean, var = (n.const(i, "statistics").astype(np.float64) for i in range(1, 5))
        s = scale / np.sqrt(var + eps)
        t = bias - mean * s
        s_val = n.g.constant(s.astype(dtype).reshape(channel_shape))
        t_val = n.g.constant(t.astype(dtype).reshape(channel_shape))
        return [n.g.add(n.g.mul(x, s_val), t_val)]
    scale, bias, mean, var = (n.g.reshape(n.input(i), channel_shape) for i in range(1, 5))
    s = n.g.div(scale, n.g.sqrt(n.g.add(var, n.scalar(eps, var))))
    return [n.g.add(n.g.mul(n.g.sub(x, mean), s), bias)]


def _batch_norm_training(n: Node) -> list:
    """Training mode: normalize with the batch's mean and (biased) variance over
    all but the channel axis; the running statistics are
    `input · momentum + batch · (1 − momentum)`."""
    g, x = n.g, _float_input(n)
    shape = shape_of(x)
    axes = (0, *range(2, len(shape)))
    channel = (-1,) + (1,) * (len(shape) - 2)
    eps, momentum = float(n.attr("epsilon", 1e-5)), float(n.attr("momentum", 0.9))
    mean = g.reduce_mean(x, axes, keepdims=True)
    centered = g.sub(x, mean)
    var = g.reduce_mean(g.mul(centered, centered), axes, keepdims=True)
    normalized = g.mul(centered, g.rsqrt(g.add(var, n.scalar(eps, var))))
    scale, bias = (g.reshape(n.input(i), channel) for i in (1, 2))
    outputs = [g.add(g.mul(normalized, scale), bias)]
    for stat, batch in ((n.input(3), mean), (n.input(4), var)):
        batch = g.reshape(batch, (shape[1],))
        outputs.append(g.add(g.mul(stat, n.scalar(momentum, stat)),
                             g.mul(batch, n.scalar(1 - momentum, batch))))  # fmt: skip
    return outputs


@handles("LayerNormalization", attrs=["axis", "epsilon", "stash_type"])
def _layer_norm(n: Node) -> list:
    """`graph.layer_norm`; the optional Mean and InvStdDev outputs are computed
    separately (reductions over the normalized axes, kept as size 1)."""
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", -1)
    axis = axis + len(shape) if axis < 0 else axis
    norm_shape = shape[axis:]
    eps = float(n.attr("epsilon", 1e-5))
    scale = n.g.broadcast_to(n.input(1), norm_shape)
    if n.has(2):
        bias = n.g.broadcast_to(n.input(2), norm_shape)
    else:
        bias = n.g.constant(np.zeros(norm_shape, dtype=_dtype_of(x)))
    outputs = [n.g.layer_norm(x, scale, bias, axis, eps)]
    if any(n.node.output[1:]):
        axes = tuple(range(axis, len(shape)))
        mean = n.g.reduce_mean(x, axes, keepdims=True)
        centered = n.g.sub(x, mean)
        var = n.g.reduce_mean(n.g.mul(centered, centered), axes, keepdims=True)
        outputs += [mean, n.g.rsqrt(n.g.add(var, n.scalar(eps, var)))]
    return outputs


@handles("Softmax", attrs=["axis"])
def _softmax(n: Node) -> list:
    return [n.g.softmax(n.input(0), n.attr("axis", -1))]


@handles("LRN", attrs=["alpha", "beta", "bias", "size"])
def _lrn(n: Node) -> list:
    """`x / (bias + alpha/size * sum_{window} x²)^beta`; the channel-window sum is a
    convolution of x² (viewed N×1×C×HW) with a column of ones."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    if len(shape) != 4:
        raise n.error(f"only 4-D NCHW input is supported, got rank {len(shape)}")
    size = int(n.attr("size"))
    alpha, beta, bias = (float(n.attr(k, d)) for k, d in (("alpha", 1e-4), ("beta", 0.75),
                                                           ("bias", 1.0)))  # fmt: skip
    nb, c, h, w = shape
    squares = g.reshape(g.mul(x, x), (nb, 1, c, h * w))
    ones = g.constant(np.ones((1, 1, size, 1), dtype=_dtype_of(x)))
    pad_lo, pad_hi = (size - 1) // 2, size - 1 - (size - 1) // 2
    window = g.reshape(g.conv2d(squares, ones, padding=(pad_lo, 0, pad_hi, 0)), shape)
    base = g.add(g.mul(window, n.scalar(alpha / size, x)), n.scalar(bias, x))
    return [g.div(x, g.exp(g.mul(g.log(base), n.scalar(beta, x))))]


# ---------------------------------------------------------------------------
# Pooling
# ---------------------------------------------------------------------------


def _pool_geometry(n: Node, x: Value) -> tuple:
    """kernel, strides, pads (with ceil_mode's extra bottom/right padding), base pads."""
    kernel = tuple(n.attr("kernel_shape"))
    if any(d != 1 for d in n.attr("dilations", [1, 1])):
        raise n.error("dilated pooling is not supported")
    strides, _, pads = _spatial(n, x, kernel, "pooling")
    base = pads
    if n.attr("ceil_mode", 0):
        extra = []
        for size, k, s, lo, hi in zip(shape_of(x)[2:], kernel, strides, pads[:2], pads[2:],
                                      strict=True):  # fmt: skip
            span = size + lo + hi - k
            out = -(-span // s) + 1
            if (out - 1) * s >= size + lo:  # the last window would start in the padding
                out -= 1
            extra.append(max((out - 1) * s + k - (size + lo + hi), 0))
        pads = (pads[0], pads[1], pads[2] + extra[0], pads[3] + extra[1])
    return kernel, strides, pads, base


@handles("MaxPool", attrs=["auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads",
                           "storage_order", "strides"])  # fmt: skip
def _max_pool(n: Node) -> list:
    """`graph.max_pool2d`; 3-D and dilated pooling, and the Indices output, by
    strided slices (`_window_pool`)."""
    if len(n.node.output) > 1 and n.node.output[1]:
        return list(_window_pool(n, n.input(0), "max", indices=True))
    if _needs_window_slices(n):
        return [_window_pool(n, n.input(0), "max")]
    one_d = len(shape_of(n.input(0))) == 3
    x = _as_2d(n, n.input(0))
    _attrs_2d(n, _POOL_ATTRS, one_d)
    kernel, strides, pads, _ = _pool_geometry(n, x)
    return [_from_2d(n, n.g.max_pool2d(x, kernel, strides, pads), one_d)]


_POOL_ATTRS = ("dilations", "kernel_shape", "pads", "strides")


@handles("AveragePool", attrs=["auto_pad", "ceil_mode", "count_include_pad", "dilations",
                               "kernel_shape", "pads", "strides"])  # fmt: skip
def _avg_pool(n: Node) -> list:
    """`graph.avg_pool2d` divides by the in-image elements; `count_include_pad`
    rescales by (in-image count / in-padded-area count), a constant."""
    if _needs_window_slices(n):
        return [_window_pool(n, n.input(0), "avg")]
    one_d = len(shape_of(n.input(0))) == 3
    x = _as_2d(n, n.input(0))
    _attrs_2d(n, _POOL_ATTRS, one_d)
    kernel, strides, pads, base = _pool_geometry(n, x)
    y = n.g.avg_pool2d(x, kernel, strides, pads)
    if n.attr("count_include_pad", 0) and any(base):
        ratio = _window_count_ratio(shape_of(x)[2:], shape_of(y)[2:], kernel, strides, pads, base)
        y = n.g.mul(y, n.g.constant(ratio.astype(_dtype_of(x))))
    return [_from_2d(n, y, one_d)]


def _window_count_ratio(size, out, kernel, strides, pads, base) -> np.ndarray:
    """Per output position: elements inside the image / inside the padded image."""
    counts = []
    for axis in range(2):
        start = np.arange(out[axis]) * strides[axis] - pads[axis]
        stop = start + kernel[axis]
        inside = np.minimum(stop, size[axis]) - np.maximum(start, 0)
        padded = np.minimum(stop, size[axis] + base[axis + 2]) - np.maximum(start, -base[axis])
        counts.append((np.maximum(inside, 0), np.maximum(padded, 1)))
    (ih, ph), (iw, pw) = counts
    return (np.outer(ih, iw) / np.outer(ph, pw)).reshape(1, 1, out[0], out[1])


@handles("GlobalAveragePool")
def _global_avg_pool(n: Node) -> list:
    return [n.g.global_avg_pool2d(n.input(0))]


@handles("GlobalMaxPool")
def _global_max_pool(n: Node) -> list:
    x = n.input(0)
    return [n.g.reduce_max(x, tuple(range(2, len(shape_of(x)))), keepdims=True)]


# ---------------------------------------------------------------------------
# Reductions
# ---------------------------------------------------------------------------

_REDUCE = {"ReduceMean": "reduce_mean", "ReduceSum": "reduce_sum", "ReduceMax": "reduce_max"}


@handles(*_REDUCE, attrs=["axes", "keepdims", "noop_with_empty_axes"])
def _reduce(n: Node) -> list:
    args = _reduce_args(n)
    if args is None:
        return [n.input(0)]
    x, axes, keepdims = args
    if n.node.op_type == "ReduceMax" and _reduces_empty(x, axes):
        return [_empty_reduction(n, x, axes, keepdims, -np.inf)]
    method = getattr(n.g, _REDUCE[n.node.op_type])
    return [method(x, axes, keepdims=keepdims)]


def _reduces_empty(x: Value, axes) -> bool:
    shape = shape_of(x)
    reduced = range(len(shape)) if axes is None else axes
    return any(shape[a] == 0 for a in reduced)


def _empty_reduction(n: Node, x: Value, axes, keepdims: bool, identity: float) -> np.ndarray:
    """A max/min (or log-sum-exp) over an empty axis: ONNX's identity, −∞ or +∞
    (the lowest/highest value for integers, false/true for bool), everywhere."""
    shape = shape_of(x)
    rank = len(shape)
    reduced = set(range(rank)) if axes is None else {a + rank if a < 0 else a for a in axes}
    out = [1 if k in reduced else d for k, d in enumerate(shape) if keepdims or k not in reduced]
    dtype = _dtype_of(x)
    if dtype == np.bool_:
        value = identity > 0
    elif dtype.kind in "iu":
        value = np.iinfo(dtype).max if identity > 0 else np.iinfo(dtype).min
    else:
        value = identity
    return np.full(out, value, dtype=dtype)


# ---------------------------------------------------------------------------
# Shapes and data movement
# ---------------------------------------------------------------------------


@handles("Reshape", attrs=["allowzero"])
def _reshape(n: Node) -> list:
    x = n.input(0)
    target = [int(d) for d in n.const(1, "shape")]
    if not n.attr("allowzero", 0):
        target = [shape_of(x)[k] if d == 0 else d for k, d in enumerate(target)]
    return [n.g.reshape(x, target)]


@handles("Flatten", attrs=["axis"])
def _flatten(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", 1)
    axis = axis + len(shape) if axis < 0 else axis
    return [n.g.reshape(x, (math.prod(shape[:axis]), math.prod(shape[axis:])))]


def _axes(n: Node, rank: int) -> list[int] | None:
    """The `axes` input (opset 13+), normalized for `rank`; None when absent."""
    if not n.has(1):
        return None
    axes = [int(a) + rank if a < 0 else int(a) for a in n.const(1, "axes")]
    if any(not 0 <= a < rank for a in axes):
        raise n.error(f"axes {list(n.const(1, 'axes'))} out of range for rank {rank}")
    return axes


@handles("Squeeze")
def _squeeze(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axes = _axes(n, len(shape))
    if axes is None:
        axes = [k for k, d in enumerate(shape) if d == 1]
    if any(shape[a] != 1 for a in axes):
        raise n.error(f"cannot squeeze axes {axes} of shape {list(shape)}")
    return [n.g.reshape(x, [d for k, d in enumerate(shape) if k not in axes])]


@handles("Unsqueeze")
def _unsqueeze(n: Node) -> list:
    x = n.input(0)
    shape = list(shape_of(x))
    axes = _axes(n, len(shape) + len(n.const(1, "axes")))
    for a in sorted(axes or []):
        shape.insert(a, 1)
    return [n.g.reshape(x, shape)]


@handles("Transpose", attrs=["perm"])
def _transpose(n: Node) -> list:
    perm = n.attr("perm")
    return [n.g.transpose(n.input(0), tuple(perm) if perm is not None else None)]


@handles("Concat", attrs=["axis"])
def _concat(n: Node) -> list:
    return [n.g.concat(n.inputs(), n.attr("axis"))]


@handles("Expand")
def _expand(n: Node) -> list:
    x = n.input(0)
    target = [int(d) for d in n.const(1, "shape")]
    return [n.g.broadcast_to(x, np.broadcast_shapes(shape_of(x), tuple(target)))]


@handles("Slice")
def _slice(n: Node) -> list:
    starts, ends = n.const(1, "starts"), n.const(2, "ends")
    axes, steps = n.opt_const(3, "axes"), n.opt_const(4, "steps")
    big = np.iinfo(np.int64)
    clip = [int(np.clip(v, big.min + 1, big.max)) for v in ends]
    return [n.g.slice(n.input(0), [int(s) for s in starts], clip, axes, steps)]


@handles("Gather", attrs=["axis"])
def _gather(n: Node) -> list:
    return [n.g.gather(n.input(0), n.input(1), n.attr("axis", 0))]


@handles("Split", attrs=["axis", "num_outputs"])
def _split(n: Node) -> list:
    x = n.input(0)
    shape = shape_of(x)
    axis = n.attr("axis", 0)
    axis = axis + len(shape) if axis < 0 else axis
    count = len(n.node.output)
    if n.has(1):
        sizes = [int(s) for s in n.const(1, "split")]
    else:
        chunk = -(-shape[axis] // count)
        sizes = [min(chunk, shape[axis] - k * chunk) for k in range(count)]
    if sum(sizes) != shape[axis] or len(sizes) != count:
        raise n.error(f"split sizes {sizes} do not cover axis {axis} of extent {shape[axis]}")
    outputs, offset = [], 0
    for size in sizes:
        outputs.append(n.g.slice(x, [offset], [offset + size], [axis]))
        offset += size
    return outputs


@handles("Pad", attrs=["mode"])
def _pad(n: Node) -> list:
    """Pad (opset 13+: pads, constant_value and, from 18, axes as inputs) per axis:
    a constant border is concatenated; reflect, edge and wrap read the input at
    precomputed source indices (one gather per padded axis); a negative pad
    crops (a slice)."""
    x = n.input(0)
    shape = shape_of(x)
    rank = len(shape)
    mode = n.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        raise n.error(f"mode '{mode}' is not supported (constant, reflect, edge, wrap)")
    pads = [int(p) for p in n.const(1, "pads")]
    axes = list(range(rank))
    if n.has(3):
        axes = [int(a) + rank if int(a) < 0 else int(a) for a in n.const(3, "axes")]
    if len(pads) != 2 * len(axes) or any(not 0 <= a < rank for a in axes):
        raise n.error(f"pads {pads} do not match axes {axes} of a rank-{rank} input")
    value = 0.0
    if n.has(2):
        value = n.const(2, "constant_value").reshape(-1)
        if value.size != 1:
            raise n.error("constant_value must be a scalar")
        value = value.item()
    for k, axis in enumerate(axes):
        before, after = pads[k], pads[k + len(axes)]
        if max(-before, 0) + max(-after, 0) > shape[axis]:
            raise n.error(f"pads ({before}, {after}) crop more than axis {axis}'s {shape[axis]}")
        if before < 0 or after < 0:
            x = n.g.slice(x, [max(-before, 0)], [shape[axis] - max(-after, 0)], [axis])
            before, after = max(before, 0), max(after, 0)
        if before or after:
            x = _pad_one_axis(n, x, axis, before, after, mode, value)
    return [x]


def _pad_one_axis(n: Node, x: Value, axis: int, before: int, after: int, mode: str, value):
    if mode == "constant":
        return _pad_axis(n, x, axis, before, after, value)
    size = shape_of(x)[axis]
    if size == 0 or (mode == "reflect" and max(before, after) > size - 1):
        raise n.error(f"cannot {mode}-pad an axis of extent {size} by ({before}, {after})")
    at = np.arange(-before, size + after)
    if mode == "edge":
        source = np.clip(at, 0, size - 1)
    elif mode == "wrap":
        source = at % size
    else:  # reflect: ... 2 1 | 0 1 2 ... n-1 | n-2 n-3 ...
        period = 2 * (size - 1)
        folded = np.abs(at) % period if period else np.zeros_like(at)
        source = np.where(folded < size, folded, period - folded)
    return n.g.gather(x, source.astype(np.int64), axis)


@handles("LogSoftmax", attrs=["axis"])
def _log_softmax(n: Node) -> list:
    """`x - max - log(sum(exp(x - max)))` along `axis`: exact for probabilities far
    below f32's smallest normal, where `log(softmax(x))` would give -inf."""
    g, x = n.g, n.input(0)
    axis = int(n.attr("axis", -1))
    shifted = g.sub(x, g.reduce_max(x, [axis], keepdims=True))
    return [g.sub(shifted, g.log(g.reduce_sum(g.exp(shifted), [axis], keepdims=True)))]


# ---------------------------------------------------------------------------
# Comparisons, logic, predicates (i1 results)
# ---------------------------------------------------------------------------

_COMPARE = {"Equal": "eq", "Less": "lt", "Greater": "gt", "LessOrEqual": "le",
            "GreaterOrEqual": "ge"}  # fmt: skip


@handles(*_COMPARE)
def _compare(n: Node) -> list:
    return [n.g.compare(n.input(0), n.input(1), _COMPARE[n.node.op_type])]


def _bool_input(n: Node, i: int) -> Value:
    x = n.input(i)
    if _dtype_of(x) != np.bool_:
        raise n.error(f"input #{i} must be a bool tensor, got {_dtype_of(x)}")
    return x


@handles("And", "Or", "Xor")
def _logical(n: Node) -> list:
    """On i1, `minimum` is and, `maximum` is or, and `!=` is xor."""
    a, b = _bool_input(n, 0), _bool_input(n, 1)
    op = n.node.op_type
    if op == "And":
        return [n.g.minimum(a, b)]
    if op == "Or":
        return [n.g.maximum(a, b)]
    return [n.g.compare(a, b, "ne")]


@handles("Not")
def _not(n: Node) -> list:
    x = _bool_input(n, 0)
    return [n.g.compare(x, n.g.constant(np.asarray(False)), "eq")]


@handles("IsNaN")
def _isnan(n: Node) -> list:
    """NaN is the one value unequal to itself."""
    x = n.input(0)
    return [n.g.compare(x, x, "ne")]


@handles("IsInf", attrs=["detect_negative", "detect_positive"])
def _isinf(n: Node) -> list:
    x = n.input(0)
    checks = []
    if n.attr("detect_positive", 1):
        checks.append(n.g.compare(x, n.scalar(np.inf, x), "eq"))
    if n.attr("detect_negative", 1):
        checks.append(n.g.compare(x, n.scalar(-np.inf, x), "eq"))
    if not checks:
        return [n.g.constant(np.zeros(shape_of(x), bool))]
    return [checks[0] if len(checks) == 1 else n.g.maximum(*checks)]


# ---------------------------------------------------------------------------
# Activations built from elementwise ops
# ---------------------------------------------------------------------------


def _float_input(n: Node, i: int = 0) -> Value:
    x = n.input(i)
    if _dtype_of(x).kind != "f":
        raise n.error(f"input #{i} must be a floating-point tensor, got {_dtype_of(x)}")
    return x


def _hard_sigmoid_of(n: Node, x: Value, alpha: float, beta: float) -> Value:
    """`max(0, min(1, alpha·x + beta))`."""
    y = n.g.add(n.g.mul(x, n.scalar(alpha, x)), n.scalar(beta, x))
    return n.g.maximum(n.g.minimum(y, n.scalar(1, x)), n.scalar(0, x))


@handles("HardSigmoid", attrs=["alpha", "beta"])
def _hard_sigmoid(n: Node) -> list:
    x = _float_input(n)
    return [_hard_sigmoid_of(n, x, float(n.attr("alpha", 0.2)), float(n.attr("beta", 0.5)))]


@handles("HardSwish")
def _hard_swish(n: Node) -> list:
    """`x · HardSigmoid(x)` with alpha = 1/6, beta = 1/2."""
    x = _float_input(n)
    return [n.g.mul(x, _hard_sigmoid_of(n, x, 1 / 6, 0.5))]


def _softplus_of(n: Node, x: Value) -> Value:
    """Overflow-free `log(1 + exp(x))` = `max(x, 0) + log(1 + exp(-|x|))`."""
    g = n.g
    minus_abs = g.minimum(x, g.neg(x))
    return g.add(g.relu(x), g.log(g.add(n.scalar(1, x), g.exp(minus_abs))))


@handles("Softplus")
def _softplus(n: Node) -> list:
    return [_softplus_of(n, _float_input(n))]


@handles("Mish")
def _mish(n: Node) -> list:
    """`x · tanh(softplus(x))`."""
    x = _float_input(n)
    return [n.g.mul(x, n.g.tanh(_softplus_of(n, x)))]


@handles("Softsign")
def _softsign(n: Node) -> list:
    x = _float_input(n)
    return [n.g.div(x, n.g.add(n.scalar(1, x), n.g.maximum(x, n.g.neg(x))))]


@handles("LeakyRelu", attrs=["alpha"])
def _leaky_relu(n: Node) -> list:
    x = _float_input(n)
    negative = n.g.compare(x, n.scalar(0, x), "lt")
    return [n.g.where(negative, n.g.mul(x, n.scalar(float(n.attr("alpha", 0.01)), x)), x)]


@handles("PRelu")
def _prelu(n: Node) -> list:
    """`x < 0 ? slope·x : x`, the slope broadcasting (unidirectionally) to x."""
    x, slope = n.input(0), n.input(1)
    xs, ss = shape_of(x), shape_of(slope)
    if len(ss) == 1 and len(xs) > 2 and ss[0] == xs[1] != xs[-1] and ss[0] != 1:
        # A per-channel slope as older exporters wrote it (not NumPy-broadcastable).
        slope = n.g.reshape(slope, (ss[0],) + (1,) * (len(xs) - 2))
    negative = n.g.compare(x, n.scalar(0, x), "lt")
    return [n.g.where(negative, n.g.mul(x, slope), x)]


def _elu_of(n: Node, x: Value, alpha: float) -> Value:
    negative = n.g.compare(x, n.scalar(0, x), "lt")
    below = n.g.mul(n.g.sub(n.g.exp(n.g.minimum(x, n.scalar(0, x))), n.scalar(1, x)),
                    n.scalar(alpha, x))  # fmt: skip
    return n.g.where(negative, below, x)


@handles("Elu", attrs=["alpha"])
def _elu(n: Node) -> list:
    return [_elu_of(n, _float_input(n), float(n.attr("alpha", 1.0)))]


@handles("Selu", attrs=["alpha", "gamma"])
def _selu(n: Node) -> list:
    x = _float_input(n)
    alpha = float(n.attr("alpha", 1.67326319217681884765625))
    gamma = float(n.attr("gamma", 1.05070102214813232421875))
    return [n.g.mul(_elu_of(n, x, alpha), n.scalar(gamma, x))]


# ---------------------------------------------------------------------------
# Index reductions, top-k, prefix sums
# ---------------------------------------------------------------------------


def _norm_axis(n: Node, axis: int, rank: int) -> int:
    if not -max(rank, 1) <= axis < max(rank, 1):
        raise n.error(f"axis {axis} is out of range for rank {rank}")
    return axis + rank if axis < 0 else axis


def _iota(n: Node, extent: int, axis: int, rank: int) -> Value:
    """0, 1, ..., extent-1 (int64) along `axis` of a rank-`rank` broadcastable tensor."""
    shape = [1] * rank
    shape[axis] = extent
    return n.g.constant(np.arange(extent, dtype=np.int64).reshape(shape))


@handles("ArgMax", "ArgMin", attrs=["axis", "keepdims", "select_last_index"])
def _arg_extremum(n: Node) -> list:
    """The first (or last) index where x equals its max (min) along the axis:
    `reduce_min(where(x == max, iota, extent))`. A NaN counts as the extremum
    (the first NaN wins, as in NumPy), since max/min propagate it."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    axis = _norm_axis(n, int(n.attr("axis", 0)), len(shape))
    extreme = (g.reduce_max if n.node.op_type == "ArgMax" else g.reduce_min)(
        x, (axis,), keepdims=True
    )
    hit = g.compare(x, extreme, "eq")
    if _dtype_of(x).kind == "f":
        hit = g.maximum(hit, g.compare(x, x, "ne"))
    iota = _iota(n, shape[axis], axis, len(shape))
    keepdims = bool(n.attr("keepdims", 1))
    if n.attr("select_last_index", 0):
        candidates = g.where(hit, iota, g.constant(np.asarray(-1, np.int64)))
        return [g.reduce_max(candidates, (axis,), keepdims=keepdims)]
    candidates = g.where(hit, iota, g.constant(np.asarray(shape[axis], np.int64)))
    return [g.reduce_min(candidates, (axis,), keepdims=keepdims)]


TOPK_LIMIT = 1 << 24
"""TopK compares every pair along its axis: at most this many comparisons."""


@handles("TopK", attrs=["axis", "largest", "sorted"])
def _topk(n: Node) -> list:
    """Exact top-k by rank: element i's rank is the number of elements that
    beat it (larger, or equal at a smaller index: ONNX's tie order), and the
    r-th output is the element of rank r. Quadratic in the axis extent."""
    g, x = n.g, n.input(0)
    shape = list(shape_of(x))
    k = int(n.const(1, "K").reshape(-1)[0])
    axis = _norm_axis(n, int(n.attr("axis", -1)), len(shape))
    extent = shape[axis]
    if not 0 <= k <= extent:
        raise n.error(f"K = {k} is out of range for an axis of extent {extent}")
    if math.prod(shape) * extent > TOPK_LIMIT:
        raise n.error(
            f"the axis extent {extent} is too large for TopK's pairwise ranking "
            f"({math.prod(shape) * extent} comparisons, limit {TOPK_LIMIT})"
        )
    rank = len(shape)
    perm = [d for d in range(rank) if d != axis] + [axis]
    inverse = list(np.argsort(perm))
    xt = g.transpose(x, perm) if axis != rank - 1 else x
    lead = shape_of(xt)[:-1]
    xi = g.reshape(xt, (*lead, extent, 1))
    xj = g.reshape(xt, (*lead, 1, extent))
    better = g.compare(xj, xi, "gt" if n.attr("largest", 1) else "lt")
    earlier = g.constant(np.tri(extent, extent, -1, dtype=bool))  # [i, j]: j < i
    beats = g.maximum(better, g.minimum(g.compare(xj, xi, "eq"), earlier))
    ranks = g.reduce_sum(g.cast(beats, np.int64), (rank,), keepdims=True)  # (..., n, 1)
    slots = g.constant(np.arange(k, dtype=np.int64).reshape(1, k))
    onehot = g.compare(ranks, slots, "eq")  # (..., n, k)
    iota = g.constant(np.arange(extent, dtype=np.int64).reshape(extent, 1))
    indices = g.reduce_max(g.where(onehot, iota, g.constant(np.asarray(-1, np.int64))),
                           (rank - 1,))  # fmt: skip
    low = np.asarray(-np.inf if _dtype_of(x).kind == "f" else np.iinfo(_dtype_of(x)).min,
                     dtype=_dtype_of(x))  # fmt: skip
    values = g.reduce_max(g.where(onehot, xi, g.constant(low)), (rank - 1,))
    if axis != rank - 1:
        values, indices = g.transpose(values, inverse), g.transpose(indices, inverse)
    return [values, indices]


@handles("CumSum", attrs=["exclusive", "reverse"])
def _cumsum(n: Node) -> list:
    """A product with a triangular 0/1 matrix along the axis (moved last)."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    axis = _norm_axis(n, int(n.const(1, "axis").reshape(-1)[0]), len(shape))
    extent = shape[axis]
    j, i = np.meshgrid(np.arange(extent), np.arange(extent), indexing="ij")
    exclusive, reverse = bool(n.attr("exclusive", 0)), bool(n.attr("reverse", 0))
    if reverse:
        mask = j > i if exclusive else j >= i
    else:
        mask = j < i if exclusive else j <= i
    rank = len(shape)
    perm = [d for d in range(rank) if d != axis] + [axis]
    xt = g.transpose(x, perm) if axis != rank - 1 else x
    y = g.matmul(xt, g.constant(mask.astype(_dtype_of(x))))
    return [g.transpose(y, list(np.argsort(perm))) if axis != rank - 1 else y]


# ---------------------------------------------------------------------------
# Einsum, Tile, Range
# ---------------------------------------------------------------------------


@handles("Einsum", attrs=["equation"])
def _einsum(n: Node) -> list:
    """One or two operands: indices only in one operand and not in the output are
    summed first; then a batched `matmul` over (shared kept, left, contracted) x
    (shared kept, contracted, right), reshaped and transposed to the output."""
    values = n.inputs()
    terms, output = _einsum_terms(n, str(n.attr("equation")), [len(shape_of(v)) for v in values])
    if len(values) not in (1, 2):
        raise n.error(f"{len(values)} operands are not supported (one or two)")
    for k, term in enumerate(terms):
        terms[k], values[k] = _einsum_diagonal(n, term, values[k])
    sizes: dict[str, int] = {}
    for term, v in zip(terms, values, strict=True):
        for c, d in zip(term, shape_of(v), strict=True):
            if sizes.setdefault(c, d) != d and d != 1 and sizes[c] != 1:
                raise n.error(f"index '{c}' has extents {sizes[c]} and {d}")
            sizes[c] = max(sizes[c], d)
    reduced = []
    for k, (term, v) in enumerate(zip(terms, values, strict=True)):
        others = set(output).union(*(t for m, t in enumerate(terms) if m != k))
        drop = [a for a, c in enumerate(term) if c not in others]
        if drop:
            v = n.g.reduce_sum(v, tuple(drop))
            term = "".join(c for c in term if c in others)
        reduced.append((term, v))
    if len(reduced) == 1:
        term, v = reduced[0]
        return [n.g.transpose(v, [term.index(c) for c in output]) if term != output else v]
    (ta, a), (tb, b) = reduced
    batch = [c for c in output if c in ta and c in tb]
    left = [c for c in output if c in ta and c not in tb]
    right = [c for c in output if c in tb and c not in ta]
    contract = [c for c in ta if c in tb and c not in output]

    def arrange(term: str, v: Value, order: list[str]) -> Value:
        v = n.g.broadcast_to(v, [sizes[c] if c in batch else d
                                 for c, d in zip(term, shape_of(v), strict=True)])  # fmt: skip
        perm = [term.index(c) for c in order]
        return n.g.transpose(v, perm) if perm != list(range(len(perm))) else v

    def size(cs: list[str]) -> int:
        return math.prod(sizes[c] for c in cs)

    a3 = n.g.reshape(arrange(ta, a, batch + left + contract),
                     (size(batch), size(left), size(contract)))  # fmt: skip
    b3 = n.g.reshape(arrange(tb, b, batch + contract + right),
                     (size(batch), size(contract), size(right)))  # fmt: skip
    y = n.g.reshape(n.g.matmul(a3, b3), [sizes[c] for c in batch + left + right])
    order = batch + left + right
    perm = [order.index(c) for c in output]
    return [n.g.transpose(y, perm) if perm != list(range(len(perm))) else y]


def _einsum_diagonal(n: Node, term: str, v: Value) -> tuple[str, Value]:
    """A repeated index (`ii`) takes the diagonal: the two axes moved last,
    flattened, and every (extent+1)-th element sliced out."""
    while len(set(term)) != len(term):
        c = next(c for c in term if term.count(c) > 1)
        first = term.index(c)
        second = term.index(c, first + 1)
        shape = shape_of(v)
        if shape[first] != shape[second]:
            raise n.error(f"index '{c}' has extents {shape[first]} and {shape[second]}")
        rest = [a for a in range(len(term)) if a not in (first, second)]
        v = n.g.transpose(v, [*rest, first, second])
        extent = shape[first]
        v = n.g.reshape(v, [shape[a] for a in rest] + [extent * extent])
        v = n.g.slice(v, [0], [extent * extent], [len(rest)], [extent + 1])
        term = "".join(term[a] for a in rest) + c
    return term, v


def _einsum_terms(n: Node, equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operand terms and the output term, with `...` spelled out as letters."""
    equation = equation.replace(" ", "")
    lhs, arrow, out = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise n.error(f"equation '{equation}' names {len(terms)} operands, got {len(ranks)}")
    spare = [c for c in "ZYXWVUTSRQPONMLKJIHGFEDCBA" if c not in equation]
    ell = ""
    expanded = []
    for term, rank in zip(terms, ranks, strict=True):
        if "..." in term:
            count = rank - (len(term) - 3)
            width = max(count, len(ell))
            ell = "".join(spare[:width])
            term = term.replace("...", ell[width - count :])
        if len(term) != rank:
            raise n.error(f"term '{term}' of '{equation}' does not match a rank-{rank} operand")
        expanded.append(term)
    if not arrow:
        letters = "".join(expanded)
        out = ell + "".join(sorted(c for c in set(letters) if letters.count(c) == 1
                                   and c not in ell))  # fmt: skip
    else:
        out = out.replace("...", ell)
    return expanded, out


@handles("Tile")
def _tile(n: Node) -> list:
    """`x` viewed as (1, d0, 1, d1, ...), broadcast to (r0, d0, r1, d1, ...), flattened pairwise."""
    x = n.input(0)
    shape = shape_of(x)
    repeats = [int(r) for r in n.const(1, "repeats").reshape(-1)]
    if len(repeats) != len(shape):
        raise n.error(f"{len(repeats)} repeats for a rank-{len(shape)} input")
    if all(r == 1 for r in repeats):
        return [x]
    spread = [d for pair in zip([1] * len(shape), shape, strict=True) for d in pair]
    target = [d for pair in zip(repeats, shape, strict=True) for d in pair]
    y = n.g.broadcast_to(n.g.reshape(x, spread), target)
    return [n.g.reshape(y, [r * d for r, d in zip(repeats, shape, strict=True)])]


@handles("DepthToSpace", "SpaceToDepth", attrs=["blocksize", "mode"])
def _depth_space(n: Node) -> list:
    """Rearrangements of (N, C, H, W) between channels and b x b spatial blocks: a
    reshape, a transpose and a reshape (DCR or CRD order for DepthToSpace)."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    if n.attr("blocksize") is None:
        raise n.error("attribute 'blocksize' is required")
    b = int(n.attr("blocksize"))
    if len(shape) != 4 or b < 1:
        raise n.error(f"expected an (N, C, H, W) input and blocksize >= 1, got {shape}, {b}")
    nb, c, h, w = shape
    if n.node.op_type == "SpaceToDepth":
        if h % b or w % b:
            raise n.error(f"spatial size {h}x{w} is not a multiple of blocksize {b}")
        crd = n.attr("mode", "DCR") == "CRD"  # a newer opset's mode: the inverse's order
        order = (0, 1, 3, 5, 2, 4) if crd else (0, 3, 5, 1, 2, 4)
        y = g.transpose(g.reshape(x, [nb, c, h // b, b, w // b, b]), order)
        return [g.reshape(y, [nb, c * b * b, h // b, w // b])]
    if c % (b * b):
        raise n.error(f"{c} channels are not a multiple of blocksize² = {b * b}")
    if n.attr("mode", "DCR") == "DCR":
        y = g.transpose(g.reshape(x, [nb, b, b, c // (b * b), h, w]), (0, 3, 4, 1, 5, 2))
    else:
        y = g.transpose(g.reshape(x, [nb, c // (b * b), b, b, h, w]), (0, 1, 4, 2, 5, 3))
    return [g.reshape(y, [nb, c // (b * b), h * b, w * b])]


@handles("Trilu", attrs=["upper"])
def _trilu(n: Node) -> list:
    """The upper (or lower) triangle of the last two axes from diagonal `k` (a
    constant): a `where` with a constant mask, as attention's causal masks use it."""
    x = n.input(0)
    shape = shape_of(x)
    if len(shape) < 2:
        raise n.error(f"expected a rank >= 2 input, got rank {len(shape)}")
    k_input = n.const(1, "k").reshape(-1) if n.has(1) else np.zeros(1, np.int64)
    if k_input.size != 1:
        raise n.error(f"k must be a scalar, got {k_input.size} values")
    k = int(k_input[0])
    rows, cols = shape[-2:]
    make = np.triu if n.attr("upper", 1) else np.tril
    keep = make(np.ones((rows, cols), dtype=bool), k)
    zero = n.g.constant(np.zeros((), dtype=_dtype_of(x)))
    return [n.g.where(n.g.constant(keep), x, zero)]


@handles("GatherElements", attrs=["axis"])
def _gather_elements(n: Node) -> list:
    """`y[i][j][k] = x[i][idx[i][j][k]][k]` (axis 1): one `gather` of the flattened
    input at flat positions. With constant indices the positions are computed at
    import; with run-time ones (a loss's target labels) they are `idx * stride +
    base`, where `base` (the other axes' part) is a constant and negative indices
    count from the end (`where`)."""
    g, x = n.g, n.input(0)
    shape = shape_of(x)
    rank = len(shape)
    axis = int(n.attr("axis", 0))
    axis = axis + rank if axis < 0 else axis
    index_shape = shape_of(n.input(1))
    if len(index_shape) != rank or not 0 <= axis < rank:
        raise n.error(f"indices of rank {len(index_shape)} for a rank-{rank} input, axis {axis}")
    if any(i > s for d, (i, s) in enumerate(zip(index_shape, shape, strict=True)) if d != axis):
        raise n.error(f"indices of shape {list(index_shape)} exceed the input's {list(shape)}")
    strides = [math.prod(shape[d + 1 :]) for d in range(rank)]
    coords = np.indices(index_shape, sparse=True)
    base = sum(c * st for d, (c, st) in enumerate(zip(coords, strides, strict=True)) if d != axis)
    base = np.broadcast_to(np.asarray(base, dtype=np.int64), index_shape)
    flat_x = g.reshape(x, [-1])
    if n.is_const(1):
        index = n.const(1, "indices").astype(np.int64)
        if np.any((index < -shape[axis]) | (index >= shape[axis])):
            raise n.error(f"an index is out of range for axis {axis} of extent {shape[axis]}")
        index = np.where(index < 0, index + shape[axis], index)
        return [g.gather(flat_x, index * strides[axis] + base)]
    index = n.input(1)
    kind = _dtype_of(index)
    if kind != np.int64:
        index = g.cast(index, np.int64)
    negative = g.compare(index, g.constant(np.int64(0)), "lt")
    index = g.where(negative, g.add(index, g.constant(np.int64(shape[axis]))), index)
    flat = g.add(g.mul(index, g.constant(np.int64(strides[axis]))), g.constant(base.copy()))
    return [g.gather(flat_x, flat)]


@handles("CastLike", attrs=["saturate", "round_mode"])
def _cast_like(n: Node) -> list:
    """Cast to the element type of input #1 (what the dynamo exporter writes)."""
    source, target = n.importer.env[n.node.input[0]], _dtype_of(n.input(1))
    if isinstance(source, np.ndarray):
        return [source.astype(target)]
    return [n.g.cast(source, target) if _dtype_of(source) != target else source]


@handles("Range")
def _range(n: Node) -> list:
    """Only reached when an input is computed at run time (constants fold):
    each must be a constant (a graph input may be bound), since the output
    shape depends on them."""
    for i, what in enumerate(("start", "limit", "delta")):
        n.const(i, what)
    raise n.error("start, limit and delta must be constants (the output shape depends on them)")


# ---------------------------------------------------------------------------
# More reductions
# ---------------------------------------------------------------------------


def _reduce_args(n: Node) -> tuple[Value, tuple[int, ...] | None, bool] | None:
    """(x, axes, keepdims), or None for noop_with_empty_axes with no axes."""
    x = n.input(0)
    axes = n.attr("axes")
    if n.has(1):
        axes = [int(a) for a in n.const(1, "axes")]
    if not axes:
        if n.attr("noop_with_empty_axes", 0):
            return None
        axes = None
    return x, None if axes is None else tuple(axes), bool(n.attr("keepdims", 1))


@handles("ReduceMin", "ReduceSumSquare", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
         attrs=["axes", "keepdims", "noop_with_empty_axes"])  # fmt: skip
def _reduce_more(n: Node) -> list:
    args = _reduce_args(n)
    if args is None:
        return [n.input(0)]
    x, axes, keep = args
    g, op = n.g, n.node.op_type
    if op in ("ReduceMin", "ReduceLogSumExp") and _reduces_empty(x, axes):
        return [_empty_reduction(n, x, axes, keep, np.inf if op == "ReduceMin" else -np.inf)]
    if op == "ReduceMin":
        return [g.reduce_min(x, axes, keepdims=keep)]
    if op == "ReduceL1":
        return [g.reduce_sum(g.maximum(x, g.neg(x)), axes, keepdims=keep)]
    if op == "ReduceLogSumExp":
        m = g.reduce_max(x, axes, keepdims=True)
        total = g.reduce_sum(g.exp(g.sub(x, m)), axes, keepdims=True)
        y = g.add(g.log(total), m)
        return [y if keep else g.reshape(y, _squeezed(shape_of(x), axes))]
    squares = g.reduce_sum(g.mul(x, x), axes, keepdims=keep)
    return [g.sqrt(squares) if op == "ReduceL2" else squares]


def _squeezed(shape: Sequence[int], axes: tuple[int, ...] | None) -> list[int]:
    rank = len(shape)
    drop = set(range(rank)) if axes is None else {a + rank if a < 0 else a for a in axes}
    return [d for k, d in enumerate(shape) if k not in drop]


# ---------------------------------------------------------------------------
# Normalizations over channels and groups
# ---------------------------------------------------------------------------


def _normalize(n: Node, x: Value, axes: tuple[int, ...], eps: float) -> Value:
    """`(x - mean) / sqrt(var + eps)` over `axes` (biased variance)."""
    g = n.g
    mean = g.reduce_mean(x, axes, keepdims=True)
    centered = g.sub(x, mean)
    var = g.reduce_mean(g.mul(centered, centered), axes, keepdims=True)
    return g.mul(centered, g.rsqrt(g.add(var, n.scalar(eps, var))))


@handles("InstanceNormalization", attrs=["epsilon"])
def _instance_norm(n: Node) -> list:
    x = _float_input(n)
    rank = len(shape_of(x))
    if rank < 3:
        raise n.error(f"expected an (N, C, D1, ...) input of rank >= 3, got rank {rank}")
    y = _normalize(n, x, tuple(range(2, rank)), float(n.attr("epsilon", 1e-5)))
    channel = (-1,) + (1,) * (rank - 2)
    scale, bias = n.g.reshape(n.input(1), channel), n.g.reshape(n.input(2), channel)
    return [n.g.add(n.g.mul(y, scale), bias)]


@handles("GroupNormalization", attrs=["epsilon", "num_groups", "stash_type"])
def _group_norm(n: Node) -> list:
    """Normalize (N, G, C/G · spatial); scale and bias are per channel from
    opset 21 and per group in opset 18 (where the definition first appeared)."""
    x = _float_input(n)
    shape = shape_of(x)
    groups = int(n.attr("num_groups"))
    if len(shape) < 2 or groups <= 0 or shape[1] % groups:
        raise n.error(f"num_groups = {groups} does not divide the channels of {list(shape)}")
    batch, channels = shape[0], shape[1]
    grouped = n.g.reshape(x, (batch, groups, -1))
    y = n.g.reshape(_normalize(n, grouped, (2,), float(n.attr("epsilon", 1e-5))), shape)
    params = [n.input(1), n.input(2)]
    if n.opset < 21:  # per group: repeat each group's value over its channels
        params = [n.g.reshape(n.g.broadcast_to(n.g.reshape(p, (groups, 1)),
                                               (groups, channels // groups)), (channels,))
                  for p in params]  # fmt: skip
    channel = (-1,) + (1,) * (len(shape) - 2)
    scale, bias = (n.g.reshape(p, channel) for p in params)
    return [n.g.add(n.g.mul(y, scale), bias)]


# ---------------------------------------------------------------------------
# ConvTranspose
# ---------------------------------------------------------------------------


@handles("ConvTranspose", attrs=["auto_pad", "dilations", "group", "kernel_shape",
                                 "output_padding", "output_shape", "pads", "strides"])  # fmt: skip
def _conv_transpose(n: Node) -> list:
    """A convolution of the stride-dilated input (zeros between the elements),
    padded by `dilation·(k-1) - pad`, with the spatially flipped kernel whose
    in/out channels are swapped per group. 1-D runs as 2-D with unit height."""
    g = n.g
    one_d = len(shape_of(n.input(0))) == 3
    x, w = _as_2d(n, n.input(0)), _as_2d(n, n.input(1))
    _attrs_2d(n, ("dilations", "kernel_shape", "strides"), one_d)
    if one_d:
        for name in ("output_padding", "output_shape"):
            if name in n.attrs:
                n.attrs[name] = [0 if name == "output_padding" else 1, *n.attrs[name]]
        if "pads" in n.attrs:
            p = list(n.attrs["pads"])
            n.attrs["pads"] = [0, p[0], 0, p[1]]
    if len(shape_of(x)) != 4:
        raise n.error(f"only 1-D and 2-D transposed convolution are supported, got rank "
                      f"{len(shape_of(n.input(0)))}")  # fmt: skip
    nb, c_in, h, wd = shape_of(x)
    groups = int(n.attr("group", 1))
    kh, kw = (int(k) for k in n.attr("kernel_shape", list(shape_of(w)[2:])))
    sh, sw = (int(s) for s in n.attr("strides", [1, 1]))
    dh, dw = (int(d) for d in n.attr("dilations", [1, 1]))
    out_pad = [int(v) for v in n.attr("output_padding", [0, 0])]
    pads = _conv_transpose_pads(n, (h, wd), (kh, kw), (sh, sw), (dh, dw), out_pad)
    # Stride-dilate: (N, C, H, 1, W, 1) padded with zeros to (N, C, H, s, W, s), cut to (H-1)s+1.
    if sh > 1 or sw > 1:
        z = g.reshape(x, (nb, c_in, h, 1, wd, 1))
        dt = _dtype_of(x)
        if sh > 1:
            z = g.concat([z, g.constant(np.zeros((nb, c_in, h, sh - 1, wd, 1), dt))], 3)
        if sw > 1:
            z = g.concat([z, g.constant(np.zeros((nb, c_in, h, sh, wd, sw - 1), dt))], 5)
        z = g.reshape(z, (nb, c_in, h * sh, wd * sw))
        x = g.slice(z, [0, 0], [(h - 1) * sh + 1, (wd - 1) * sw + 1], [2, 3])
    # Weight (C_in, C_out/g, kh, kw) -> (C_out, C_in/g, kh, kw), flipped spatially.
    c_out_g = shape_of(w)[1]
    wg = g.reshape(w, (groups, c_in // groups, c_out_g, kh, kw))
    wg = g.transpose(wg, (0, 2, 1, 3, 4))
    wf = g.reshape(wg, (groups * c_out_g, c_in // groups, kh, kw))
    wf = g.slice(wf, [kh - 1, kw - 1], [-(2**62), -(2**62)], [2, 3], [-1, -1])
    crop = [max(-p, 0) for p in pads]
    y = g.conv2d(x, wf, (1, 1), tuple(max(p, 0) for p in pads), (dh, dw), groups)
    if any(crop):
        _, _, yh, yw = shape_of(y)
        y = g.slice(y, [crop[0], crop[1]], [yh - crop[2], yw - crop[3]], [2, 3])
    if n.has(2):
        y = g.add(y, g.reshape(n.input(2), (-1, 1, 1)))
    return [_from_2d(n, y, one_d)]


def _conv_transpose_pads(n: Node, size, kernel, strides, dilations, out_pad) -> tuple:
    """Padding (top, left, bottom, right) of the equivalent convolution (may be
    negative: a crop). With `output_shape` or SAME auto_pad, the total padding
    is what gives that output, split as ONNX says (SAME_UPPER: less at the start)."""
    auto_pad = n.attr("auto_pad", "NOTSET")
    if auto_pad not in ("NOTSET", "VALID", "SAME_UPPER", "SAME_LOWER"):
        raise n.error(f"auto_pad '{auto_pad}' is not supported")
    begin, end = [], []
    for axis in range(2):
        span = dilations[axis] * (kernel[axis] - 1)
        full = (size[axis] - 1) * strides[axis] + span + 1 + out_pad[axis]
        if "output_shape" in n.attrs or auto_pad.startswith("SAME"):
            target = (int(n.attrs["output_shape"][-2 + axis]) if "output_shape" in n.attrs
                      else size[axis] * strides[axis])  # fmt: skip
            total = full - target
            lo = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            hi = total - lo
        else:
            p = list(n.attr("pads", [0, 0, 0, 0])) if auto_pad == "NOTSET" else [0, 0, 0, 0]
            lo, hi = int(p[axis]), int(p[axis + 2])
        begin.append(span - lo)
        end.append(span - hi + out_pad[axis])
    return begin[0], begin[1], end[0], end[1]


# ---------------------------------------------------------------------------
# Resize
# ---------------------------------------------------------------------------


@handles("Resize", attrs=["antialias", "axes", "coordinate_transformation_mode", "cubic_coeff_a",
                          "exclude_outside", "extrapolation_value", "keep_aspect_ratio_policy",
                          "mode", "nearest_mode"])  # fmt: skip
def _resize(n: Node) -> list:
    """Separable: per resized axis, a `gather` of the source indices (nearest)
    or two gathers blended with constant weights (linear), all computed at import."""
    x = n.input(0)
    shape = shape_of(x)
    rank = len(shape)
    mode = n.attr("mode", "nearest")
    if mode not in ("nearest", "linear", "cubic"):
        raise n.error(f"mode '{mode}' is not supported (nearest, linear, cubic)")
    if n.attr("antialias", 0):
        raise n.error("antialias = 1 is not supported")
    ctm = n.attr("coordinate_transformation_mode", "half_pixel")
    if ctm not in _RESIZE_COORDINATES and ctm != "tf_crop_and_resize":
        raise n.error(f"coordinate_transformation_mode '{ctm}' is not supported")
    policy = n.attr("keep_aspect_ratio_policy", "stretch")
    if policy not in ("stretch", "not_larger", "not_smaller"):
        raise n.error(f"keep_aspect_ratio_policy '{policy}' is not supported")
    axes = [_norm_axis(n, int(a), rank) for a in n.attr("axes", list(range(rank)))]
    sizes = n.opt_const(3, "sizes") if n.has(3) else None
    scales = n.opt_const(2, "scales") if n.has(2) else None
    if sizes is not None and sizes.size:
        out = [int(v) for v in sizes.reshape(-1)]
        factors = [o / shape[a] for o, a in zip(out, axes, strict=True)]
        if policy != "stretch":  # one scale for every axis, the smallest or the largest
            scale = (min if policy == "not_larger" else max)(factors)
            factors = [scale] * len(axes)
            out = [int(scale * shape[a] + 0.5) for a in axes]
    elif scales is not None and scales.size:
        factors = [float(v) for v in scales.reshape(-1)]
        out = [int(math.floor(shape[a] * f)) for a, f in zip(axes, factors, strict=True)]
    else:
        raise n.error("needs constant scales or sizes")
    roi = None
    if ctm == "tf_crop_and_resize":
        roi = [float(v) for v in n.const(1, "roi").reshape(-1)]
        if len(roi) != 2 * len(axes):
            raise n.error(f"roi has {len(roi)} values for {len(axes)} axes")
    y = x
    for k, (axis, size, factor) in enumerate(zip(axes, out, factors, strict=True)):
        o = np.arange(size, dtype=np.float64)
        if roi is None:
            if size == shape[axis] and factor == 1.0:
                continue
            coords = _RESIZE_COORDINATES[ctm](o, factor, shape[axis], size)
            y = _resize_axis(n, y, axis, coords, shape[axis], mode)
        else:
            coords = _crop_coordinates(o, factor, shape[axis], roi[k], roi[k + len(axes)])
            y = _resize_axis(n, y, axis, coords, shape[axis], mode)
            y = _extrapolate(n, y, axis, (coords >= 0) & (coords <= shape[axis] - 1))
    return [y]


def _crop_coordinates(o: np.ndarray, scale: float, size: int, start: float, end: float):
    """tf_crop_and_resize: output index → coordinate inside the region of interest."""
    span = (end - start) * (size - 1)
    if scale * size == 1:
        return 0 * o + span / 2 + start * (size - 1)
    return o * span / (scale * size - 1) + start * (size - 1)


def _extrapolate(n: Node, y: Value, axis: int, valid: np.ndarray) -> Value:
    """Positions along `axis` whose coordinate left the input take extrapolation_value."""
    if valid.all():
        return y
    shape = [1] * len(shape_of(y))
    shape[axis] = len(valid)
    dt = _dtype_of(y)
    value = float(n.attr("extrapolation_value", 0.0))
    keep = n.g.constant(valid.reshape(shape).astype(dt))
    fill = n.g.constant((~valid * value).reshape(shape).astype(dt))
    return n.g.add(n.g.mul(y, keep), fill)


_RESIZE_COORDINATES = {
    "half_pixel": lambda o, s, size, out: (o + 0.5) / s - 0.5,
    "half_pixel_symmetric": lambda o, s, size, out: (
        size / 2 * (1 - out / (s * size)) + (o + 0.5) / s - 0.5
    ),
    "pytorch_half_pixel": lambda o, s, size, out: (
        (o + 0.5) / s - 0.5 if s * size != 1 else 0 * o - 0.5
    ),
    "align_corners": lambda o, s, size, out: (
        o * (size - 1) / (s * size - 1) if s * size != 1 else 0 * o
    ),
    "asymmetric": lambda o, s, size, out: o / s,
}
"""Output index → source coordinate, per ONNX `coordinate_transformation_mode`. The
resized length in these formulas is `scale · size` unrounded, as ONNX defines it
(the output size itself whenever `sizes` is given)."""


def _resize_axis(n: Node, x: Value, axis: int, coords: np.ndarray, size: int, mode: str) -> Value:
    g = n.g
    if mode == "nearest":
        rounding = n.attr("nearest_mode", "round_prefer_floor")
        pick = {
            "round_prefer_floor": lambda c: np.where(
                c == np.floor(c) + 0.5, np.floor(c), np.round(c)
            ),  # fmt: skip
            "round_prefer_ceil": lambda c: np.where(
                c == np.floor(c) + 0.5, np.ceil(c), np.round(c)
            ),  # fmt: skip
            "floor": np.floor,
            "ceil": np.ceil,
        }.get(rounding)
        if pick is None:
            raise n.error(f"nearest_mode '{rounding}' is not supported")
        index = np.clip(pick(coords), 0, size - 1).astype(np.int64)
        return g.gather(x, index, axis)
    lo = np.floor(coords)
    frac = coords - lo
    if mode == "linear":
        taps, weights = [lo, lo + 1], [1 - frac, frac]
    else:
        taps = [lo - 1, lo, lo + 1, lo + 2]
        weights = _cubic_weights(frac, float(n.attr("cubic_coeff_a", -0.75)))
        if n.attr("exclude_outside", 0):  # taps outside the input weigh 0, the rest renormalized
            weights = [np.where((t >= 0) & (t < size), w, 0) for t, w in zip(taps, weights,
                                                                           strict=True)]  # fmt: skip
            total = sum(weights)
            weights = [w / total for w in weights]
    rank = len(shape_of(x))
    wshape = [1] * rank
    wshape[axis] = len(coords)
    dt = _dtype_of(x)
    acc = None
    for tap, weight in zip(taps, weights, strict=True):
        index = np.clip(tap, 0, size - 1).astype(np.int64)
        term = g.mul(g.gather(x, index, axis), g.constant(weight.reshape(wshape).astype(dt)))
        acc = term if acc is None else g.add(acc, term)
    assert acc is not None
    return acc


def _cubic_weights(r: np.ndarray, a: float) -> list[np.ndarray]:
    """Keys' cubic convolution weights of the taps at -1, 0, 1, 2 for a fraction `r`."""

    def far(d: np.ndarray) -> np.ndarray:  # 1 < |d| < 2
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    def near(d: np.ndarray) -> np.ndarray:  # |d| <= 1
        return ((a + 2) * d - (a + 3)) * d * d + 1

    return [far(r + 1), near(r), near(1 - r), far(2 - r)]


# ---------------------------------------------------------------------------
# Windows beyond the graph ops: 3-D convolution, 3-D and dilated pooling
# ---------------------------------------------------------------------------


def _window_geometry(n: Node, sizes, kernel, strides, dilations, ceil_mode: bool = False):
    """(output sizes, begin pads, end pads) of an N-D window op per ONNX: pads or
    auto_pad, and with ceil_mode the extra end padding the last window reaches."""
    auto_pad = n.attr("auto_pad", "NOTSET")
    d = len(sizes)
    out, begin, end = [], [], []
    pads = [int(p) for p in n.attr("pads", [0] * (2 * d))]
    for a in range(d):
        span = (kernel[a] - 1) * dilations[a] + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-sizes[a] // strides[a])
            total = max((o - 1) * strides[a] + span - sizes[a], 0)
            lo = total // 2 if auto_pad == "SAME_UPPER" else total - total // 2
            hi = total - lo
        elif auto_pad in ("NOTSET", "VALID"):
            lo, hi = (pads[a], pads[a + d]) if auto_pad == "NOTSET" else (0, 0)
            room = sizes[a] + lo + hi - span
            o = (-(-room // strides[a]) if ceil_mode else room // strides[a]) + 1
            if ceil_mode and (o - 1) * strides[a] >= sizes[a] + lo:
                o -= 1
        else:
            raise n.error(f"auto_pad '{auto_pad}' is not supported")
        out.append(o)
        begin.append(lo)
        end.append(hi)
    return out, begin, end


def _pad_axis(n: Node, x: Value, axis: int, before: int, after: int, value: float) -> Value:
    """`x` with `before`/`after` slices of `value` concatenated along `axis`."""
    shape = list(shape_of(x))
    parts = []
    for count in (before, after):
        side = list(shape)
        side[axis] = count
        parts.append(n.g.constant(np.full(side, value, dtype=_dtype_of(x))) if count > 0 else None)
    values = [v for v in (parts[0], x, parts[1]) if v is not None]
    return n.g.concat(values, axis) if len(values) > 1 else x


def _needs_window_slices(n: Node) -> bool:
    """3-D (or wider) pooling, or dilated pooling: what graph's 2-D pools lack."""
    rank = len(shape_of(n.input(0)))
    return rank > 4 or any(int(v) != 1 for v in n.attr("dilations", []))


def _window_pool(n: Node, x: Value, kind: str, indices: bool = False):
    """Max or average pooling of any rank as an elementwise max / sum over one
    strided slice of the padded input per kernel offset; the average divides by
    a constant count (in-image elements, or with count_include_pad the ones in
    the padded area). With `indices`, (max, flat index of the first maximum in
    window order, per ONNX MaxPool's storage_order)."""
    g = n.g
    shape = shape_of(x)
    d = len(shape) - 2
    if d < 1:
        raise n.error(f"expected an (N, C, D1, ...) input, got rank {len(shape)}")
    kernel = [int(k) for k in n.attr("kernel_shape")]
    strides = [int(v) for v in n.attr("strides", [1] * d)]
    dilations = [int(v) for v in n.attr("dilations", [1] * d)]
    ceil_mode = bool(n.attr("ceil_mode", 0))
    out, begin, end = _window_geometry(n, shape[2:], kernel, strides, dilations, ceil_mode)
    fill = -np.inf if kind == "max" else 0.0
    if _dtype_of(x).kind != "f":
        fill = np.iinfo(_dtype_of(x)).min if kind == "max" else 0
    padded = x
    extra = []
    for a in range(d):
        reach = (out[a] - 1) * strides[a] + (kernel[a] - 1) * dilations[a] + 1
        more = max(reach - (shape[2 + a] + begin[a] + end[a]), 0)
        extra.append(more)
        padded = _pad_axis(n, padded, 2 + a, begin[a], end[a] + more, fill)
    acc, where = None, None
    for offset in np.ndindex(*kernel):
        starts = [o * dl for o, dl in zip(offset, dilations, strict=True)]
        ends = [st + (o - 1) * s + 1 for st, o, s in zip(starts, out, strides, strict=True)]
        window = g.slice(padded, starts, ends, list(range(2, 2 + d)), strides)
        if indices:
            here = g.constant(_window_positions(n, shape, out, strides, dilations, begin, offset))
            where = here if acc is None else g.where(g.compare(window, acc, "gt"), here, where)
        if acc is None:
            acc = window
        else:
            acc = g.maximum(acc, window) if kind == "max" else g.add(acc, window)
    assert acc is not None
    if indices:
        assert where is not None
        plane = math.prod(shape[2:])
        base = (np.arange(shape[0] * shape[1], dtype=np.int64) * plane).reshape(
            shape[0], shape[1], *([1] * d))  # fmt: skip
        return acc, g.add(where, g.constant(base))
    if kind == "max":
        return acc
    include_pad = bool(n.attr("count_include_pad", 0))
    counts = np.ones((), dtype=np.float64)
    for a in range(d):
        pos = (np.arange(out[a])[:, None] * strides[a] + np.arange(kernel[a])[None, :]
               * dilations[a] - begin[a])  # fmt: skip
        high = shape[2 + a] + (end[a] if include_pad else 0)
        low = -begin[a] if include_pad else 0
        per_axis = ((pos >= low) & (pos < high)).sum(axis=1)
        counts = np.multiply.outer(counts, per_axis)
    divisor = np.maximum(counts, 1).reshape(1, 1, *out).astype(_dtype_of(x))
    return g.div(acc, g.constant(divisor))


def _window_positions(n: Node, shape, out, strides, dilations, begin, offset) -> np.ndarray:
    """Per output position, the flat (spatial) index of the input element at
    kernel `offset`: row-major, or column-major over the last two axes with
    storage_order = 1."""
    spatial = list(shape[2:])
    coords = [np.arange(o) * s + k * dl - b
              for o, s, k, dl, b in zip(out, strides, offset, dilations, begin, strict=True)]  # fmt: skip
    grids = np.meshgrid(*coords, indexing="ij")
    order = list(range(len(spatial)))
    if n.attr("storage_order", 0) and len(order) >= 2:
        order[-2], order[-1] = order[-1], order[-2]
    flat = np.zeros(out, dtype=np.int64)
    for a in order:
        flat = flat * spatial[a] + grids[a]
    return flat.reshape(1, 1, *out)


def _conv3d(n: Node) -> Value:
    """3-D convolution as a sum over the depth taps of 2-D convolutions: each
    tap's strided depth slice of the (zero-padded) input, depth folded into
    the batch, convolved with that tap's (O, C/g, KH, KW) kernel."""
    g = n.g
    x, w = n.input(0), n.input(1)
    nb, c, depth, h, wd = shape_of(x)
    o, _, kd, kh, kw = shape_of(w)
    kernel = [int(k) for k in n.attr("kernel_shape", [kd, kh, kw])]
    strides = [int(v) for v in n.attr("strides", [1, 1, 1])]
    dilations = [int(v) for v in n.attr("dilations", [1, 1, 1])]
    out, begin, end = _window_geometry(n, (depth, h, wd), kernel, strides, dilations)
    padded = _pad_axis(n, x, 2, begin[0], end[0], 0.0)
    acc = None
    for tap in range(kd):
        start = tap * dilations[0]
        xs = g.slice(padded, [start], [start + (out[0] - 1) * strides[0] + 1], [2], [strides[0]])
        xs = g.reshape(g.transpose(xs, (0, 2, 1, 3, 4)), (nb * out[0], c, h, wd))
        wk = g.reshape(g.slice(w, [tap], [tap + 1], [2]), (o, shape_of(w)[1], kh, kw))
        y = g.conv2d(xs, wk, tuple(strides[1:]), (begin[1], begin[2], end[1], end[2]),
                     tuple(dilations[1:]), int(n.attr("group", 1)))  # fmt: skip
        acc = y if acc is None else g.add(acc, y)
    assert acc is not None
    y = g.transpose(g.reshape(acc, (nb, out[0], o, out[1], out[2])), (0, 2, 1, 3, 4))
    if n.has(2):
        y = g.add(y, g.reshape(n.input(2), (-1, 1, 1, 1)))
    return y


def _name_inputs_and_outputs(module: ModuleOp, inputs: list[str], outputs: list[str]) -> None:
    """Give `@main`'s parameters and results the model's names, which users call the
    compiled model by (docs/python-api.md): as SSA names (`%y = graph.relu ...`,
    `graph.return %y`) where they can be, else verbatim in the function's attributes
    (an ONNX name need not be an SSA name: `input:0`)."""
    func = next(iter(module.ops))
    assert isinstance(func, graph.FuncOp), "the importer builds one graph.func"
    if [arg.name_hint for arg in func.args] != inputs:
        func.attributes[INPUT_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in inputs])
    ret = func.get_return_op()
    assert ret is not None
    values = list(ret.operands)
    for value, name in zip(values, outputs, strict=True):
        owned = isinstance(value, OpResult) and values.count(value) == 1
        if owned and ssa_name(name) == name and value.name_hint in (None, name):
            value.name_hint = name
    if [v.name_hint for v in values] != outputs:
        func.attributes[OUTPUT_NAMES_ATTR] = ArrayAttr([StringAttr(n) for n in outputs])


__all__ = [
    "AUDITED_OPSET",
    "DEFAULT_BATCH_BOUNDS",
    "HANDLERS",
    "MAX_OPSET",
    "NeedsConstantInput",
    "MIN_OPSET",
    "ImportResult",
    "OnnxImportError",
    "import_file",
    "import_model",
    "import_source",
    "is_model_proto",
    "load_model",
]
