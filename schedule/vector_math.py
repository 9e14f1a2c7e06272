"""Vectorizable `exp`, `tanh` and `erf` for f32: polynomials instead of libm calls.

LLVM lowers `llvm.exp.f32` (and `tanhf`, `erff`) to one libm call per element: a
loop holding one is not vectorized (16 `call expf` in the attention block).
`schedule` therefore expands f32 `math.exp` / `math.tanh` / `math.erf` in loop functions
into plain arithmetic (Cephes' single-precision algorithms, ≤ 2 ulp on the
normal range), which the vectorizer turns into 8- or 16-lane code:

    exp(x):  x clamped to [-104, 89]        (beyond: 0 / +inf, as expf)
             n = floor(x·log2(e) + ½),  r = x − n·ln2  (ln2 in two parts)
             p = 1 + r + r²·P5(r)
             exp(x) = p · 2^⌊n/2⌋ · 2^(n−⌊n/2⌋)   (two exact scalings, so
                      results down to the denormals are right)
             (a sigmoid's exp, its argument clamped to [-87, 88]: one
             scaling, and p a degree-5 fit, `_EXP_SHORT_POLY`)
    tanh(x): |x| < 0.625: x + x³·P4(x²);  else sign(x)·(1 − 2/(exp(2|x|) + 1))
    erf(x):  |x| < 0.9375: x·P5(x²);  else sign(x)·(1 − exp(Q8(min(|x|, 4))))
             (Q8 ≈ log erfc on [0.9375, 4]; erfc(4) is below half an ulp of 1)

Exp and tanh are Cephes'. Erf's polynomials are least-squares fits on
Chebyshev nodes (P5 to erf(x)/x, Q8 to log erfc(x)): evaluated in f32 they
are within 1.3e-7 of erf everywhere (about 2 ulp near 1; libm's `erff`, one
scalar call per element, is what a loop with gelu or `Erf` ran before), and
the tail `1 − erf(|x|)` that gelu's negative side computes keeps a relative
error below 4e-6.

NaN propagates (clamps use `maximumf`/`minimumf`).
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects import arith, math
from xdsl.dialects.builtin import Float32Type, FloatAttr, IntegerAttr, f32, i32
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

_EXP_POLY = (
    1.9875691500e-4,
    1.3981999507e-3,
    8.3334519073e-3,
    4.1665795894e-2,
    1.6666665459e-1,
    5.0000001201e-1,
)
_EXP_SHORT_POLY = (
    0.008297314867377281,
    0.04191561043262482,
    0.16667580604553223,
    0.49998894333839417,
    0.9999997019767761,
    1.0000001192092896,
)
"""exp(r) on |r| <= ln2/2 as one degree-5 polynomial (a least-squares fit of the
relative error on Chebyshev nodes): within 2.2e-7 of exp evaluated in f32,
against Cephes' 7e-8, in 5 multiply-adds instead of 8 operations."""

_TANH_POLY = (
    -5.70498872745e-3,
    2.06390887954e-2,
    -5.37397155531e-2,
    1.33314422036e-1,
    -3.33332819422e-1,
)
_ERF_SMALL = (
    -5.97750477027e-4,
    4.99240681529e-3,
    -2.67678275704e-2,
    1.12819217145e-1,
    -3.76125156879e-1,
    1.12837910652,
)
_LOG_ERFC = (
    1.61441516866e-6,
    -4.55980843981e-5,
    5.92837051954e-4,
    -4.74056368694e-3,
    2.63657700270e-2,
    -1.09980270267e-1,
    -6.31934702396e-1,
    -1.13016819954,
    3.03634471493e-4,
)
_ERF_SPLIT, _ERF_ONE = 0.9375, 4.0
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_LOG2E = 1.44269504088896341


class _Emitter:
    """Appends scalar ops before one insertion point."""

    def __init__(self, at: InsertPoint):
        self.at = at

    def add(self, op: Operation) -> SSAValue:
        Rewriter.insert_op(op, self.at)
        return op.results[0]

    def f(self, value: float) -> SSAValue:
        return self.add(arith.ConstantOp(FloatAttr(value, f32)))

    def i(self, value: int) -> SSAValue:
        return self.add(arith.ConstantOp(IntegerAttr(value, i32)))

    def mul(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.MulfOp(a, b))

    def fadd(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(arith.AddfOp(a, b))

    def horner(self, x: SSAValue, coefficients: tuple[float, ...]) -> SSAValue:
        acc = self.f(coefficients[0])
        for c in coefficients[1:]:
            acc = self.fadd(self.mul(acc, x), self.f(c))
        return acc


def emit_exp(em: _Emitter, x: SSAValue) -> SSAValue:
    """f32 exp(x) in arithmetic only (see the module docstring)."""
    if _clamped_within(x, EXP_NORMAL_LO, EXP_NORMAL_HI):
        return _emit_exp_normal(em, x)
    x = em.add(arith.MinimumfOp(em.add(arith.MaximumfOp(x, em.f(-104.0))), em.f(89.0)))
    n = em.add(math.FloorOp(em.fadd(em.mul(x, em.f(_LOG2E)), em.f(0.5))))
    p = _exp_reduced(em, x, n)
    ni = _small_float_to_int(em, n)
    half = em.add(arith.ShRSIOp(ni, em.i(1)))
    rest = em.add(arith.SubiOp(ni, half))
    for part in (half, rest):
        bits = em.add(arith.ShLIOp(em.add(arith.AddiOp(part, em.i(127))), em.i(23)))
        p = em.mul(p, em.add(arith.BitcastOp(bits, f32)))
    return p


def _reduce(em: _Emitter, x: SSAValue, n: SSAValue) -> SSAValue:
    """x - n ln2 in two steps (ln2's high part exact in f32), for the integer-valued f32 `n`."""
    r = em.add(arith.SubfOp(x, em.mul(n, em.f(_LN2_HI))))
    return em.add(arith.SubfOp(r, em.mul(n, em.f(_LN2_LO))))


def _exp_reduced(em: _Emitter, x: SSAValue, n: SSAValue) -> SSAValue:
    """exp(x - n ln2) by Cephes' polynomial, for the integer-valued f32 `n` nearest x/ln2."""
    r = _reduce(em, x, n)
    p = em.mul(em.mul(em.horner(r, _EXP_POLY), r), r)
    return em.fadd(em.fadd(p, r), em.f(1.0))


def _emit_exp_normal(em: _Emitter, x: SSAValue) -> SSAValue:
    """exp(x) of an argument already clamped inside [-87, 88] (a sigmoid's exponent).

    It needs no clamp of its own, and its `2^n` (n in [-126, 127]) is one
    normal number: one scaling instead of two. `n` is rounded to nearest by
    adding 1.5 * 2^23, whose sum then holds `n` in its low bits, so that the
    sum shifted left by 23 is `n`'s exponent field: no floor and no
    conversion to an integer either. Its polynomial is the shorter
    `_EXP_SHORT_POLY`: a sigmoid needs 1e-6, not exp's last ulp, and SiLU
    (a sigmoid per element of EfficientNet's feature maps) spends most of
    its time in this polynomial.
    """
    shifted = em.fadd(em.mul(x, em.f(_LOG2E)), em.f(_ROUNDING_MAGIC))
    n = em.add(arith.SubfOp(shifted, em.f(_ROUNDING_MAGIC)))
    p = em.horner(_reduce(em, x, n), _EXP_SHORT_POLY)
    field = em.add(arith.ShLIOp(em.add(arith.BitcastOp(shifted, i32)), em.i(23)))
    scale = em.add(arith.AddiOp(field, em.i(127 << 23)))
    return em.mul(p, em.add(arith.BitcastOp(scale, f32)))


EXP_NORMAL_LO, EXP_NORMAL_HI = -87.0, 88.0
"""exp's arguments whose `n`, x/ln2 rounded to nearest, lies in [-126, 127]: an
argument clamped inside them (a sigmoid's exponent, `kernels/te_emit.py`)
gets the single-scaling exp (`_emit_exp_normal`)."""


def _float_constant(value: SSAValue) -> float | None:
    if isinstance(value.owner, arith.ConstantOp) and isinstance(value.owner.value, FloatAttr):
        return value.owner.value.value.data
    return None


def _clamped_within(x: SSAValue, lo: float, hi: float) -> bool:
    """Whether `x` is `minimumf(maximumf(y, a), b)` (either operand order) with lo <= a, b <= hi."""
    bounds: dict[type[Operation], float] = {}
    for kind in (arith.MinimumfOp, arith.MaximumfOp):
        op = x.owner
        if not isinstance(op, kind):
            return False
        a, b = op.operands
        if (c := _float_constant(b)) is not None:
            x = a
        elif (c := _float_constant(a)) is not None:
            x = b
        else:
            return False
        bounds[kind] = c
    return bounds[arith.MaximumfOp] >= lo and bounds[arith.MinimumfOp] <= hi


_ROUNDING_MAGIC = 12582912.0
"""1.5 * 2^23: for an integer-valued f32 `n` with |n| < 2^22, the bits of
`n + 1.5 * 2^23` are those of the magic number plus `n`."""


def _small_float_to_int(em: _Emitter, n: SSAValue) -> SSAValue:
    """i32 of an integer-valued f32 in [-2^22, 2^22], with add + bitcast + sub.

    Not `arith.fptosi`: it lowers to `llvm.fptosi.sat`, which the x86
    backend scalarizes for vectors (16 `vcvttss2si` and 32 `vucomiss` per
    16 lanes: the softmax of the attention block spent most of its time
    there). A NaN `n` gives a garbage exponent, but the polynomial it scales
    is NaN already."""
    shifted = em.fadd(n, em.f(_ROUNDING_MAGIC))
    bits = em.add(arith.BitcastOp(shifted, i32))
    return em.add(arith.SubiOp(bits, em.i(0x4B400000)))


def emit_tanh(em: _Emitter, x: SSAValue) -> SSAValue:
    """f32 tanh(x) in arithmetic only (see the module docstring)."""
    ax = em.add(math.AbsFOp(x))
    z = em.mul(x, x)
    small = em.fadd(em.mul(em.mul(em.horner(z, _TANH_POLY), z), x), x)
    e = emit_exp(em, em.fadd(ax, ax))
    big = em.add(arith.SubfOp(em.f(1.0), em.add(arith.DivfOp(em.f(2.0), em.fadd(e, em.f(1.0))))))
    big = em.add(math.CopySignOp(big, x))
    is_small = em.add(arith.CmpfOp(ax, em.f(0.625), "olt"))
    return em.add(arith.SelectOp(is_small, small, big))


def emit_erf(em: _Emitter, x: SSAValue) -> SSAValue:
    """f32 erf(x) in arithmetic only (see the module docstring). Both pieces are
    computed and one selected, so the loop stays branch-free and vectorizes."""
    ax = em.add(math.AbsFOp(x))
    small = em.mul(em.horner(em.mul(x, x), _ERF_SMALL), x)
    t = em.add(arith.MinimumfOp(ax, em.f(_ERF_ONE)))
    tail = emit_exp(em, em.horner(t, _LOG_ERFC))
    big = em.add(math.CopySignOp(em.add(arith.SubfOp(em.f(1.0), tail)), x))
    is_small = em.add(arith.CmpfOp(ax, em.f(_ERF_SPLIT), "olt"))
    return em.add(arith.SelectOp(is_small, small, big))


_EXPANSIONS: dict[type[Operation], Callable[[_Emitter, SSAValue], SSAValue]] = {
    math.ExpOp: emit_exp,
    math.TanhOp: emit_tanh,
    math.ErfOp: emit_erf,
}


def expand_transcendentals(root: Operation) -> int:
    """Replace every f32 `math.exp` / `math.tanh` / `math.erf` under `root`; returns how many."""
    targets = [
        op
        for op in root.walk()
        if type(op) in _EXPANSIONS and isinstance(op.results[0].type, Float32Type)
    ]
    for op in targets:
        value = _EXPANSIONS[type(op)](_Emitter(InsertPoint.before(op)), op.operands[0])
        op.results[0].replace_all_uses_with(value)
        Rewriter.erase_op(op)
    return len(targets)
