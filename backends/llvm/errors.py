"""Runtime errors of generated code: how a failing kernel stops and says why.

Generated code cannot raise a Python exception, must not abort the process,
and must stay cheap when nothing fails. The mechanism (run at the end of
`lower-to-llvm`, `insert_error_exits`):

* every compiled module that can fail defines two globals::

      lamina_error         : i64       = 0   // address of the first error's message, 0 = none
      lamina_error_values  : [4 x i64] = 0   // integers the message refers to as {0}..{3}

* an **error site** records its message (a constant C string, a
  `str.format` template such as "index ({0}, {1}) out of bounds") and up to
  four runtime values in those globals, then returns from the function at
  once (a zero result if it has one). Sites are the NULL check after every
  heap allocation (`aligned_alloc` calls carrying `lamina.error`) and the
  `loop.call @__lamina_error_<k>(values...)` calls that `check-bounds` emits
  (their templates are in the module attribute `lamina.error_messages`);
* every call of a function that may fail (transitively, including the
  outlined bodies run by `GOMP_parallel`) is followed by one load and
  branch: if `lamina_error` is set, the caller returns too. Only calls that
  can fail pay for it, and only one load each.

The caller (`Executable.run`, `runtime.JitFunction`, or C code calling a
`.so`) reads `lamina_error` after the call; `raise_pending_error` formats
the message, clears the globals and raises `LaminaRuntimeError`. The globals
are process-wide per compiled module: a failure in one thread can make a
concurrent call of the same module stop early too (it then also reports the
error); calls that do not fail are unaffected.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xdsl.dialects import llvm
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseIntOrFPElementsAttr,
    DictionaryAttr,
    IntegerAttr,
    IntegerType,
    ModuleOp,
    StringAttr,
    TensorType,
    i64,
)
from xdsl.ir import Block, Operation, SSAValue

from lamina.core.walk import preorder  # noqa: E402 - beside the import below
from lamina.runtime.error_globals import (  # noqa: E402 - shared with cache hits
    ERROR_SYMBOL,
    MAX_VALUES,
    VALUES_SYMBOL,
    pending_error,
)

ERROR_ATTR = "lamina.error"
"""On an `llvm.call @aligned_alloc`: the message if it returns NULL."""
FAIL_PREFIX = "__lamina_error_"
"""Callee prefix of a call that stands for "fail with message k and these values"."""
MESSAGES_ATTR = "lamina.error_messages"
FAILING_DECLARATIONS_ATTR = "lamina.failing_declarations"
"""Module attribute: declared functions that may fail (kernels compiled by an earlier
compile, backends/kernel_reuse.py); calls of them are checked as calls of a failing
definition are."""
"""Module attribute: fail callee name → message template."""
GOMP_PARALLEL = "GOMP_parallel"
_PTR = llvm.LLVMPointerType()


# ---------------------------------------------------------------------------
# Declaring error sites (used by the passes that create them)
# ---------------------------------------------------------------------------


def function_name(op: Operation) -> str:
    """The name of the function (`loop.func` or `llvm.func`) that contains `op`."""
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        name = parent.attributes.get("sym_name") or parent.properties.get("sym_name")
        if isinstance(name, StringAttr):
            return name.data
        parent = parent.parent_op()
    return "?"


def alloc_message(op: Operation, size: int) -> str:
    """What a failed heap allocation of `op`'s buffer says."""
    name = op.results[0].name_hint
    buffer = f"buffer %{name}" if name else "a buffer"
    return (
        f"kernel @{function_name(op)}: cannot allocate {buffer} of type {op.results[0].type} "
        f"({size} bytes): out of memory"
    )


def register_failure(module: ModuleOp, message: str) -> str:
    """The callee name standing for `message` (a `str.format` template) in `module`."""
    existing = module.attributes.get(MESSAGES_ATTR)
    entries = dict(existing.data) if isinstance(existing, DictionaryAttr) else {}
    for name, text in entries.items():
        if isinstance(text, StringAttr) and text.data == message:
            return name
    name = f"{FAIL_PREFIX}{len(entries)}"
    entries[name] = StringAttr(message)
    module.attributes[MESSAGES_ATTR] = DictionaryAttr(entries)
    return name


# ---------------------------------------------------------------------------
# Lowering the sites (end of lower-to-llvm)
# ---------------------------------------------------------------------------


def _callee(op: Operation) -> str | None:
    if isinstance(op, llvm.CallOp) and op.callee is not None:
        return op.callee.string_value()
    return None


def _is_site(op: llvm.CallOp) -> bool:
    return (_callee(op) or "").startswith(FAIL_PREFIX) or (
        ERROR_ATTR in op.attributes  # an allocation: NULL means it failed
    )


@dataclass
class _Scan:
    """What `_ErrorLowering` reads of a function, found in one walk of it."""

    sites: list[llvm.CallOp]
    """Its error sites (calls of a failure function, allocations), in order."""
    callees: set[str]
    """The functions it calls, directly or as the body handed to `GOMP_parallel`."""


def _scan(func: llvm.FuncOp) -> _Scan:
    """`func`'s error sites and callees in one walk, comparing op classes (`llvm.CallOp`
    and `llvm.AddressOfOp` have no subclasses): two walks (sites, then callees) with an
    `isinstance` per op and class each were 5 % of lower-to-llvm's time."""
    calls: list[llvm.CallOp] = []
    addresses: list[llvm.AddressOfOp] = []
    for op in preorder(func):
        kind = type(op)
        if kind is llvm.CallOp:
            calls.append(op)  # pyright: ignore[reportArgumentType]
        elif kind is llvm.AddressOfOp:
            addresses.append(op)  # pyright: ignore[reportArgumentType]
    callees = {_callee(op) for op in calls}
    if GOMP_PARALLEL in callees:
        callees |= {op.global_name.string_value() for op in addresses}
    return _Scan([op for op in calls if _is_site(op)], {c for c in callees if c})


class _ErrorLowering:
    """Rewrites one module's error sites and the checks after calls that may fail."""

    def __init__(self, module: ModuleOp):
        self.module = module
        self.funcs = [op for op in module.ops if isinstance(op, llvm.FuncOp) and op.body.blocks]
        attr = module.attributes.get(MESSAGES_ATTR)
        self.templates = {
            k: v.data
            for k, v in (attr.data.items() if isinstance(attr, DictionaryAttr) else ())
            if isinstance(v, StringAttr)
        }
        self.strings: dict[str, str] = {}
        declared = module.attributes.get(FAILING_DECLARATIONS_ATTR)
        self.failing_declarations = {
            a.data for a in (declared.data if isinstance(declared, ArrayAttr) else ())
            if isinstance(a, StringAttr)
        }  # fmt: skip

    def run(self) -> None:
        scans = {func: _scan(func) for func in self.funcs}
        sites = {func: scan.sites for func, scan in scans.items()}
        if any(sites.values()) or self.failing_declarations:
            self._declare_globals()  # globals only: the functions' scans still hold
            may_fail = self._may_fail({f for f, s in sites.items() if s}, scans)
            for func, calls in sites.items():
                for call in calls:
                    self._lower_site(func, call)
            for func in self.funcs:
                if func in may_fail:
                    self._check_calls(func, may_fail)
        for op in list(self.module.ops):
            if isinstance(op, llvm.FuncOp) and op.sym_name.data.startswith(FAIL_PREFIX):
                self.module.body.block.erase_op(op)
        self.module.attributes.pop(MESSAGES_ATTR, None)
        self.module.attributes.pop(FAILING_DECLARATIONS_ATTR, None)

    # -- analysis --------------------------------------------------------------

    def _may_fail(
        self, failing: set[llvm.FuncOp], scans: dict[llvm.FuncOp, _Scan]
    ) -> set[llvm.FuncOp]:
        """Functions with an error site, and (transitively) those that call one."""
        names = {f.sym_name.data: f for f in self.funcs}
        callees = {f: scans[f].callees for f in self.funcs if f not in failing}
        changed = True
        while changed:
            changed = False
            for func in self.funcs:
                if func not in failing and any(
                    names.get(c) in failing or c in self.failing_declarations for c in callees[func]
                ):
                    failing.add(func)
                    changed = True
        return failing

    # -- rewriting ---------------------------------------------------------------

    def _declare_globals(self) -> None:
        block = self.module.body.block
        values = DenseIntOrFPElementsAttr.from_list(TensorType(i64, [MAX_VALUES]), [0] * MAX_VALUES)
        new = [
            llvm.GlobalOp(i64, ERROR_SYMBOL, "weak", value=IntegerAttr(0, i64)),
            llvm.GlobalOp(
                llvm.LLVMArrayType(MAX_VALUES, i64),
                VALUES_SYMBOL,
                "weak",
                value=values,
            ),
        ]
        block.insert_ops_before(new, block.first_op) if block.first_op else block.add_ops(new)

    def _message_global(self, text: str) -> str:
        if text not in self.strings:
            name = f"lamina_error_message_{len(self.strings)}"
            raw = text.encode() + b"\0"
            glob = llvm.GlobalOp(
                llvm.LLVMArrayType(len(raw), IntegerType(8)),
                name,
                "internal",
                constant=True,
                value=StringAttr(raw.decode()),
            )
            block = self.module.body.block
            if block.first_op is None:
                block.add_op(glob)
            else:
                block.insert_op_before(glob, block.first_op)
            self.strings[text] = name
        return self.strings[text]

    def _record(self, block: Block, message: str, values: Sequence[SSAValue]) -> None:
        """Append to `block`: store `values` and the message's address into the globals."""
        ops: list[Operation] = []
        if values:
            base = llvm.AddressOfOp(VALUES_SYMBOL, _PTR)
            ops.append(base)
            for index, value in enumerate(values[:MAX_VALUES]):
                if value.type != i64:
                    ext = llvm.SExtOp(value, i64)
                    ops.append(ext)
                    value = ext.res
                gep = llvm.GEPOp(base, [index], i64)
                ops += [gep, llvm.StoreOp(value, gep.result)]
        msg = llvm.AddressOfOp(self._message_global(message), _PTR)
        addr = llvm.PtrToIntOp(msg.result, i64)
        flag = llvm.AddressOfOp(ERROR_SYMBOL, _PTR)
        # The flag last, after a compiler barrier: LLVM may not move the values' stores
        # after it, and x86 keeps the order of stores, so a thread that sees the flag
        # set sees the values too. (An atomic release store would say it in LLVM's
        # terms, but xDSL's `llvm.store` drops its ordering in print and parse.)
        barrier = llvm.InlineAsmOp("", "~{memory}", [], has_side_effects=True)
        ops += [barrier, msg, addr, flag, llvm.StoreOp(addr.output, flag.result)]
        block.add_ops(ops)

    @staticmethod
    def _return(func: llvm.FuncOp, block: Block) -> None:
        output = func.function_type.output
        if isinstance(output, llvm.LLVMVoidType):
            block.add_op(llvm.ReturnOp())
        else:
            zero = llvm.ZeroOp(result_types=[output])
            block.add_ops([zero, llvm.ReturnOp(zero.res)])

    def _lower_site(self, func: llvm.FuncOp, call: llvm.CallOp) -> None:
        block = call.parent_block()
        assert block is not None
        name = _callee(call) or ""
        if name.startswith(FAIL_PREFIX):
            # Record and return: the rest of the block is never reached.
            template = self.templates.get(
                name, f"kernel @{func.sym_name.data}: runtime check failed"
            )
            args = list(call.args)
            for op in list(block.ops)[::-1]:
                if op is call:
                    break
                block.erase_op(op)
            block.erase_op(call)
            self._record(block, template, args)
            self._return(func, block)
            return
        message = call.attributes.pop(ERROR_ATTR)
        assert isinstance(message, StringAttr) and call.next_op is not None
        assert call.returned is not None, "an allocation site returns its pointer"
        rest = block.split_before(call.next_op)
        failed = Block()
        as_int = llvm.PtrToIntOp(call.returned, i64)
        zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
        is_null = llvm.ICmpOp(as_int.output, zero.result, _predicate("eq"))
        block.add_ops([as_int, zero, is_null, llvm.CondBrOp(is_null.res, failed, [], rest, [])])
        func.body.add_block(failed)
        self._record(failed, message.data, [])
        self._return(func, failed)

    def _check_calls(self, func: llvm.FuncOp, may_fail: set[llvm.FuncOp]) -> None:
        """After each call that may fail: return at once if the callee reported an error."""
        failing_names = {f.sym_name.data for f in may_fail} | self.failing_declarations
        calls = [
            op
            for op in preorder(func)
            if isinstance(op, llvm.CallOp)
            and (_callee(op) in failing_names or _callee(op) == GOMP_PARALLEL)
        ]
        if not calls:
            return
        exit_block = Block()
        self._return(func, exit_block)
        func.body.add_block(exit_block)
        for call in calls:
            block = call.parent_block()
            assert block is not None and call.next_op is not None
            rest = block.split_before(call.next_op)
            flag = llvm.AddressOfOp(ERROR_SYMBOL, _PTR)
            value = llvm.LoadOp(flag.result, i64)
            zero = llvm.ConstantOp(IntegerAttr(0, i64), i64)
            failed = llvm.ICmpOp(value.dereferenced_value, zero.result, _predicate("ne"))
            block.add_ops(
                [flag, value, zero, failed, llvm.CondBrOp(failed.res, exit_block, [], rest, [])]
            )


def _predicate(name: str) -> IntegerAttr[IntegerType]:
    return IntegerAttr(llvm.ICmpPredicateFlag(name).to_int(), i64)


_pending: weakref.WeakKeyDictionary[ModuleOp, Callable[[ModuleOp], None]] = (
    weakref.WeakKeyDictionary()
)


def defer_failing_declarations(module: ModuleOp, resolve: Callable[[ModuleOp], None]) -> None:
    """Have `resolve(module)` complete `FAILING_DECLARATIONS_ATTR` right before
    `insert_error_exits` reads it, the last moment it is needed: a lowering process
    (backends/parallel_lowering.py) says which of its kernels can fail only when it is
    done, and `lower-to-llvm`'s rewriting of everything else need not wait for it."""
    _pending[module] = resolve


def insert_error_exits(module: ModuleOp) -> None:
    """Lower every error site of a build-phase module and the checks after failing calls."""
    resolve = _pending.pop(module, None)
    if resolve is not None:
        resolve(module)
    _ErrorLowering(module).run()


# ---------------------------------------------------------------------------
# Reading an error back (Python side)
# ---------------------------------------------------------------------------


def error_addresses(engine, module: ModuleOp | None = None) -> tuple[int, int] | None:
    """Addresses of the error globals in a JIT `engine`, or None if the module cannot fail."""
    if module is not None and not any(
        isinstance(op, llvm.GlobalOp) and op.sym_name.data == ERROR_SYMBOL for op in module.ops
    ):
        return None
    if module is None and not engine.get_global_value_address(ERROR_SYMBOL):
        return None
    return (
        engine.get_global_value_address(ERROR_SYMBOL),
        engine.get_global_value_address(VALUES_SYMBOL),
    )


__all__ = [
    "ERROR_ATTR",
    "ERROR_SYMBOL",
    "FAILING_DECLARATIONS_ATTR",
    "MESSAGES_ATTR",
    "alloc_message",
    "error_addresses",
    "insert_error_exits",
    "pending_error",
    "register_failure",
]
