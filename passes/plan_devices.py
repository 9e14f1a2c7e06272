"""`plan-devices`: decide, once and in the IR, which device every tensor lives on.

Device planning (docs/devices.md; after TVM's device planner): devices are decided by unification over the
whole module before lowering, and the result is written into the IR, so that
legalize, lower-te, plan-memory and lower-graph read placements from the IR
alone (`lamina.core.devices.device_of`).

The analysis has two kinds of edges between device variables:

* **equalities** (unified, union-find): a result lives where its op runs; a
  `graph.on_device`'s operand and result live on its device; a
  `graph.device_copy`'s operand lives on `src`, its result on `dst`; a call's
  results are the callee's results; a dataflow block's results are its
  `graph.output` operands; function values (`!graph.fn`) carry a device
  *signature* (one variable per parameter and result) and every place a
  function value flows (closure → invoke, argument → parameter, return →
  result) unifies the two signatures — higher-order unification, no inlining;
* **uses** (may be bridged by a copy): a tensor operand of an op must be on
  the op's device; a call/invoke/closure argument on the callee's parameter
  device; a returned value on the function's result device. When the two
  ends of a use end up on different devices, a `graph.device_copy` bridges
  them.

An equality between two different fixed devices is a conflict no copy can
resolve; it is reported at the op that imposed it, naming both devices and
where each came from.

What the constraints leave free is then placed so that the module needs the
fewest copies (`lamina.core.min_copies`: a minimum cut between the fixed
values for two devices), ties broken by the first-consumer rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from lamina.core import min_copies
from lamina.core.devices import with_device
from lamina.core.diagnostics import Diagnostic, DiagnosticError, location_of
from lamina.core.pass_base import LaminaPass
from lamina.core.symbols import lookup_symbol  # O(1): one lookup per call op
from lamina.dialects import graph
from lamina.dialects.graph import attr_syntax
from lamina.dialects.lamina import (
    DEFAULT_DEVICE_ATTR_NAME,
    DEVICE_ATTR_NAME,
    DeviceAttr,
    Phase,
    get_default_device,
)
from lamina.target.devices import known_device_kinds

KERNEL_OPS = (graph.ConstantOp, graph.CallTeOp, graph.CallLoopOp, graph.CallExternOp)
"""Ops that run on one device and produce their results there (with the compute ops)."""


def _where(op: Operation) -> str:
    loc = location_of(op)
    return f"{op.name} at {loc}" if loc else op.name


# ---------------------------------------------------------------------------
# The unification domain
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fixed:
    """A device a variable is fixed to, and the constraint that fixed it."""

    device: DeviceAttr
    origin: str


@dataclass
class Unifier:
    """Union-find over device variables; a function variable has a signature
    (parameter variables, result variables) unified member-wise."""

    parent: list[int] = field(default_factory=list)
    fixed: list[Fixed | None] = field(default_factory=list)
    signature: list[tuple[list[int], list[int]] | None] = field(default_factory=list)
    conflicts: list[Diagnostic] = field(default_factory=list)

    def new(self, signature: tuple[list[int], list[int]] | None = None) -> int:
        self.parent.append(len(self.parent))
        self.fixed.append(None)
        self.signature.append(signature)
        return len(self.parent) - 1

    def for_type(self, ty: Attribute) -> int | None:
        """A fresh variable for a value of type `ty` (None: no device, e.g. a scalar)."""
        if isinstance(ty, TensorType):
            return self.new()
        if isinstance(ty, graph.FnType):
            params = [self.for_type(t) for t in ty.inputs.data]
            results = [self.for_type(t) for t in ty.outputs.data]
            return self.new(
                ([p for p in params if p is not None], [r for r in results if r is not None])
            )
        return None

    def find(self, n: int) -> int:
        root = n
        while self.parent[root] != root:
            root = self.parent[root]
        while self.parent[n] != root:
            self.parent[n], n = root, self.parent[n]
        return root

    def device(self, n: int) -> DeviceAttr | None:
        fixed = self.fixed[self.find(n)]
        return fixed.device if fixed else None

    def fix(self, n: int, device: DeviceAttr, origin: str, at: Operation, what: str) -> None:
        root = self.find(n)
        current = self.fixed[root]
        if current is None:
            self.fixed[root] = Fixed(device, origin)
        elif current.device != device:
            self._conflict(at, what, Fixed(device, origin), current)

    def unify(self, a: int, b: int, at: Operation, what: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        fa, fb = self.fixed[ra], self.fixed[rb]
        if fa is not None and fb is not None and fa.device != fb.device:
            self._conflict(at, what, fa, fb)
            return
        self.parent[rb] = ra
        self.fixed[ra] = fa or fb
        sa, sb = self.signature[ra], self.signature[rb]
        if sa is None:
            self.signature[ra] = sb
        elif sb is not None:
            for x, y in zip(sa[0] + sa[1], sb[0] + sb[1], strict=False):
                self.unify(x, y, at, what + " (function signature)")

    def _conflict(self, at: Operation, what: str, new: Fixed, old: Fixed) -> None:
        self.conflicts.append(
            Diagnostic(
                f"'{at.name}' op device conflict for {what}: {attr_syntax(new.device)} "
                f"(from {new.origin}) vs {attr_syntax(old.device)} (from {old.origin}); "
                "no copy can reconcile them (a graph.device_copy makes the change explicit)",
                at,
            )
        )


@dataclass(frozen=True)
class Use:
    """A tensor operand that must be on `slot`'s device (else a copy bridges it)."""

    value: SSAValue
    slot: int
    op: Operation
    index: int
    order: int
    def_order: int


# ---------------------------------------------------------------------------
# Building the constraints
# ---------------------------------------------------------------------------


@dataclass
class Planner:
    module: ModuleOp
    uf: Unifier = field(default_factory=Unifier)
    values: dict[SSAValue, int] = field(default_factory=dict)
    sigs: dict[str, tuple[list[int | None], list[int | None]]] = field(default_factory=dict)
    uses: list[Use] = field(default_factory=list)
    order: dict[Operation, int] = field(default_factory=dict)
    op_slot: dict[Operation, int] = field(default_factory=dict)
    """Op → the variable its `device` reports (where it runs / its first tensor value)."""
    errors: list[Diagnostic] = field(default_factory=list)

    # -- entry ----------------------------------------------------------------------

    def build(self) -> None:
        self._check_device(self.module, self.module.attributes.get(DEFAULT_DEVICE_ATTR_NAME))
        funcs = [op for op in self.module.ops if isinstance(op, graph.FuncOp)]
        for index, op in enumerate(self.module.walk()):
            self.order[op] = index
        for func in funcs:
            self._signature(func)
        for func in funcs:
            if not func.is_declaration:
                for arg, var in zip(func.args, self.sigs[func.sym_name.data][0], strict=True):
                    if var is not None:
                        self.values[arg] = var
                self._block(func.body.block, func)

    def _check_device(self, op: Operation, device: Attribute | None) -> DeviceAttr | None:
        if device is None:
            return None
        if not isinstance(device, DeviceAttr):
            self.errors.append(
                Diagnostic(
                    f"'{op.name}' op expected a #lamina.device, got {attr_syntax(device)}", op
                )
            )
            return None
        known = known_device_kinds()
        if device.kind.data not in known:
            self.errors.append(
                Diagnostic(
                    f"'{op.name}' op unknown device kind '{device.kind.data}' in "
                    f"{attr_syntax(device)} (known kinds: {', '.join(sorted(known))})",
                    op,
                )
            )
            return None
        return device

    def _signature(self, func: graph.FuncOp) -> None:
        inputs, outputs = func.signature
        params = [self.uf.for_type(t) for t in inputs]
        results = [self.uf.for_type(t) for t in outputs]
        name = func.sym_name.data
        for key, vars_, what in (
            ("arg_attrs", params, "parameter"),
            ("res_attrs", results, "result"),
        ):
            attrs = func.properties.get(key)
            if not isinstance(attrs, ArrayAttr):
                continue
            for i, (entry, var) in enumerate(zip(attrs.data, vars_, strict=False)):
                raw = (
                    entry.data.get(DEVICE_ATTR_NAME) if isinstance(entry, DictionaryAttr) else None
                )
                device = self._check_device(func, raw)
                if device is None or var is None:
                    continue
                if self.uf.signature[var] is not None:
                    self.errors.append(
                        Diagnostic(
                            f"'graph.func' op {what} #{i} of @{name} is a function value; "
                            "a function value has no device (its parameters and results do)",
                            func,
                        )
                    )
                    continue
                origin = f"`device` of {what} #{i} of @{name} ({_where(func)})"
                self.uf.fix(var, device, origin, func, f"{what} #{i} of @{name}")
        self.sigs[name] = (params, results)

    # -- bodies ---------------------------------------------------------------------

    def _block(self, block: Block, func: graph.FuncOp) -> None:
        for op in block.ops:
            self._op(op, func)

    def _var(self, value: SSAValue) -> int | None:
        if value not in self.values:
            var = self.uf.for_type(value.type)
            if var is None:
                return None
            self.values[value] = var
        return self.values[value]

    def _def_order(self, value: SSAValue) -> int:
        if isinstance(value, OpResult):
            return self.order.get(value.op, 0)
        owner = value.block.parent_op() if isinstance(value, BlockArgument) else None
        return self.order.get(owner, 0) if owner is not None else 0

    def _use(self, value: SSAValue, slot: int | None, op: Operation, index: int) -> None:
        """Operand `index` of `op` must be on `slot`'s device: a copyable use for a
        tensor, an equality for a function value (function values are not copied)."""
        var = self._var(value)
        if var is None or slot is None:
            return
        if self.uf.signature[var] is not None or self.uf.signature[slot] is not None:
            self.uf.unify(slot, var, op, f"function value operand #{index}")
            return
        self.uses.append(Use(value, slot, op, index, self.order.get(op, 0), self._def_order(value)))

    def _fix_prop(self, op: Operation, var: int | None, what: str) -> None:
        """An explicit `device` on `op` fixes `var`."""
        device = self._check_device(op, op.properties.get("device"))
        if device is not None and var is not None:
            self.uf.fix(var, device, f"`device` of {_where(op)}", op, what)

    def _op(self, op: Operation, func: graph.FuncOp) -> None:
        match op:
            case graph.OnDeviceOp():
                self._on_device(op)
            case graph.DeviceCopyOp():
                self._device_copy(op)
            case graph.CallOp():
                callee = lookup_symbol(op, op.callee)
                params, results = self.sigs.get(callee.sym_name.data, ([], []))  # type: ignore[union-attr]
                self._call_like(op, list(op.arguments), params, results)
            case graph.InvokeOp():
                fn = self._var(op.fn)
                params, results = self.uf.signature[fn] if fn is not None else ([], [])  # type: ignore[misc]
                self._call_like(op, list(op.arguments), params, results, first=1)
            case graph.ClosureOp():
                self._closure(op)
            case graph.ReturnOp():
                results = self.sigs[func.sym_name.data][1]
                for i, value in enumerate(op.arguments):
                    self._use(value, results[i], op, i)
                self._first_slot(op, results)
            case graph.DataflowOp():
                self._dataflow(op, func)
            case _ if op.has_trait(graph.GraphCompute) or isinstance(op, KERNEL_OPS):
                self._kernel(op)
            case _:
                pass

    def _first_slot(self, op: Operation, slots: Sequence[int | None]) -> None:
        """A pass-through op reports (and an explicit `device` fixes) its first tensor slot."""
        first = next((s for s in slots if s is not None and self.uf.signature[s] is None), None)
        if first is not None:
            self.op_slot[op] = first
            self._fix_prop(op, first, "its first tensor value")

    def _kernel(self, op: Operation) -> None:
        var = self.uf.new()
        self.op_slot[op] = var
        self._fix_prop(op, var, "the op")
        for result in op.results:
            if isinstance(result.type, TensorType):
                self.values[result] = var
        for i, value in enumerate(op.operands):
            if isinstance(value.type, TensorType):
                self._use(value, var, op, i)

    def _on_device(self, op: graph.OnDeviceOp) -> None:
        var = self._var(op.input)
        assert var is not None
        self.values[op.result] = var
        device = self._check_device(op, op.device)
        if device is not None:
            self.uf.fix(var, device, f"{_where(op)}", op, "its operand")

    def _device_copy(self, op: graph.DeviceCopyOp) -> None:
        src = self._check_device(op, op.src)
        dst = self._check_device(op, op.dst)
        self._check_device(op, op.device)
        if src is not None and src == dst:
            self.errors.append(
                Diagnostic(
                    f"'{op.name}' op copies from {attr_syntax(src)} to the same device; "
                    "remove the copy (or give a different dst)",
                    op,
                )
            )
        var, out = self._var(op.input), self.uf.new()
        self.values[op.result] = out
        self.op_slot[op] = out
        if src is not None and var is not None:
            self.uf.fix(var, src, f"`src` of {_where(op)}", op, "its operand (`src`)")
        if dst is not None:
            self.uf.fix(out, dst, f"`dst` of {_where(op)}", op, "its result (`dst`)")

    def _call_like(
        self,
        op: Operation,
        args: Sequence[SSAValue],
        params: Sequence[int | None],
        results: Sequence[int | None],
        first: int = 0,
    ) -> None:
        for i, (value, slot) in enumerate(zip(args, params, strict=False)):
            self._use(value, slot, op, i + first)
        for result, var in zip(op.results, results, strict=False):
            if var is None:
                continue
            mine = self.values.get(result)
            if mine is None:
                self.values[result] = var
            else:
                self.uf.unify(var, mine, op, f"result #{result.index}")  # type: ignore[attr-defined]
        tensor_results = [self.values.get(r) for r in op.results]
        self._first_slot(op, [*tensor_results, *params])

    def _closure(self, op: graph.ClosureOp) -> None:
        callee = lookup_symbol(op, op.callee)
        params, results = self.sigs.get(callee.sym_name.data, ([], []))  # type: ignore[union-attr]
        k = len(op.captures)
        for i, value in enumerate(op.captures):
            self._use(value, params[i] if i < len(params) else None, op, i)
        rest = [p for p in params[k:] if p is not None]
        var = self.uf.new((rest, [r for r in results if r is not None]))
        mine = self.values.get(op.result)
        self.values[op.result] = var
        if mine is not None:
            self.uf.unify(var, mine, op, "the closure")
        self._first_slot(op, params[:k])

    def _dataflow(self, op: graph.DataflowOp, func: graph.FuncOp) -> None:
        self._block(op.body.block, func)
        output = op.body.block.last_op
        assert isinstance(output, graph.OutputOp)
        slots = []
        for result, value in zip(op.results, output.outputs, strict=True):
            var = self._var(value)
            slots.append(var)
            if var is not None:
                self.values[result] = var
        self._first_slot(op, slots)
        if op in self.op_slot:
            self.op_slot[output] = self.op_slot[op]

    # -- placing the free variables -------------------------------------------------

    def resolve(self, default: DeviceAttr) -> None:
        """Give every free variable a device: fewest copies over the whole module,
        ties broken toward the first-consumer rule (`_first_consumer`)."""
        uf = self.uf
        prefer = self._first_consumer(default)
        free = sorted(prefer)
        fixed = {
            n: d
            for n in range(len(uf.parent))
            if uf.find(n) == n and uf.signature[n] is None and (d := uf.device(n)) is not None
        }
        order = sorted({*fixed.values(), *prefer.values()}, key=attr_syntax)
        chosen = min_copies.choose(self.copy_values(), fixed, free, prefer, order)
        for n in free:
            uf.fix(n, chosen[n], "the fewest copies", self.module, "")  # type: ignore[arg-type]

    def copy_values(self) -> list[min_copies.Value]:
        """Each copyable value (an `on_device` is its operand) with the variables reading it."""
        readers: dict[SSAValue, tuple[int, set[int]]] = {}
        for use in self.uses:
            value = _root_value(use.value)
            home = self.uf.find(self.values[use.value])
            readers.setdefault(value, (home, set()))[1].add(self.uf.find(use.slot))
        return [min_copies.Value(home, frozenset(r)) for home, r in readers.values()]

    def _first_consumer(self, default: DeviceAttr) -> dict[int, DeviceAttr]:
        """The greedy placement of the free variables (the tie-break of `resolve`),
        computed on the side: the unifier is left as it was."""
        uf = self.uf
        saved = list(uf.fixed)
        backward = sorted(self.uses, key=lambda u: (-u.def_order, u.order, u.index))
        forward = sorted(self.uses, key=lambda u: (u.order, u.index))
        while True:
            changed = True
            while changed:
                changed = False
                for use in backward:
                    var = self.values[use.value]
                    device = uf.device(use.slot)
                    if uf.device(var) is None and device is not None:
                        uf.fix(var, device, "its first consumer", use.op, "")
                        changed = True
            progress = False
            for use in forward:
                device = uf.device(self.values[use.value])
                if uf.device(use.slot) is None and device is not None:
                    uf.fix(use.slot, device, "its first operand", use.op, "")
                    progress = True
            if not progress:
                break
        prefer = {
            n: uf.device(n) or default
            for n in range(len(uf.parent))
            if uf.find(n) == n and uf.signature[n] is None and saved[n] is None
        }
        uf.fixed[:] = saved
        return prefer


# ---------------------------------------------------------------------------
# Writing the plan into the IR
# ---------------------------------------------------------------------------


def _root_value(value: SSAValue) -> SSAValue:
    """Look through `graph.on_device` (which is removed): the value that really exists."""
    while isinstance(value, OpResult) and isinstance(value.op, graph.OnDeviceOp):
        value = value.op.input
    return value


def _dominates(op: Operation, user: Operation) -> bool:
    """Is `op` before `user` in `op`'s block or in a region nested in it (graph
    functions are single blocks, so this is dominance)?"""
    block = op.parent_block()
    while user is not None and user.parent_block() is not block:
        user = user.parent_op()  # type: ignore[assignment]
    return user is not None and user is not op and op.is_before_in_block(user)


@dataclass
class Writer:
    planner: Planner
    copies: dict[tuple[SSAValue, DeviceAttr], SSAValue] = field(default_factory=dict)
    block_starts: dict[Block, Operation] = field(default_factory=dict)

    @property
    def uf(self) -> Unifier:
        return self.planner.uf

    def write(self) -> int:
        """Insert the copies, set devices, drop `graph.on_device`; return the copy count."""
        for use in self.planner.uses:
            self._bridge(use)
        for op, var in self.planner.op_slot.items():
            device = self.uf.device(var)
            if device is not None and not isinstance(op, graph.OnDeviceOp):
                op.properties["device"] = device
        for func in self.planner.module.ops:
            if isinstance(func, graph.FuncOp):
                self._signature(func)
        for op in list(self.planner.module.walk()):
            if isinstance(op, graph.OnDeviceOp):
                op.result.replace_all_uses_with(op.input)
                Rewriter.erase_op(op)
        return len(self.copies)

    def _bridge(self, use: Use) -> None:
        """One copy per (value, destination device), right after the value's producer."""
        have = self.uf.device(self.planner.values[use.value])
        want = self.uf.device(use.slot)
        if have is None or want is None or have == want:
            return
        value = _root_value(use.value)
        key = (value, want)
        if key not in self.copies:
            found = self._existing_copy(value, want, use.op)
            if found is not None:
                use.op.operands[use.index] = found
                return
            copy = graph.DeviceCopyOp(value, have, want)
            copy.properties["device"] = want
            copy.location = use.op.location
            copy.result.name_hint = value.name_hint
            self._insert_after_def(value, copy)
            self.copies[key] = copy.result
        use.op.operands[use.index] = self.copies[key]

    def _existing_copy(self, value: SSAValue, dst: DeviceAttr, user: Operation) -> SSAValue | None:
        """A `graph.device_copy` of `value` to `dst` already in the IR before `user`
        (from the user, or from an earlier plan): reused, never duplicated."""
        for use in value.uses:
            copy = use.operation
            if isinstance(copy, graph.DeviceCopyOp) and copy.dst == dst and _dominates(copy, user):
                return copy.result
        return None

    def _insert_after_def(self, value: SSAValue, copy: Operation) -> None:
        if isinstance(value, OpResult):
            Rewriter.insert_op(copy, InsertPoint.after(value.op))
            return
        assert isinstance(value, BlockArgument)
        block = value.block
        last = self.block_starts.get(block)
        point = InsertPoint.after(last) if last is not None else InsertPoint.at_start(block)
        Rewriter.insert_op(copy, point)
        self.block_starts[block] = copy

    def _signature(self, func: graph.FuncOp) -> None:
        params, results = self.planner.sigs[func.sym_name.data]

        def devices(vars_: Sequence[int | None]) -> list[DeviceAttr | None]:
            return [
                self.uf.device(v) if v is not None and self.uf.signature[v] is None else None
                for v in vars_
            ]

        inputs, outputs = func.signature
        arg_attrs = with_device(func.arg_attrs, len(inputs), devices(params))
        res_attrs = with_device(func.res_attrs, len(outputs), devices(results))
        if arg_attrs is not None:
            func.properties["arg_attrs"] = arg_attrs
        if res_attrs is not None:
            func.properties["res_attrs"] = res_attrs


# ---------------------------------------------------------------------------
# The pass
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PlanDevicesPass(LaminaPass):
    """Place every tensor on a device by unification; insert copies where values cross devices.

    Input invariant: phase optimization (closures name top-level functions).
    Constraints: `graph.on_device` (operand and result on its device),
    `graph.device_copy` (operand on `src`, result on `dst`), `device` on any
    graph op, `device` in `arg_attrs`/`res_attrs`, calls (results are the
    callee's results, across the whole call graph, recursion included),
    closures and `graph.invoke` (a function value's parameter/result devices
    unify with every function it may be), and `lamina.default_device`.

    Choice (for whatever no constraint places): the devices that need the
    fewest `graph.device_copy` ops over the whole module (one copy per value
    and foreign device it is read on; copies are counted, not bytes). Among
    plans with that many copies, the one agreeing most with the
    first-consumer rule: a value lives where its first consumer (in program
    order) runs, an op still unplaced runs where its first operand lives,
    and what nothing connects to a placed value goes on
    `lamina.default_device` (default `#lamina.device<"cpu", 0>`). Exact for
    two devices (a minimum cut) and for groups of free values with at most
    `lamina.core.min_copies.EXACT_LIMIT` labellings; otherwise a local
    optimum under alpha-beta swaps, never worse than the first-consumer
    rule (docs/devices.md).

    Output IR: `device` on every graph op that runs on or passes tensors
    (compute ops, constants, kernel calls, `graph.device_copy` = its `dst`;
    for `graph.call`/`invoke`/`closure`/`return`/`dataflow`/`output`, which
    pass values through, the device of their first tensor value); `device`
    in `arg_attrs`/`res_attrs` of every tensor parameter and result of every
    `graph.func` (function-typed parameters carry none: their parameters
    and results are placed where the functions they may be are).
    `graph.device_copy` is inserted exactly where a use needs a value on
    another device than the one it lives on. Minimality: one copy per
    (value, destination device), placed right after the value's producer
    (at the top of the function for a parameter) and shared by every use on
    that device; no copy where the devices agree. `graph.on_device` is
    removed (after planning its device is always implied by the producer's
    `device` or the parameter's `arg_attrs`).

    Invariants: idempotent (planning a planned module changes nothing);
    every tensor operand of a compute op/kernel call lives on the op's
    device; explicit `graph.device_copy` ops are kept. Errors (located, all
    reported at once): an equality between two devices (e.g. an op's
    `device` contradicting an `on_device` of its result, a `device_copy`
    whose `src` is not where its operand lives, `on_device` of a parameter
    fixed elsewhere, function values whose device signatures disagree),
    an unknown device kind, a `device_copy` whose `src` equals its `dst`.
    """

    name = "plan-devices"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.OPTIMIZATION})
    requires: ClassVar[tuple[str, ...]] = ("lift-lambdas",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        planner = Planner(op)
        planner.build()
        problems = planner.errors + planner.uf.conflicts
        if problems:
            raise DiagnosticError(problems)
        planner.resolve(get_default_device(op))
        Writer(planner).write()


__all__ = ["PlanDevicesPass"]
