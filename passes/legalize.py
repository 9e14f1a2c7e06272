"""`legalize`: graph compute ops → `te.func` + `graph.call_te` (optimization → lowering).

Relax's LegalizeOps, the 1→2 transition of docs/design.md §2. Every op with the
`GraphCompute` trait becomes a call of a tensor-expression kernel whose body
is built by `kernels.BUILDERS` (one builder per op kind). The pass also
flattens `graph.dataflow` blocks and removes purity tracking, so that the
module satisfies the lowering-phase invariants.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType, UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.pattern_rewriter import (
    PatternRewriter,
    RewritePattern,
)
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from lamina.core.devices import mark_kernel_device, op_device
from lamina.core.diagnostics import Diagnostic, DiagnosticError, op_error
from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import in_codegen
from lamina.dialects import graph, te
from lamina.dialects.lamina import CONCATENATION_ATTR_NAME, Phase, set_phase
from lamina.kernels import (
    BUILDERS,
    KernelParameters,
    build_kernel_deriving,
    is_constant,
    may_derive,
    splat_operands,
)
from lamina.passes._constraints import (
    constraint_of,
    record_arg_constraints,
    record_result_constraint,
)
from lamina.passes._derived_prefetch import WinogradPrefetch

COMPUTE_OP_NAMES: tuple[str, ...] = tuple(cls.name for cls in graph.COMPUTE_OPS)


# ---------------------------------------------------------------------------
# Kernel naming and deduplication
# ---------------------------------------------------------------------------


def type_suffix(t: Attribute) -> str:
    """`2x3xf32` for `tensor<2x3xf32>`, `f32` for a 0-d tensor."""
    assert isinstance(t, TensorType)
    return "x".join([*(str(d) for d in t.get_shape()), str(t.get_element_type())])


def kernel_key(op: Operation) -> tuple[object, ...]:
    """What makes two compute ops share a kernel: kind, properties (including the
    device they run on: a kernel is never shared between devices), attributes,
    operand and result types."""
    props = tuple(sorted(op.properties.items()))
    attrs = tuple(sorted(op.attributes.items()))
    key = (op.name, props, attrs, tuple(op.operand_types), tuple(op.result_types))
    key = (*key, splat_operands(op))  # read as literals by the kernel
    if may_derive(op):  # its kernel depends on which operands are constants
        return (*key, tuple(is_constant(v) for v in op.operands))
    return key


class KernelTable:
    """The te.funcs made so far: one per distinct `kernel_key`, with unique names
    `te_<op>_<result type>` (`_1`, `_2`, ... when that name is taken)."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.taken = {
            sym.data
            for op in module.ops
            if isinstance(
                sym := op.properties.get("sym_name") or op.attributes.get("sym_name"), StringAttr
            )
        }
        self.by_key: dict[tuple[object, ...], str] = {}
        self.new_funcs: list[te.FuncOp] = []
        self.parameters: dict[str, KernelParameters] = {}
        """Per kernel: how its calls pass their inputs (`KernelParameters`)."""
        self.dropped_inputs: list[SSAValue] = []
        self.prefetch = WinogradPrefetch()
        """Derived parameters computed ahead on threads (`fuse-ops` sets one up)."""

    def call_operands(self, name: str, inputs: list[SSAValue], before: Operation) -> list[SSAValue]:
        """The operands of a call of kernel `name` with `inputs`; the constants
        it derives from them are inserted before `before`."""
        params = self.prefetch.parameters(self.parameters.get(name, KernelParameters()), inputs)
        operands, constants = params.call_operands(inputs)
        for constant in constants:
            Rewriter.insert_op(constant, InsertPoint.before(before))
        self.dropped_inputs.extend(inputs[n] for n in params.dropped)
        return operands

    def erase_unused_constants(self) -> None:
        """Erase the constant inputs that kernels dropped (they read what was
        derived from them instead) once nothing else uses them: the original
        weights need not be stored beside their transform."""
        for value in self.dropped_inputs:
            owner = value.owner
            if isinstance(owner, graph.ConstantOp) and owner.parent and not owner.results[0].uses:
                Rewriter.erase_op(owner)

    def kernel_for(self, op: Operation) -> str:
        """The name of the te.func computing `op`, building it on first use. The
        layout constraints its operands are known to satisfy become the kernel's
        `arg_attrs` (so two calls share a kernel only if they agree on them)."""
        pending = {f.sym_name.data: f for f in self.new_funcs}
        constraints = [constraint_of(v, pending) for v in op.operands]
        key = (*kernel_key(op), tuple(constraints))
        if key in self.by_key:
            return self.by_key[key]
        name = self._fresh(f"te_{op.name.removeprefix('graph.')}_{type_suffix(op.results[0].type)}")
        kernel, self.parameters[name] = build_kernel_deriving(
            name, [op], list(op.operands), list(op.results), constraints
        )
        record_arg_constraints(kernel, self.parameters[name].arg_constraints(constraints))
        record_result_constraint(kernel, op)
        mark_kernel_device(kernel, op_device(op))
        self.new_funcs.append(kernel)
        self.by_key[key] = name
        return name

    def _fresh(self, base: str) -> str:
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name


# ---------------------------------------------------------------------------
# Patterns
# ---------------------------------------------------------------------------


class ComputeOpLowering(RewritePattern):
    """`%r = graph.<op> %a, ... : (...) -> T` ⇒ `%r = graph.call_te @te_<op>_<T>(%a, ...)`.

    One pattern for every `GraphCompute` op: what differs per op kind is the
    kernel body, which `kernels.BUILDERS` builds. The call keeps the op's
    `device`. Ops claimed by a target (`lamina.codegen`) are left alone. An op
    that cannot be legalized is left in place and its diagnostic recorded in
    `failures`, so that one run reports every such op.
    """

    def __init__(self, table: KernelTable):
        self.table = table
        self.failures: list[Diagnostic] = []

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if not op.has_trait(graph.GraphCompute) or in_codegen(op):
            return
        try:
            callee = self._kernel(op)
        except DiagnosticError as err:
            self.failures.extend(err.diagnostics)
            return
        device = op.properties.get("device")
        operands = self.table.call_operands(callee, list(op.operands), op)
        call = graph.CallTeOp(callee, operands, list(op.result_types), device=device)  # type: ignore[arg-type]
        if isinstance(op, graph.ConcatOp):  # what concat-in-place may write in place
            call.attributes[CONCATENATION_ATTR_NAME] = UnitAttr()
        for old, new in zip(op.results, call.results, strict=True):
            new.name_hint = old.name_hint
        rewriter.replace(op, call)

    def _kernel(self, op: Operation) -> str:
        """The te.func for `op`; any failure becomes a DiagnosticError at `op`."""
        if op.name not in BUILDERS:
            raise op_error(op, "legalize has no tensor-expression lowering for this op")
        try:
            return self.table.kernel_for(op)
        except DiagnosticError:
            raise
        except VerifyException as err:
            raise op_error(op, f"cannot legalize: {err}") from err
        except Exception as err:  # a builder bug must still point at the op
            raise op_error(op, f"cannot legalize: {type(err).__name__}: {err}") from err


def flatten_dataflow(module: ModuleOp) -> None:
    """Move the ops of every `graph.dataflow` before it; its results become the
    values its `graph.output` returned."""
    for dataflow in [op for op in _outside_kernels(module) if isinstance(op, graph.DataflowOp)]:
        if in_codegen(dataflow):
            continue
        block = dataflow.body.block
        output = block.last_op
        assert isinstance(output, graph.OutputOp)
        for inner in list(block.ops):
            if inner is output:
                continue
            inner.detach()
            dataflow.parent_block().insert_op_before(inner, dataflow)  # type: ignore[union-attr]
        for result, value in zip(dataflow.results, output.outputs, strict=True):
            result.replace_all_uses_with(value)
        output.detach()
        output.erase(safe_erase=False)
        dataflow.detach()
        dataflow.erase()


def remove_purity_tracking(module: ModuleOp) -> None:
    """Pure `graph.func`s become `force_pure`; `pure` goes from `call_extern`/`invoke`."""
    for op in _outside_kernels(module):
        if isinstance(op, graph.FuncOp):
            if op.impure is None and op.force_pure is None:
                op.force_pure = UnitAttr()
        elif isinstance(op, graph.CallExternOp | graph.InvokeOp):
            op.properties.pop("pure", None)
            op.attributes.pop("pure", None)


def _outside_kernels(module: ModuleOp) -> Iterable[Operation]:
    """`module.walk()` without the kernels' bodies (`te.func`s hold no graph op)."""
    yield module
    for top in module.ops:
        if not isinstance(top, te.FuncOp):
            yield from top.walk()


def leftover_compute_ops(module: ModuleOp) -> Iterable[Operation]:
    return (op for op in module.walk() if op.has_trait(graph.GraphCompute) and not in_codegen(op))


# ---------------------------------------------------------------------------
# Pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LegalizePass(LaminaPass):
    """Lower graph compute ops to tensor expressions (optimization → lowering).

    Input invariant: a verified module in phase optimization (no `graph.lambda`).
    Output IR: every op with the `GraphCompute` trait (outside code claimed by a
    target with `lamina.codegen`) is replaced by `graph.call_te @te_<op>_<type>`
    of a new top-level `te.func` (appended to the module in order of first use),
    keeping the op's `device`; the call of a `graph.concat`'s kernel is marked
    with the unit attribute `lamina.concatenation` (for `concat-in-place`). Ops of the same kind with the same properties,
    attributes and types share one te.func. Each te.func is a DAG of
    `te.compute` (one for elementwise ops and single reductions, several for
    softmax, layer_norm, avg/global pooling and reduce_mean). Padded
    conv2d / max_pool2d / avg_pool2d first compute the padded input (PAD 0,
    or −∞ for max pooling) and read it at the affine window index
    `o*stride + k*dilation`; a strided last axis is split into stride phases
    (`[.., i]` → `[.., i mod s, i div s]`) so the output column reads at unit
    stride (also without padding). Reads that may leave an operand (padding,
    concat, layout padding) use clamped indices and `arith.select` on an
    in-bounds condition, so no `te.read` is ever out of bounds. `graph.dataflow` blocks are flattened into their
    parent block. Purity tracking is removed: a `graph.func` with neither
    `impure` nor `force_pure` gets `force_pure`; `pure` is dropped from
    `graph.call_extern` and `graph.invoke`. The module enters phase lowering.
    Every op that cannot be legalized (e.g. a layout map that is not a
    floordiv/mod tiling) is reported at the op, all in one run; the pass then
    fails with the module partially rewritten (each call has its te.func).
    Invariants: `graph.constant`, calls, copies and control ops are unchanged;
    function signatures are unchanged; results keep their types.
    """

    name = "legalize"
    phases = frozenset({Phase.OPTIMIZATION})
    produces = Phase.LOWERING
    requires = ("lift-lambdas",)
    illegal_ops = ("graph.dataflow", "graph.output", *COMPUTE_OP_NAMES)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        flatten_dataflow(op)
        table = KernelTable(op)
        lowering = ComputeOpLowering(table)
        # fuse-ops' kernels (te.funcs) hold no graph op: the walk skips them.
        locating_walker(
            lowering, only=lambda top: not isinstance(top, te.FuncOp), apply_recursively=False
        ).rewrite_module(op)
        table.erase_unused_constants()
        for func in table.new_funcs:
            op.body.block.add_op(func)
        if lowering.failures:
            raise DiagnosticError(lowering.failures)
        remove_purity_tracking(op)
        set_phase(op, Phase.LOWERING)

    @classmethod
    def check_legality(cls, module: ModuleOp) -> None:
        """Compute ops and dataflow blocks inside target-claimed code legitimately survive."""
        leftovers = [
            op for op in module.walk() if op.name in cls.illegal_ops and not in_codegen(op)
        ]
        if leftovers:
            raise DiagnosticError(
                Diagnostic(f"{cls.name}: failed to legalize operation '{op.name}'", op)
                for op in leftovers
            )
