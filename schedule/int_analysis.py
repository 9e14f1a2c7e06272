"""Integer facts about `index` values in loop code, for `simplify` (docs/layouts.md).

The analyzer plays the role of TVM's `arith::Analyzer`: it knows

* ranges: constants, `loop.for` induction variables (from their bounds),
  `addi`/`subi`/`muli`/`divui`/`remui`/`floordivsi`/`remsi`/`select`/`minsi`/
  `maxsi`, narrowed by `loop.assume` conditions that dominate the query;
* linear forms: a value as `sum(coef * atom) + const` over opaque SSA atoms,
  so that two differently built expressions can be compared (the guard a
  kernel computes vs. the padding condition a buffer's constraint implies).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import gcd

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr, IntegerType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue

from lamina.dialects import loop

UNBOUNDED = 1 << 62


@dataclass(frozen=True)
class Range:
    lo: int
    hi: int

    @property
    def const(self) -> int | None:
        return self.lo if self.lo == self.hi else None


FULL = Range(-UNBOUNDED, UNBOUNDED)

LinearForm = tuple[tuple[tuple[SSAValue, int], ...], int]
"""(((atom, coef), ...) sorted by id, const)."""


def int_constant(value: SSAValue) -> int | None:
    """The value of an integer/index `arith.constant` (i1 as 0/1)."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


class Analyzer:
    """Ranges and linear forms of index/integer values (memoised per run)."""

    def __init__(self) -> None:
        self._ranges: dict[SSAValue, Range] = {}

    # -- linear forms --------------------------------------------------------------

    def linear(self, value: SSAValue) -> LinearForm:
        coefs: dict[SSAValue, int] = {}
        const = self._collect(value, 1, coefs)
        terms = tuple(sorted(((a, c) for a, c in coefs.items() if c), key=lambda t: id(t[0])))
        return terms, const

    def _collect(self, value: SSAValue, scale: int, coefs: dict[SSAValue, int]) -> int:
        c = int_constant(value)
        if c is not None:
            return scale * c
        op = value.owner
        if isinstance(op, arith.AddiOp):
            return self._collect(op.lhs, scale, coefs) + self._collect(op.rhs, scale, coefs)
        if isinstance(op, arith.SubiOp):
            return self._collect(op.lhs, scale, coefs) + self._collect(op.rhs, -scale, coefs)
        if isinstance(op, arith.MuliOp):
            for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
                k = int_constant(b)
                if k is not None:
                    return self._collect(a, scale * k, coefs)
        coefs[value] = coefs.get(value, 0) + scale
        return 0

    # -- ranges --------------------------------------------------------------------

    def range(self, value: SSAValue, at: Operation | None = None) -> Range:
        """The range of `value`; with `at`, narrowed by assumes dominating `at`
        (for `value` and everything it is computed from)."""
        assumes = tuple(_dominating_assumes(at)) if at is not None else ()
        if not assumes:
            return self._base_range(value)
        memo: dict[SSAValue, Range] = {}

        def narrowed(v: SSAValue) -> Range:
            if v not in memo:
                memo[v] = FULL
                r = self._compute(v, narrowed)
                for cond in assumes:
                    r = _narrow(r, v, cond, self)
                memo[v] = r
            return memo[v]

        return narrowed(value)

    def _base_range(self, value: SSAValue) -> Range:
        if value in self._ranges:
            return self._ranges[value]
        self._ranges[value] = FULL  # cycles (iter_args) stay unbounded
        result = self._compute(value, self._base_range)
        self._ranges[value] = result
        return result

    def _compute(self, value: SSAValue, r) -> Range:
        c = int_constant(value)
        if c is not None:
            return Range(c, c)
        if isinstance(value, BlockArgument):
            return self._block_arg_range(value)
        op = value.owner
        if not isinstance(value.type, IndexType | IntegerType):
            return FULL
        if isinstance(op, arith.AddiOp):
            a, b = r(op.lhs), r(op.rhs)
            return _clip(Range(a.lo + b.lo, a.hi + b.hi))
        if isinstance(op, arith.SubiOp):
            a, b = r(op.lhs), r(op.rhs)
            return _clip(Range(a.lo - b.hi, a.hi - b.lo))
        if isinstance(op, arith.MuliOp):
            a, b = r(op.lhs), r(op.rhs)
            products = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
            return _clip(Range(min(products), max(products)))
        if isinstance(op, arith.DivUIOp | arith.FloorDivSIOp | arith.DivSIOp):
            a, k = r(op.lhs), int_constant(op.rhs)
            if k and k > 0 and (a.lo >= 0 or isinstance(op, arith.FloorDivSIOp)):
                return Range(a.lo // k, a.hi // k)
        if isinstance(op, arith.RemUIOp | arith.RemSIOp):
            a, k = r(op.lhs), int_constant(op.rhs)
            if k and k > 0 and a.lo >= 0:
                return Range(a.lo, a.hi) if a.hi < k else Range(0, k - 1)
        if isinstance(op, arith.SelectOp):
            a, b = r(op.lhs), r(op.rhs)
            return Range(min(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(op, arith.MinSIOp):
            a, b = r(op.lhs), r(op.rhs)
            return Range(min(a.lo, b.lo), min(a.hi, b.hi))
        if isinstance(op, arith.MaxSIOp):
            a, b = r(op.lhs), r(op.rhs)
            return Range(max(a.lo, b.lo), max(a.hi, b.hi))
        if isinstance(value.type, IntegerType) and value.type.width.data == 1:
            return Range(0, 1)
        return FULL

    def divisor(self, value: SSAValue) -> int:
        """A positive number `value` is always a multiple of: a constant's own
        value, a loop variable's gcd of its constant lower bound and step (a
        column block's offset, `for jo = 0 to N step 32`), else 1."""
        c = int_constant(value)
        if c is not None:
            return abs(c) or 1
        if isinstance(value, BlockArgument) and value.index == 0:
            parent = value.block.parent_op()
            if isinstance(parent, loop.ForOp):
                lb, step = int_constant(parent.lb), int_constant(parent.step)
                if lb is not None and step:
                    return gcd(lb, step) or 1
        return 1

    def _block_arg_range(self, arg: BlockArgument) -> Range:
        parent = arg.block.parent_op()
        if isinstance(parent, loop.ForOp) and arg.index == 0:
            lb, ub = self._base_range(parent.lb), self._base_range(parent.ub)
            if ub.hi - 1 < lb.lo:
                return Range(lb.lo, lb.lo)
            step, first = int_constant(parent.step), lb.const
            if step and step > 1 and first is not None:
                # The last iteration: `for i = 1 to 55 step 9` ends at 46, not 54.
                return Range(first, first + (ub.hi - 1 - first) // step * step)
            return Range(lb.lo, ub.hi - 1)
        return FULL

    # -- predicates ----------------------------------------------------------------

    def decide(self, cmp: arith.CmpiOp) -> bool | None:
        """True/False when the comparison has one outcome on every execution."""
        pred = PREDICATES[cmp.predicate.value.data]
        a, b = self.range(cmp.lhs, cmp), self.range(cmp.rhs, cmp)
        if pred in ("eq", "ne"):
            if a.const is not None and a.const == b.const:
                return pred == "eq"
            if a.hi < b.lo or b.hi < a.lo:
                return pred == "ne"
            return None
        if pred.startswith("u") and (a.lo < 0 or b.lo < 0):
            return None
        op = pred[1:]
        if op == "lt":
            return True if a.hi < b.lo else False if a.lo >= b.hi else None
        if op == "le":
            return True if a.hi <= b.lo else False if a.lo > b.hi else None
        if op == "gt":
            return True if a.lo > b.hi else False if a.hi <= b.lo else None
        return True if a.lo >= b.hi else False if a.hi < b.lo else None


PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def _clip(r: Range) -> Range:
    return Range(max(r.lo, -UNBOUNDED), min(r.hi, UNBOUNDED))


def _dominating_assumes(op: Operation):
    """Conditions of `loop.assume`s before `op` in its block or an enclosing one.

    Asked for every compared or folded index of `simplify` and the schedules:
    each query scans the ops before it, so the scan follows the block's links and
    compares classes (`_is_assume`) instead of `isinstance` against an op class
    (`ABCMeta`'s check), the same ops in the same order."""
    current: Operation | None = op
    while current is not None:
        block: Block | None = current.parent
        if block is None:
            return
        other = block.first_op
        while other is not None and other is not current:
            kind = type(other)
            if _ASSUME_CLASSES.get(kind) or (kind not in _ASSUME_CLASSES and _is_assume(kind)):
                yield other.cond  # pyright: ignore[reportAttributeAccessIssue]
            other = other.next_op
        current = block.parent_op()


_ASSUME_CLASSES: dict[type, bool] = {}
"""Op class → whether it is a `loop.assume` (a subclass too), decided once per class."""


def _is_assume(kind: type) -> bool:
    _ASSUME_CLASSES[kind] = answer = issubclass(kind, loop.AssumeOp)
    return answer


def _narrow(base: Range, value: SSAValue, cond: SSAValue, an: Analyzer) -> Range:
    """`base` narrowed by an assumed `cond` (a `cmpi` of `value` with a constant,
    or a conjunction of such)."""
    op = cond.owner
    if isinstance(op, arith.AndIOp):
        return _narrow(_narrow(base, value, op.lhs, an), value, op.rhs, an)
    if not isinstance(op, arith.CmpiOp):
        return base
    pred = PREDICATES[op.predicate.value.data]
    if op.lhs is value and (k := int_constant(op.rhs)) is not None:
        return _apply_bound(base, pred, k)
    if op.rhs is value and (k := int_constant(op.lhs)) is not None:
        flipped = {"slt": "sgt", "sle": "sge", "sgt": "slt", "sge": "sle"}
        return _apply_bound(base, flipped.get(pred, pred), k)
    return base


def _apply_bound(base: Range, pred: str, k: int) -> Range:
    lo, hi = base.lo, base.hi
    match pred.lstrip("su") if pred not in ("eq", "ne") else pred:
        case "lt":
            hi = min(hi, k - 1)
        case "le":
            hi = min(hi, k)
        case "gt":
            lo = max(lo, k + 1)
        case "ge":
            lo = max(lo, k)
        case "eq":
            lo, hi = max(lo, k), min(hi, k)
    if pred.startswith("u"):
        lo = max(lo, 0)
    return Range(lo, hi) if lo <= hi else base
