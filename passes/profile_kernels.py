"""`profile-kernels`: time every kernel call of the entry functions (a profiling build).

`lamina.compile(..., profile=True)` and `lamina-run --profile` append it
after `lower-to-llvm`; without them nothing of it is in the code, so an
ordinary build pays nothing. Each call of a kernel (an internal function
defined in the module) from a non-internal function (an entry, or a
dynamic-batch body) gets a slot ``k`` in one global array::

    llvm.call @te_conv(...)                %t0 = llvm.call @lamina_profile_now()
                                  ──▶      llvm.call @te_conv(...)
                                           %slot = llvm.getelementptr @lamina_profile[2k]
                                           llvm.call @lamina_profile_add(%slot, %t0)

`lamina_profile_now` reads `clock_gettime(CLOCK_MONOTONIC)` in nanoseconds
(a vDSO call, ~20 ns); `lamina_profile_add` adds the elapsed time to slot
``2k`` and one to slot ``2k+1``. The constant string `lamina_profile_table`
names each slot's kernel, how many parallel regions (`GOMP_parallel`
calls, through the functions it calls) the kernel opens per call, the
fewest iterations one of them shares among the threads (0: not constant)
and what the call site runs (`site_label`: an imported model's node names),
one line ``symbol<TAB>regions<TAB>iterations<TAB>site`` per slot, so the reader needs nothing but the loaded
code (a disk-cache hit or an artifact too): `runtime/profile.py` reads
both, `Executable.profile` reports them (docs/performance.md, Profiling).

Counters are plain loads and stores: concurrent calls of one profiled
module from several Python threads may lose counts.
"""

from __future__ import annotations

from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    CallSiteLoc,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    FileLineColLoc,
    FusedLoc,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    NameLoc,
    StringAttr,
    TensorType,
    i32,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from lamina.backends.llvm.parallel import GOMP_PARALLEL, ITERATIONS_ATTR
from lamina.core.pass_base import LaminaPass
from lamina.dialects.lamina import Phase
from lamina.runtime.profile import COUNTERS_SYMBOL, SITE_SEPARATOR, TABLE_SYMBOL

PROFILED_ATTR = "lamina.kernel_profile"
"""Module attribute: kernel → "regions<TAB>iterations" of its table row; set by
`reuse-kernels` for the kernels it declared (backends/kernel_reuse.py, the same name),
then by this pass for every kernel it times."""

NOW = "lamina_profile_now"
ADD = "lamina_profile_add"
CLOCK = "clock_gettime"
CLOCK_MONOTONIC = 1
PTR = llvm.LLVMPointerType()


def _callee(op: llvm.CallOp) -> str | None:
    return op.callee.string_value() if op.callee is not None else None


def _is_internal(func: llvm.FuncOp) -> bool:
    return func.linkage.linkage.data == "internal"


class _Module:
    """The functions of a module by name, and the parallel regions each opens per call."""

    def __init__(self, module: ModuleOp):
        self.funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, llvm.FuncOp)}
        self._regions: dict[str, int] = {}
        self._iterations: dict[str, list[int]] = {}

    def defined(self, name: str | None) -> llvm.FuncOp | None:
        func = self.funcs.get(name) if name is not None else None
        return func if func is not None and func.body.blocks else None

    def regions(self, name: str, active: frozenset[str] = frozenset()) -> int:
        """`GOMP_parallel` calls `name` makes per call, through the functions it calls
        (a call inside a loop counts once: the count is static)."""
        if name in self._regions:
            return self._regions[name]
        func = self.defined(name)
        if func is None or name in active:
            return 0
        count, iterations = 0, []
        for op in func.walk():
            if isinstance(op, llvm.CallOp):
                callee = _callee(op)
                if callee == GOMP_PARALLEL:
                    count += 1
                    trips = op.attributes.get(ITERATIONS_ATTR)
                    iterations.append(trips.value.data if isinstance(trips, IntegerAttr) else 0)
                elif callee is not None:
                    count += self.regions(callee, active | {name})
                    iterations += self._iterations.get(callee, [])
        self._regions[name], self._iterations[name] = count, iterations
        return count

    def fewest_iterations(self, name: str) -> int:
        """The smallest constant trip count of `name`'s parallel loops (0: none known):
        with few, the threads' shares are uneven."""
        self.regions(name)
        return min([n for n in self._iterations.get(name, []) if n] or [0])


class ProfileKernelsPass(LaminaPass):
    """Time every kernel call of the entry functions into a counter global (profiling build).

    Input invariant: the build phase (`lower-to-llvm` has run); entries are
    non-internal `llvm.func`s, kernels internal ones defined in the module.

    Output IR: each such call between `lamina_profile_now` and
    `lamina_profile_add` on its own slot of `@lamina_profile` (nanoseconds,
    calls); `@lamina_profile_table` names the slots' kernels, their
    parallel regions and the calls' source ops (`site_label`).

    Invariants: idempotent (a module that has `@lamina_profile` is left
    alone); a module without kernel calls is unchanged.
    """

    name = "profile-kernels"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.BUILD})
    requires: ClassVar[tuple[str, ...]] = ("lower-to-llvm",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        info = _Module(op)
        if COUNTERS_SYMBOL in {g.sym_name.data for g in op.ops if isinstance(g, llvm.GlobalOp)}:
            return
        reused = _reused(op)  # kernels reused from an earlier profiling build: declared
        sites = [
            call
            for func in info.funcs.values()
            if func.body.blocks and not _is_internal(func)
            for call in func.walk()
            if isinstance(call, llvm.CallOp)
            and (
                ((callee := info.defined(_callee(call))) is not None and _is_internal(callee))
                or _callee(call) in reused
            )
        ]
        if not sites:
            return
        lines, rows = [], {}
        for slot, call in enumerate(sites):
            name = _callee(call)
            assert name is not None
            _time_call(call, slot)
            row = reused.get(name) or f"{info.regions(name)}\t{info.fewest_iterations(name)}"
            rows[name] = StringAttr(row)
            lines.append(f"{name}\t{row}\t{site_label(call.location)}\n")
        op.body.block.add_ops([*_globals(len(sites), "".join(lines)), *_helpers(info)])
        op.attributes[PROFILED_ATTR] = DictionaryAttr(rows)  # for kernel_reuse.record_split


def site_label(loc: Attribute) -> str:
    """What a call site runs, for the profile: the names of its source ops
    (`loc("name")`: an imported model's node names), else their `file:line:col`s.

    The call's location is fused from its ops' in order (fuse-ops); names are kept
    in that order, without repeats.
    """
    names: list[str] = []
    places: list[str] = []
    _collect(loc, names, places)
    found = names or places
    clean = (" ".join(name.replace(SITE_SEPARATOR, " ").split()) for name in found)
    return SITE_SEPARATOR.join(dict.fromkeys(clean))


def _collect(loc: Attribute, names: list[str], places: list[str]) -> None:
    if isinstance(loc, NameLoc):
        names.append(loc.desc.data)
    elif isinstance(loc, FusedLoc) and isinstance(loc.locations, ArrayAttr):
        for inner in loc.locations.data:
            _collect(inner, names, places)
    elif isinstance(loc, CallSiteLoc):
        _collect(loc.callee, names, places)
    elif isinstance(loc, FileLineColLoc):
        file = loc.filename.data.rsplit("/", 1)[-1]
        places.append(f"{file}:{loc.line.data}:{loc.column.data}")


def _reused(module: ModuleOp) -> dict[str, str]:
    """Declared kernels reused from an earlier profiling build (backends/kernel_reuse.py):
    name → "regions<TAB>iterations" as recorded when they were lowered."""
    found = module.attributes.get(PROFILED_ATTR)
    if not isinstance(found, DictionaryAttr):
        return {}
    return {k: v.data for k, v in found.data.items() if isinstance(v, StringAttr)}


def _time_call(call: llvm.CallOp, slot: int) -> None:
    """Surround `call` with the clock reads that add its time to slot `slot`."""
    block = call.parent_block()
    assert block is not None
    start = llvm.CallOp(NOW, return_type=i64)
    block.insert_op_before(start, call)
    base = llvm.AddressOfOp(COUNTERS_SYMBOL, PTR)
    counter = llvm.GEPOp(base, [2 * slot], i64)
    add = llvm.CallOp(ADD, counter, start)
    block.insert_ops_after([base, counter, add], call)


def _globals(slots: int, table: str) -> list[Operation]:
    raw = table.encode() + b"\0"
    zeros = DenseIntOrFPElementsAttr.from_list(TensorType(i64, [2 * slots]), [0] * (2 * slots))
    return [
        llvm.GlobalOp(llvm.LLVMArrayType(2 * slots, i64), COUNTERS_SYMBOL, "weak", value=zeros),
        llvm.GlobalOp(
            llvm.LLVMArrayType(len(raw), IntegerType(8)),
            TABLE_SYMBOL,
            "weak",
            constant=True,
            value=StringAttr(raw.decode()),
        ),
    ]


def _helpers(info: _Module) -> list[Operation]:
    """`lamina_profile_now() -> i64` (ns) and `lamina_profile_add(ptr slot, i64 t0)`."""
    ops: list[Operation] = []
    if CLOCK not in info.funcs:
        ops.append(
            llvm.FuncOp(
                CLOCK,
                llvm.LLVMFunctionType([i32, PTR], i32),
                linkage=llvm.LinkageAttr("external"),
            )
        )
    now = _Block()
    two = now.add_op(llvm.ConstantOp(IntegerAttr(2, i64), i64))
    spec = now.add_op(llvm.AllocaOp(two, i64, 8))
    clock = now.add_op(llvm.ConstantOp(IntegerAttr(CLOCK_MONOTONIC, i32), i32))
    now.add_op(llvm.CallOp(CLOCK, clock, spec, return_type=i32))
    seconds = now.add_op(llvm.LoadOp(spec, i64, alignment=8))
    nanos_at = now.add_op(llvm.GEPOp(spec, [1], i64))
    nanos = now.add_op(llvm.LoadOp(nanos_at, i64, alignment=8))
    giga = now.add_op(llvm.ConstantOp(IntegerAttr(1_000_000_000, i64), i64))
    scaled = now.add_op(llvm.MulOp(seconds, giga))
    total = now.add_op(llvm.AddOp(scaled, nanos))
    now.add_op(llvm.ReturnOp(total))
    ops.append(_helper(NOW, llvm.LLVMFunctionType([], i64), now))

    add = _Block(arg_types=[PTR, i64])
    slot, start = add.args
    end = add.add_op(llvm.CallOp(NOW, return_type=i64))
    elapsed = add.add_op(llvm.SubOp(end, start))
    _accumulate(add, slot, elapsed)
    calls_at = add.add_op(llvm.GEPOp(slot, [1], i64))
    one = add.add_op(llvm.ConstantOp(IntegerAttr(1, i64), i64))
    _accumulate(add, calls_at, one)
    add.add_op(llvm.ReturnOp())
    ops.append(_helper(ADD, llvm.LLVMFunctionType([PTR, i64], llvm.LLVMVoidType()), add))
    return ops


def _helper(name: str, type: llvm.LLVMFunctionType, body: Block) -> llvm.FuncOp:
    """An internal helper of the entries, `alwaysinline`: it is part of the host's code,
    so a module compiled in units keeps it in the host unit, inlined at every call
    (backends/kernel_split.py), instead of taking it for a kernel."""
    inline = ArrayAttr([StringAttr("alwaysinline")])
    return llvm.FuncOp(name, type, body=Region(body), other_props={"passthrough": inline})


def _accumulate(block: _Block, at: SSAValue, amount: SSAValue) -> None:
    """`*at += amount` (an i64)."""
    old = block.add_op(llvm.LoadOp(at, i64, alignment=8))
    new = block.add_op(llvm.AddOp(old, amount))
    block.add_op(llvm.StoreOp(new, at, alignment=8))


class _Block(Block):
    """A block whose `add_op` returns the op's result, so helpers read as straight-line code."""

    def add_op(self, operation: Operation) -> SSAValue:  # pyright: ignore[reportIncompatibleMethodOverride]
        super().add_op(operation)
        # Callers use the value of ops that have one (a store's None goes unused).
        return operation.results[0] if operation.results else None  # pyright: ignore[reportReturnType]


__all__ = ["ProfileKernelsPass"]
