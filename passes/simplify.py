"""`simplify`: remove guards that integer facts and buffer constraints make redundant.

The loop-level simplifier of docs/layouts.md (TVM's `Simplify` with the
`BufferConstraint` facts in its `arith::Analyzer`). An integer analyzer
(`schedule/int_analysis.py`) knows ranges from loop bounds, constants, divisibility
(floordiv/mod by constants) and `loop.assume`; it also reads the
`#lamina.constraint` of the buffers a kernel touches (`loop.func` argument
attributes, `loop.alloc`). With it the pass

* folds `arith.cmpi` that always have one outcome, then `andi`/`ori`,
  `arith.select` and `loop.if` on the now-constant conditions;
* removes what `#lamina.undef` allows: `select(c, x, undef)` is `x` (the
  padding may hold anything, so it holds `x`) and a store of `loop.undef`
  is deleted -- the padding is not written at all;
* uses a read buffer's constraint: `select(c, load B[p], PAD)` (or
  `select(c, load B[p] * w, 0)` when PAD is 0) is just the load when every
  position where `c` fails is a padding slot of `B` -- B's producer already
  wrote PAD there. This is what lets a kernel rely on its producer without
  being fused with it (the padded channels of a blocked tensor need no
  predicate in a reduction).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from math import gcd
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IndexType, IntegerAttr, ModuleOp, i1
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import InsertPoint

from lamina.core.dead_ops import GreedyApplier
from lamina.core.locations import locating_walker
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, ConstraintAttr, Phase
from lamina.dialects.layout_maps import LayoutMapError, invert_map
from lamina.kernels.te_emit import ScalarEmitter
from lamina.schedule.int_analysis import PREDICATES, Analyzer, LinearForm, Range, int_constant


class FoldCmpi(RewritePattern):
    """`cmpi` whose outcome the ranges decide → an i1 constant."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.CmpiOp, rewriter: PatternRewriter, /):
        outcome = self.analyzer.decide(op)
        if outcome is not None:
            rewriter.replace(op, arith.ConstantOp(IntegerAttr(int(outcome), i1)))


class FoldIndexArith(RewritePattern):
    """An index `divui`/`remui`/`floordivsi`/`remsi`/`select`/`minsi`/`maxsi`
    whose range is one value → that constant (e.g. `i floordiv 8` for i < 8)."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /):
        if not isinstance(op, FOLDABLE_INDEX_OPS) or not isinstance(op.results[0].type, IndexType):
            return
        value = self.analyzer.range(op.results[0], op).const
        if value is not None:
            rewriter.replace(op, arith.ConstantOp(IntegerAttr(value, IndexType())))


class SplitDivMod(RewritePattern):
    """`(c*Q + R) / c` → `Q + R / c` and `(c*Q + R) % c` → `R % c` for a
    constant c > 0 and R ≥ 0; just `Q` and `R` when R < c.

    TVM's canonical div/mod simplification. Indices that a lowering computes
    from a flat position (a reshape reads `x[p / 784, (p / 28) % 28, p % 28]`
    with `p = 784 * i + j`) become affine in the loop variables again
    (`x[i, j / 28, j % 28]`), so that LLVM sees consecutive addresses in the
    vectorized loop instead of a gather (the 32x784 reshape of an MLP's
    input went from a per-element gather to a vector copy).
    """

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer

    @op_type_rewrite_pattern
    def match_and_rewrite(
        self,
        op: arith.DivUIOp | arith.RemUIOp | arith.FloorDivSIOp | arith.DivSIOp | arith.RemSIOp,
        rewriter: PatternRewriter,
        /,
    ):
        c = int_constant(op.rhs)
        if not c or c <= 0 or not isinstance(op.result.type, IndexType):
            return
        terms, const = self.analyzer.linear(op.lhs)
        # k*v is a multiple of c when k*d is, d a known divisor of v (a loop
        # variable stepping by a multiple of c: a column block's offset).
        divisors = {v: self.analyzer.divisor(v) for v, _ in terms}
        quotient = tuple((v, k) for v, k in terms if (k * divisors[v]) % c == 0)
        rest = tuple((v, k) for v, k in terms if (k * divisors[v]) % c)
        if not quotient:  # nothing to take out of the division: maybe a coarser step
            self._coarse(op, terms, const, c, rewriter)
            return
        if not rest and const == 0 and len(quotient) == 1 and quotient[0][1] % c:
            return  # `v / c` itself (v a multiple of c): already as split as it gets
        r = self._form_range(rest, const % c)
        floor = isinstance(op, arith.FloorDivSIOp)
        if r.lo < 0 or not (floor or self.analyzer.range(op.lhs, op).lo >= 0):
            return
        em = ScalarEmitter(Block())  # the new ops, moved before `op` below
        if isinstance(op, arith.RemUIOp | arith.RemSIOp):  # R (% c)
            result = em.affine(rest, const % c)
            if r.hi >= c:
                result = em.emit(type(op)(result, op.rhs))
        else:  # Q (+ R / c)
            result = em.affine([_exact_quotient(em, v, k, c) for v, k in quotient], const // c)
            if r.hi >= c:
                part = em.emit(type(op)(em.affine(rest, const % c), op.rhs))
                result = em.iadd(result, part)
        new_ops = list(em.block.ops)
        for new in new_ops:
            new.detach()
        rewriter.replace(op, new_ops, [result])

    def _coarse(self, op, terms, const: int, c: int, rewriter: PatternRewriter) -> None:
        """`(K*Q + R) / c` → `Q / (c/K)` and `(K*Q + R) % c` → `K*(Q % (c/K)) + R`
        for a step K dividing c and 0 <= R < K (the other terms and the constant).

        A flat position split by a coarser stride than its own: a channel
        shuffle reads channel `(784*i + 28*h + w) / 1568` of a 28x28 image,
        which is `i / 2` whatever `h` and `w` are (the vectorized `w` then
        reads consecutive addresses instead of gathering)."""
        if isinstance(op, arith.FloorDivSIOp | arith.DivSIOp | arith.RemSIOp):
            if self.analyzer.range(op.lhs, op).lo < 0:
                return
        for step in sorted({gcd(k, c) for _, k in terms if k > 0}, reverse=True):
            if step <= 1:
                return
            big = tuple((v, k // step) for v, k in terms if k % step == 0)
            rest = tuple((v, k) for v, k in terms if k % step)
            r = self._form_range(rest, const)
            if r.lo < 0 or r.hi >= step or any(self.analyzer.range(v).lo < 0 for v, _ in big):
                continue
            em = ScalarEmitter(Block())
            inner = type(op)(em.affine(big, 0), em.index(c // step))
            quotient = em.emit(inner)
            if isinstance(op, arith.RemUIOp | arith.RemSIOp):
                result = em.affine([(quotient, step), *rest], const)
            else:
                result = quotient
            new_ops = list(em.block.ops)
            for new in new_ops:
                new.detach()
            rewriter.replace(op, new_ops, [result])
            return

    def _form_range(self, terms, const: int) -> Range:
        lo = hi = const
        for value, k in terms:
            r = self.analyzer.range(value)
            lo, hi = lo + min(k * r.lo, k * r.hi), hi + max(k * r.lo, k * r.hi)
        return Range(lo, hi)


def _exact_quotient(em: ScalarEmitter, v: SSAValue, k: int, c: int) -> tuple[SSAValue, int]:
    """`k*v / c` as a term (value, coefficient), where it is exact: `(v, k/c)`,
    or `(v / (c/g), k/g)` with `g = gcd(k, c)` when v is a multiple of c/g."""
    if k % c == 0:
        return v, k // c
    g = gcd(k, c)
    return em.idiv(v, c // g), k // g


FOLDABLE_INDEX_OPS = (
    arith.DivUIOp, arith.RemUIOp, arith.FloorDivSIOp, arith.RemSIOp, arith.DivSIOp,
    arith.SelectOp, arith.MinSIOp, arith.MaxSIOp, arith.AddiOp, arith.MuliOp, arith.SubiOp,
)  # fmt: skip


class FoldBoolOps(RewritePattern):
    """`andi`/`ori` of i1 with a constant operand."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.AndIOp | arith.OrIOp, rewriter: PatternRewriter, /):
        if op.result.type != i1:
            return
        neutral = 1 if isinstance(op, arith.AndIOp) else 0
        for a, b in ((op.lhs, op.rhs), (op.rhs, op.lhs)):
            k = int_constant(a)
            if k is None:
                continue
            if (k & 1) == neutral:
                rewriter.replace(op, [], [b])
            else:
                rewriter.replace(op, arith.ConstantOp(IntegerAttr(k & 1, i1)))
            return


class FoldSelect(RewritePattern):
    """`select` on a constant condition, of two equal values, or with an undef side."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        k = int_constant(op.cond)
        if k is not None:
            rewriter.replace(op, [], [op.lhs if k & 1 else op.rhs])
        elif _same_constant(op.lhs, op.rhs) or isinstance(op.rhs.owner, loop.UndefOp):
            rewriter.replace(op, [], [op.lhs])
        elif isinstance(op.lhs.owner, loop.UndefOp):
            rewriter.replace(op, [], [op.rhs])


class FoldIf(RewritePattern):
    """`loop.if` on a constant condition → the taken region inlined (or nothing)."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.IfOp, rewriter: PatternRewriter, /):
        k = int_constant(op.cond)
        if k is None:
            return
        region = op.then_region if k & 1 else op.else_region
        if not region.blocks:
            rewriter.erase(op)
            return
        block = region.block
        terminator = block.last_op
        values = list(terminator.operands) if isinstance(terminator, loop.YieldOp) else []
        if isinstance(terminator, loop.YieldOp):
            rewriter.erase(terminator)
        rewriter.inline_block(block, InsertPoint.before(op))
        rewriter.replace(op, [], values)


class RemoveUndefStore(RewritePattern):
    """A store of `loop.undef` writes nothing anybody may rely on: delete it."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: loop.StoreOp, rewriter: PatternRewriter, /):
        if isinstance(op.value.owner, loop.UndefOp):
            rewriter.erase(op)


class PaddingSelect(RewritePattern):
    """`select(c, load B[p], PAD)` → `load B[p]` when `¬c` implies that `p` is a
    padding slot of B's constraint (so B[p] already is PAD); likewise
    `select(c, load B[p] * w, 0)` when B's PAD is 0."""

    def __init__(self, analyzer: Analyzer):
        self.analyzer = analyzer

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: arith.SelectOp, rewriter: PatternRewriter, /):
        other = _constant_number(op.rhs)
        if other is None:
            return
        for load, need in _padded_loads(op.lhs, other):
            constraint = buffer_constraint(load.buffer)
            if constraint is None or _constant_number_attr(constraint.pad) != need:
                continue
            padding = padding_halfspaces(self.analyzer, constraint, load)
            if padding is not None and self._false_implies(op.cond, padding):
                rewriter.replace(op, [], [op.lhs])
                return

    def _false_implies(self, cond: SSAValue, padding: list[tuple[LinearForm, str, int]]) -> bool:
        """Every atom of the conjunction `cond`, when false, puts the index in padding."""
        atoms = list(_conjuncts(cond))
        return bool(atoms) and all(self._atom_false_implies(a, padding) for a in atoms)

    def _atom_false_implies(self, atom: SSAValue, padding) -> bool:
        op = atom.owner
        if not isinstance(op, arith.CmpiOp):
            return False
        pred = PREDICATES[op.predicate.value.data]
        (lt, lc), (rt, rc) = self.analyzer.linear(op.lhs), self.analyzer.linear(op.rhs)
        terms = _subtract(lt, rt)
        const = lc - rc  # atom: terms + const PRED 0
        negated = {"slt": (">=", 0), "ult": (">=", 0), "sle": (">=", 1), "ule": (">=", 1),
                   "sgt": ("<=", 0), "ugt": ("<=", 0), "sge": ("<=", -1), "uge": ("<=", -1)}  # fmt: skip
        if pred not in negated:
            return False
        kind, k = negated[pred]
        bound = k - const  # ¬atom: terms KIND bound
        for (pterms, pconst), pkind, pbound in padding:
            if pterms != terms or pkind != kind:
                continue
            # padding: terms + pconst KIND pbound, i.e. terms KIND pbound - pconst
            if kind == ">=" and bound >= pbound - pconst:
                return True
            if kind == "<=" and bound <= pbound - pconst:
                return True
        return False


def _same_constant(a: SSAValue, b: SSAValue) -> bool:
    """The same value, or two equal constants."""
    if a is b:
        return True
    ca, cb = a.owner, b.owner
    return (
        isinstance(ca, arith.ConstantOp)
        and isinstance(cb, arith.ConstantOp)
        and (ca.value == cb.value)
    )


def _subtract(a, b) -> tuple:
    coefs: dict[SSAValue, int] = dict(a)
    for v, c in b:
        coefs[v] = coefs.get(v, 0) - c
    return tuple(sorted(((v, c) for v, c in coefs.items() if c), key=lambda t: id(t[0])))


def _conjuncts(cond: SSAValue) -> Iterator[SSAValue]:
    op = cond.owner
    if isinstance(op, arith.AndIOp):
        yield from _conjuncts(op.lhs)
        yield from _conjuncts(op.rhs)
    else:
        yield cond


def _constant_number_attr(attr) -> float | int | None:
    if isinstance(attr, FloatAttr):
        return attr.value.data
    if isinstance(attr, IntegerAttr):
        return attr.value.data
    return None


def _constant_number(value: SSAValue) -> float | int | None:
    op = value.owner
    if isinstance(op, arith.ConstantOp):
        return _constant_number_attr(op.value)
    return None


def _padded_loads(value: SSAValue, other: float | int) -> Iterator[tuple[loop.LoadOp, float | int]]:
    """Loads whose padding value makes `value` equal `other`: `value` itself
    (the pad must be `other`), or a factor of a product with `other == 0`."""
    op = value.owner
    if isinstance(op, loop.LoadOp):
        yield op, other
    elif isinstance(op, arith.MulfOp | arith.MuliOp) and other == 0:
        for side in (op.lhs, op.rhs):
            if isinstance(side.owner, loop.LoadOp):
                yield side.owner, 0


def buffer_constraint(buffer: SSAValue) -> ConstraintAttr | None:
    """The constraint of a `loop.func` parameter or a `loop.alloc`."""
    if isinstance(buffer, BlockArgument):
        func = buffer.block.parent_op()
        if isinstance(func, loop.FuncOp):
            found = func.arg_attr(buffer.index, CONSTRAINT_ATTR_NAME)
            return found if isinstance(found, ConstraintAttr) else None
        return None
    owner = buffer.owner
    return owner.constraint if isinstance(owner, loop.AllocOp) else None


def padding_halfspaces(
    analyzer: Analyzer, constraint: ConstraintAttr, load: loop.LoadOp
) -> list[tuple[LinearForm, str, int]] | None:
    """Half-spaces `form KIND bound` over the load's index atoms, each of which
    alone puts the physical index outside the image of the logical shape."""
    logical = constraint.logical_shape
    if logical is None:
        return None
    try:
        groups = invert_map(constraint.index_map.data, logical)
    except LayoutMapError:
        return None
    idx = list(load.indices)
    result: list[tuple[LinearForm, str, int]] = []
    for g in groups:
        if not g.inner.terms:
            continue
        if g.plain is not None:
            form = analyzer.linear(idx[g.plain])
        elif g.outer is not None and g.inner_pos is not None:
            (ot, oc), (it, ic) = analyzer.linear(idx[g.outer]), analyzer.linear(idx[g.inner_pos])
            scaled_outer = tuple((v, c * g.tile) for v, c in ot)
            form = (_subtract(scaled_outer, tuple((v, -c) for v, c in it)), oc * g.tile + ic)
        else:
            assert g.inner_pos is not None
            form = analyzer.linear(idx[g.inner_pos])
        top_dim, top_coef = g.inner.terms[0]
        if g.inner.const > 0:
            result.append((form, "<=", g.inner.const - 1))
        result.append((form, ">=", g.inner.const + logical[top_dim] * top_coef))
    return result


def make_indices_affine(func: loop.FuncOp) -> None:
    """Rewrite the index divisions and remainders of `func` that ranges make affine
    (`SplitDivMod`, `FoldIndexArith`): the part of this pass that `schedule` needs
    first, since it can only tile and pack accesses whose indices are sums of
    loop variables (a reshape fused into a matmul reads `x[(256*i + 64*h + k) / 256,
    (256*i + 64*h + k) % 256]`, which is `x[i, 64*h + k]`)."""
    analyzer = Analyzer()
    locating_walker(
        GreedyRewritePatternApplier(
            [FoldIndexArith(analyzer), SplitDivMod(analyzer)], dce_enabled=False
        )
    ).rewrite_region(func.body)  # dead code stays, for `simplify` itself


@dataclass(frozen=True)
class SimplifyPass(LaminaPass):
    """Remove guards, selects and undef stores that integer facts and buffer constraints make redundant.

    Input invariant: phase `lowering`; kernels are `loop.func`s (after `lower-te`).

    Output IR: the same loop code with `arith.cmpi` decided by ranges (loop
    bounds, constants, floordiv/mod, `loop.assume`) folded to constants and
    the `arith.select`/`loop.if` on them resolved; no `loop.undef` stores
    (padding with `#lamina.undef` is not written at all; `select(c, x,
    undef)` is `x`); `select(c, load B[p], PAD)` is the load where every
    position failing `c` is padding of B's `#lamina.constraint` (which needs
    the constraint's `logical` shape).

    Invariants: the values of every non-padding element are unchanged;
    running the pass twice equals running it once.
    """

    name = "simplify"

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        analyzer = Analyzer()
        locating_walker(
            GreedyApplier(
                [
                    FoldCmpi(analyzer),
                    FoldIndexArith(analyzer),
                    SplitDivMod(analyzer),
                    FoldBoolOps(),
                    PaddingSelect(analyzer),
                    FoldSelect(),
                    FoldIf(),
                    RemoveUndefStore(),
                ],
                ctx=ctx,
            )
        ).rewrite_module(op)


__all__ = ["SimplifyPass", "buffer_constraint", "make_indices_affine", "padding_halfspaces"]
