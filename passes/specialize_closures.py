"""`specialize-closures`: resolve every statically known function value to direct calls.

Host code has no function values, so before `lower-graph` every
`graph.invoke` must become a `graph.call` of a known function (Relay's
defunctionalization / specialization of higher-order functions). After
`lift-lambdas`, every function value starts as a `graph.closure @g(captures)`;
this pass follows it to where it is used:

1. invoke of a closure: the call of its function, captures first::

       %f = graph.closure @g(%w) : ...          %r = graph.call @g(%w, %x)
       %r = graph.invoke %f(%x) : ...     ⇒

2. a call passing a closure: a call of a clone of the callee specialized for
   that closure target, whose function-typed parameter became the closure's
   captures (new leading parameters) and which rebuilds the closure inside,
   where rule 1 (or 2, for a closure passed on) resolves its uses::

       %r = graph.call @apply(%f, %x)     ⇒    %r = graph.call @apply__spec_g_0(%w, %x)

       graph.func @apply__spec_g_0(%w: T, %x: T) -> T {
         %f = graph.closure @g(%w) : ...
         %y = graph.invoke %f(%x) ...             // ⇒ graph.call @g(%w, %x)

3. a call of a function returning a closure built in its body: a call of a
   clone returning the captures instead, and the closure rebuilt after it.

A closure leaving a `graph.dataflow` block is rebuilt after the block first.
The rules are applied to a fixpoint, which also resolves closures flowing
through several calls, closures capturing closures and nested higher-order
functions; a bound on the functions made stops recursive ones that would
not converge. Anything else (a function-typed parameter of a function
nobody calls, a function value chosen at run time) is left as is;
`lower-graph` reports it at the op (`describe_function_value` says what and
why).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    ModuleOp,
    StringAttr,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.core.phase_invariants import has_unit, in_codegen, is_tracked_pure_func
from lamina.dialects.graph import (
    CallOp,
    ClosureOp,
    DataflowOp,
    FnType,
    FuncOp,
    InvokeOp,
    OutputOp,
    ReturnOp,
)
from lamina.dialects.lamina import Phase

# ---------------------------------------------------------------------------
# Where a function value comes from
# ---------------------------------------------------------------------------


def closure_of(value: SSAValue) -> ClosureOp | None:
    """The `graph.closure` that `value` is, if any (a closure leaving a dataflow
    block is first rebuilt after it: `ClosureOutOfDataflow`)."""
    owner = value.owner
    return owner if isinstance(owner, ClosureOp) else None


def _function_of(value: SSAValue) -> FuncOp | None:
    block = value.owner if isinstance(value, BlockArgument) else None
    parent = block.parent_op() if isinstance(block, Block) else None
    return parent if isinstance(parent, FuncOp) else None


def _callers(func: FuncOp) -> list[CallOp]:
    module = func.parent_op()
    if module is None:
        return []
    name = func.sym_name.data
    return [
        op
        for op in module.walk()
        if isinstance(op, CallOp) and op.callee.root_reference.data == name
    ]


def describe_function_value(value: SSAValue) -> str:
    """Where the function value `value` comes from and why it has no static callee.

    Used by `lower-graph`'s diagnostics for what this pass left unresolved.
    """
    owner = value.owner
    if isinstance(value, BlockArgument):
        func = _function_of(value)
        if func is None:
            return f"argument #{value.index} of a block"
        name = func.sym_name.data
        why = (
            "which its callers pass a function value that is not a known graph.closure"
            if _callers(func)
            else f"and no graph.call in the module calls @{name}, so the value would come "
            "from outside the program (an entry function cannot take a function value)"
        )
        return f"parameter #{value.index} of @{name}, {why}"
    assert isinstance(value, OpResult)
    if isinstance(owner, ClosureOp):
        return f"a graph.closure of @{owner.callee.root_reference.data}"
    if isinstance(owner, CallOp):
        return (
            f"result #{value.index} of the call of @{owner.callee.root_reference.data}, "
            "which does not return a graph.closure built in its body"
        )
    if isinstance(owner, InvokeOp):
        return f"result #{value.index} of a graph.invoke whose own callee is unknown"
    if isinstance(owner, DataflowOp):
        return f"result #{value.index} of a graph.dataflow block that does not output a closure"
    return f"result #{value.index} of '{owner.name}', chosen at run time"


# ---------------------------------------------------------------------------
# Module state: symbol names, memoized clones, bookkeeping for clean-up
# ---------------------------------------------------------------------------


def is_internal(func: FuncOp) -> bool:
    """A function with a function-typed parameter or result is not an entry point."""
    inputs, outputs = func.signature
    return any(isinstance(t, FnType) for t in (*inputs, *outputs))


@dataclass
class Specializations:
    """Functions this pass made, memoized by what they were made for."""

    module: ModuleOp
    max_new_functions: int
    funcs: dict[str, FuncOp] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)
    memo: dict[tuple, str] = field(default_factory=dict)
    created: set[str] = field(default_factory=set)
    last_made: dict[str, Operation] = field(default_factory=dict)
    """Original → the last function made from it (clones follow it in creation order)."""

    def __post_init__(self) -> None:
        for op in self.module.ops:
            sym = op.properties.get("sym_name") or op.attributes.get("sym_name")
            if isinstance(sym, StringAttr):
                self.taken.add(sym.data)
            if isinstance(op, FuncOp):
                self.funcs[op.sym_name.data] = op

    def lookup(self, ref: SymbolRefAttr) -> FuncOp | None:
        func = self.funcs.get(ref.root_reference.data)
        return func if func is not None and func.parent_op() is self.module else None

    def fresh(self, base: str) -> str:
        """`<base>_<N>` with the smallest N not yet a symbol of the module."""
        index = 0
        while f"{base}_{index}" in self.taken:
            index += 1
        name = f"{base}_{index}"
        self.taken.add(name)
        return name

    def can_create(self) -> bool:
        return len(self.created) < self.max_new_functions

    def name_for(self, key: tuple, make: Callable[[], str]) -> str | None:
        """The function already made for `key`, else `make()` one; None once the cap is hit."""
        if key in self.memo:
            return self.memo[key]
        return make() if self.can_create() else None

    def add(self, func: FuncOp, origin: FuncOp, rewriter: PatternRewriter, key: tuple) -> str:
        """Insert `func` after `origin` and the functions made from it before (the
        walker then visits it) and memoize it."""
        name = func.sym_name.data
        anchor = self.last_made.get(origin.sym_name.data, origin)
        rewriter.insert(func, InsertPoint.after(anchor))
        self.last_made[origin.sym_name.data] = func
        self.funcs[name] = func
        self.created.add(name)
        self.memo[key] = name
        return name


def _replace_call(
    rewriter: PatternRewriter,
    op: Operation,
    callee: str,
    operands: Sequence[SSAValue],
    result_types: Sequence[Attribute],
) -> CallOp:
    """A `graph.call` taking over `op`'s place, location, device and attributes."""
    call = CallOp(callee, operands, result_types, device=op.properties.get("device"))
    call.location = op.location
    call.attributes |= op.attributes
    rewriter.insert(call, InsertPoint.before(op))
    return call


# ---------------------------------------------------------------------------
# Rule 1: invoke of a closure
# ---------------------------------------------------------------------------


def _needs_pure_call(op: Operation) -> bool:
    """Must a call at `op` be pure (phase invariants 9 and 10)?"""
    current = op.parent_op()
    while current is not None and not isinstance(current, FuncOp):
        if isinstance(current, DataflowOp):
            return True
        current = current.parent_op()
    return current is not None and is_tracked_pure_func(current)


@dataclass
class InvokeOfClosure(RewritePattern):
    """`graph.invoke (graph.closure @g(c...))(a...)` ⇒ `graph.call @g(c..., a...)`.

    An invoke marked `pure` of an `impure` function, where the call must be
    pure (in a pure function or a dataflow block), calls a `force_pure`
    wrapper `@g__pure_<N>` instead: `pure` asserted the call is effect-free.
    """

    state: Specializations

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: InvokeOp, rewriter: PatternRewriter, /):
        closure = closure_of(op.fn)
        if closure is None or in_codegen(op):
            return
        callee = closure.callee.root_reference.data
        target = self.state.lookup(closure.callee)
        if has_unit(op, "pure") and target is not None and has_unit(target, "impure"):
            if _needs_pure_call(op):
                callee = self._pure_wrapper(target, rewriter)
        operands = [*closure.captures, *op.arguments]
        call = _replace_call(rewriter, op, callee, operands, op.res.types)
        rewriter.replace(op, [], call.results)

    def _pure_wrapper(self, target: FuncOp, rewriter: PatternRewriter) -> str:
        key = ("pure", target.sym_name.data)
        if key in self.state.memo:
            return self.state.memo[key]
        inputs, outputs = target.signature
        wrapper = FuncOp(self.state.fresh(f"{target.sym_name.data}__pure"), (inputs, outputs))
        wrapper.properties["force_pure"] = UnitAttr()
        wrapper.location = target.location
        entry = wrapper.body.block
        if not target.is_declaration:
            for arg, param in zip(entry.args, target.args, strict=True):
                arg.name_hint = param.name_hint
        call = CallOp(target.sym_name.data, entry.args, outputs)
        entry.add_ops([call, ReturnOp(*call.results)])
        return self.state.add(wrapper, target, rewriter, key)


@dataclass
class DeadClosure(RewritePattern):
    """A `graph.closure` nobody uses any more is erased (creating it runs nothing)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ClosureOp, rewriter: PatternRewriter, /):
        if not op.result.uses and not in_codegen(op):
            rewriter.erase(op)


@dataclass
class ClosureOutOfDataflow(RewritePattern):
    """A closure a `graph.dataflow` block outputs is rebuilt after the block,
    which outputs the captures instead::

        %f = graph.dataflow -> !graph.fn<...> {     %v = graph.dataflow -> T {
          %v = graph.neg %w ...                        %v = graph.neg %w ...
          %c = graph.closure @g(%v) ...       ⇒        graph.output %v : T
          graph.output %c : !graph.fn<...>           }
        }                                            %f = graph.closure @g(%v) ...

    so that the closure is known where the block's result is used.
    """

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: DataflowOp, rewriter: PatternRewriter, /):
        output = op.body.block.last_op
        if not isinstance(output, OutputOp) or in_codegen(op):
            return
        inner = [
            (i, closure)
            for i, value in enumerate(output.operands)
            if (closure := closure_of(value)) is not None
        ]
        if not inner:
            return
        index, closure = inner[0]
        kept = [v for i, v in enumerate(output.operands) if i != index]
        outputs = [*kept, *closure.captures]
        rewriter.insert(OutputOp(*outputs), InsertPoint.before(output))
        rewriter.erase(output)
        region = rewriter.move_region_contents_to_new_regions(op.body)
        block = DataflowOp([v.type for v in outputs], region, device=op.device)
        block.location = op.location
        captured = block.res[len(kept) :]
        kept_results = [r for r in op.res if r.index != index]
        for new, old in zip(block.res, [*kept_results, *closure.captures], strict=True):
            new.name_hint = old.name_hint
        rebuilt = ClosureOp(closure.callee, captured, closure.result.type)
        rebuilt.location = closure.location
        rewriter.insert([block, rebuilt], InsertPoint.before(op))
        results: list[SSAValue] = list(block.res[: len(kept)])
        results.insert(index, rebuilt.result)
        rewriter.replace(op, [], results)


# ---------------------------------------------------------------------------
# Rule 2: a call passing closures
# ---------------------------------------------------------------------------


@dataclass
class SpecializeCallee(RewritePattern):
    """`graph.call @h(..., closure @g(c...), ...)` ⇒ `graph.call @h__spec_g_<N>(c..., ...)`.

    The clone of @h takes the captures of each closure argument as new
    leading parameters (in parameter order) in place of the function-typed
    parameter, and rebuilds the closure at the top of its body. One clone
    per (callee, closure-argument positions and targets).
    """

    state: Specializations

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CallOp, rewriter: PatternRewriter, /):
        callee = self.state.lookup(op.callee)
        if callee is None or callee.is_declaration or in_codegen(op) or in_codegen(callee):
            return
        known = {
            i: closure
            for i, value in enumerate(op.arguments)
            if (closure := closure_of(value)) is not None
        }
        if not known:
            return
        key = (
            "spec",
            callee.sym_name.data,
            tuple((i, c.callee.root_reference.data) for i, c in known.items()),
        )
        name = self.state.name_for(key, lambda: self._specialize(callee, known, rewriter, key))
        if name is None:
            return
        captured = [v for closure in known.values() for v in closure.captures]
        rest = [v for i, v in enumerate(op.arguments) if i not in known]
        call = _replace_call(rewriter, op, name, [*captured, *rest], op.res.types)
        rewriter.replace(op, [], call.results)

    def _specialize(
        self, callee: FuncOp, known: dict[int, ClosureOp], rewriter: PatternRewriter, key: tuple
    ) -> str:
        targets = "_".join(c.callee.root_reference.data for c in known.values())
        clone = callee.clone()
        clone.properties["sym_name"] = StringAttr(
            self.state.fresh(f"{callee.sym_name.data}__spec_{targets}")
        )
        entry = clone.body.block
        old_params = list(entry.args)
        closures: list[Operation] = []
        position = 0
        for i, closure in known.items():
            captures = []
            for value in closure.captures:
                param = entry.insert_arg(value.type, position)
                param.name_hint = value.name_hint
                captures.append(param)
                position += 1
            fn_type = old_params[i].type
            assert isinstance(fn_type, FnType)
            rebuilt = ClosureOp(closure.callee, captures, fn_type)
            rebuilt.result.name_hint = old_params[i].name_hint
            rebuilt.location = clone.location
            old_params[i].replace_all_uses_with(rebuilt.result)
            closures.append(rebuilt)
        for i in sorted(known, reverse=True):
            entry.erase_arg(old_params[i])
        entry.insert_ops_before(closures, entry.first_op)  # type: ignore[arg-type]
        clone.update_function_type()
        if callee.arg_attrs is not None:
            kept = [a for i, a in enumerate(callee.arg_attrs.data) if i not in known]
            clone.properties["arg_attrs"] = ArrayAttr([DictionaryAttr({})] * position + kept)
        return self.state.add(clone, callee, rewriter, key)


# ---------------------------------------------------------------------------
# Rule 3: a call of a function returning closures
# ---------------------------------------------------------------------------


def returned_closures(func: FuncOp) -> dict[int, ClosureOp]:
    """Results of `func` that are a `graph.closure` built in its body (visible at its return)."""
    ret = func.get_return_op()
    if ret is None:
        return {}
    return {
        i: closure
        for i, value in enumerate(ret.arguments)
        if isinstance(value.type, FnType) and (closure := closure_of(value)) is not None
    }


@dataclass
class UnboxReturnedClosure(RewritePattern):
    """`%f = graph.call @mk(...)` where @mk returns `graph.closure @g(c...)` ⇒
    `%c... = graph.call @mk__ret_<N>(...)`, `%f = graph.closure @g(%c...)`.

    The clone of @mk returns the captures in place of each such closure. A
    capture that is a parameter of @mk is taken from the call's own
    arguments instead; a pure call none of whose results is left in use is
    erased (so returning a closure over parameters costs no copy).
    """

    state: Specializations

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CallOp, rewriter: PatternRewriter, /):
        callee = self.state.lookup(op.callee)
        if callee is None or callee.is_declaration or in_codegen(op) or in_codegen(callee):
            return
        boxed = returned_closures(callee)
        if not boxed:
            return
        key = (
            "ret",
            callee.sym_name.data,
            tuple((i, c.callee.root_reference.data) for i, c in boxed.items()),
        )
        name = self.state.name_for(key, lambda: self._unbox(callee, rewriter, key))
        if name is None:
            return
        result_types: list[Attribute] = []
        for i, value in enumerate(op.res):
            closure = boxed.get(i)
            result_types += closure.captures.types if closure is not None else [value.type]
        call = _replace_call(rewriter, op, name, op.arguments, result_types)
        new_ops: list[Operation] = [call]
        values: list[SSAValue] = []
        results = iter(call.results)
        for i, value in enumerate(op.res):
            closure = boxed.get(i)
            if closure is None:
                values.append(next(results))
                continue
            captures = [
                self._forwarded(original, callee, op, next(results))
                for original in closure.captures
            ]
            for capture, original in zip(captures, closure.captures, strict=True):
                if capture.owner is call:
                    capture.name_hint = original.name_hint
            assert isinstance(value.type, FnType)
            rebuilt = ClosureOp(closure.callee, captures, value.type)
            rebuilt.location = op.location
            new_ops.append(rebuilt)
            values.append(rebuilt.result)
        rewriter.insert(new_ops[1:], InsertPoint.after(call))
        rewriter.replace(op, [], values)
        if callee.is_pure and not any(r.uses for r in call.results):
            rewriter.erase(call)

    @staticmethod
    def _forwarded(capture: SSAValue, callee: FuncOp, call: CallOp, returned: SSAValue) -> SSAValue:
        """The call's own argument for `capture` if it is a parameter of `callee`,
        else the value the unboxed call returns for it."""
        if isinstance(capture, BlockArgument) and capture.block is callee.body.block:
            return call.arguments[capture.index]
        return returned

    def _unbox(self, callee: FuncOp, rewriter: PatternRewriter, key: tuple) -> str:
        clone = callee.clone()
        clone.properties["sym_name"] = StringAttr(self.state.fresh(f"{callee.sym_name.data}__ret"))
        ret = clone.get_return_op()
        assert ret is not None
        boxed = returned_closures(clone)
        values: list[SSAValue] = []
        res_attrs: list[DictionaryAttr] = []
        old_attrs = callee.res_attrs.data if callee.res_attrs is not None else None
        for i, value in enumerate(ret.arguments):
            closure = boxed.get(i)
            values += closure.captures if closure is not None else [value]
            if old_attrs is not None:
                res_attrs += (
                    [DictionaryAttr({})] * len(closure.captures)
                    if closure is not None
                    else [old_attrs[i]]
                )
        new_ret = ReturnOp(*values)
        new_ret.location = ret.location
        ret.parent_block().insert_op_before(new_ret, ret)  # type: ignore[union-attr]
        ret.detach()
        ret.erase()
        clone.update_function_type()
        if old_attrs is not None:
            clone.properties["res_attrs"] = ArrayAttr(res_attrs)
        return self.state.add(clone, callee, rewriter, key)


# ---------------------------------------------------------------------------
# Clean-up and the pass
# ---------------------------------------------------------------------------


def _symbol_refs(attr: Attribute) -> Iterable[str]:
    if isinstance(attr, SymbolRefAttr):
        yield attr.root_reference.data
    elif isinstance(attr, ArrayAttr):
        for item in attr.data:
            yield from _symbol_refs(item)
    elif isinstance(attr, DictionaryAttr):
        for item in attr.data.values():
            yield from _symbol_refs(item)


def referenced_symbols(op: Operation) -> set[str]:
    """Every symbol name `op` or an op nested in it refers to."""
    names: set[str] = set()
    for inner in op.walk():
        for attr in (*inner.properties.values(), *inner.attributes.values()):
            names.update(_symbol_refs(attr))
    return names


def remove_unreferenced(module: ModuleOp, state: Specializations) -> None:
    """Erase the internal functions and clones that no entry point reaches.

    Removable: clones this pass made and, if the module has an entry point
    (a defined function over tensors only), internal functions (a function-typed
    parameter or result), which no caller outside the module can call.
    Every other top-level op is live, and so is what a live op refers to
    (a recursive function referring only to itself is not). A module
    without entry points keeps its functions: `lower-graph` reports the
    function values they hold.
    """
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, FuncOp)}
    has_entry = any(
        n not in state.created and not f.is_declaration and not is_internal(f)
        for n, f in funcs.items()
    )
    removable = {
        name
        for name, func in funcs.items()
        if name in state.created or (has_entry and is_internal(func))
    }
    pending = [
        name
        for op in module.ops
        if not (isinstance(op, FuncOp) and op.sym_name.data in removable)
        for name in referenced_symbols(op)
    ]
    live: set[str] = set()
    while pending:
        name = pending.pop()
        if name in removable and name not in live:
            live.add(name)
            pending += referenced_symbols(funcs[name])
    for name in sorted(removable - live):
        module.body.block.erase_op(funcs[name])


def resolve_invokes(module: ModuleOp, only: Callable[[Operation], bool] | None = None) -> None:
    """Rule 1 alone: every invoke of a known closure becomes a direct call
    (and dead closures go). `lower-graph` runs it on what legalize exposed,
    `only` in the top-level ops that are not kernels (`core/locations.py`)."""
    state = Specializations(module, max_new_functions=0)
    locating_walker(
        GreedyRewritePatternApplier([InvokeOfClosure(state), DeadClosure()], dce_enabled=False),
        only=only,
    ).rewrite_module(module)


@dataclass(frozen=True)
class SpecializeClosuresPass(LaminaPass):
    """Resolve statically known function values: invoke → call, higher-order functions specialized.

    Input invariant: phase optimization (after `lift-lambdas`: every function
    value starts as a `graph.closure` of a top-level `graph.func`).
    Output IR: rewritten to a fixpoint (a closure a `graph.dataflow` block
    outputs is rebuilt after it, the block outputting its captures),
    (1) every `graph.invoke` of a value that is a `graph.closure @g(c...)` is a
    `graph.call @g(c..., args...)` (a `pure` invoke of an `impure` @g where
    the call must be pure calls a `force_pure` wrapper `@g__pure_<N>`);
    (2) a `graph.call @h` passing closures is a call of
    `@h__spec_<g...>_<N>`, a clone of @h made once per (callee, closure
    positions and targets) whose function-typed parameters became the
    captures (new leading parameters) and whose body rebuilds the closures;
    (3) a `graph.call @mk` of a function returning a `graph.closure` built
    in its body is a call of `@mk__ret_<N>`, which returns the captures,
    followed by the rebuilt closure (captures that are parameters of @mk
    are the call's own arguments; a pure call left without used results is
    erased). Unused closures are erased. Functions
    that no entry point (a function over tensors only, always kept)
    reaches are erased if this pass made them or if they are internal (a
    function-typed parameter or result: not callable from outside), the
    latter only in a module that has an entry point. At most
    `max-new-functions` (256) functions are made (a bound for recursive
    higher-order functions). Function values that cannot be resolved are
    left for `lower-graph` to report at the op.
    Invariants: the phase stays optimization; every entry point keeps its
    name and meaning (the reference evaluator gives the same results);
    compute ops are only added in clones and only removed with unreachable
    functions.
    Pipeline: not in docs/design.md §4; our addition to the default pipeline, right
    after `cse` in phase optimization (statically known callees
    compile).
    """

    name = "specialize-closures"
    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.OPTIMIZATION})
    requires: ClassVar[tuple[str, ...]] = ("lift-lambdas",)

    max_new_functions: int = 256

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        state = Specializations(op, self.max_new_functions)
        patterns: list[RewritePattern] = [
            ClosureOutOfDataflow(),
            InvokeOfClosure(state),
            SpecializeCallee(state),
            UnboxReturnedClosure(state),
            DeadClosure(),
        ]
        locating_walker(GreedyRewritePatternApplier(patterns, dce_enabled=False)).rewrite_module(op)
        remove_unreferenced(op, state)


__all__ = [
    "SpecializeClosuresPass",
    "closure_of",
    "describe_function_value",
    "resolve_invokes",
]
