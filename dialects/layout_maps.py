"""Index maps of `#lamina.constraint` (docs/layouts.md): injectivity and inversion.

A layout map sends a logical index to a physical one. Every result is an
affine sum `e = c0*d0 + c1*d1 + ... + k`, optionally wrapped as
`e floordiv m` or `e mod m`. Lowering a layout transform needs the map's
inverse (which logical element, if any, lands on a physical slot), and the
verifiers need to know that the map is injective (no two elements share a
slot). Both come from one structural analysis, `invert_map`:

* results are grouped by their inner sum `e`; a group is `e` alone, or the
  pair `e floordiv m` / `e mod m` (then `e = outer * m + inner`), or
  `e mod m` alone when `e < m` on the whole domain;
* each logical dim appears in exactly one group, and within a group the
  coefficients form a mixed radix (each coefficient exceeds the largest
  value the smaller terms reach), so `e` decomposes back into its dims by
  floordiv/mod.

This file is shared by the dialects (verification) and the passes
(lowering, `simplify`); it knows nothing about ops.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from math import prod
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FloatAttr, IntegerAttr, ShapedType
from xdsl.ir import Attribute
from xdsl.ir.affine import AffineBinaryOpExpr, AffineBinaryOpKind, AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineConstantExpr, AffineDimExpr
from xdsl.utils.exceptions import VerifyException

if TYPE_CHECKING:
    import numpy as np


class LayoutMapError(ValueError):
    """A map that is not injective or not invertible; the message says why."""


def eval_grid(expr: AffineExpr, grids: dict[int, np.ndarray]) -> np.ndarray | int:
    """Evaluate `expr` on broadcastable index grids (affine floordiv/mod semantics)."""
    if isinstance(expr, AffineDimExpr):
        return grids[expr.position]
    if isinstance(expr, AffineConstantExpr):
        return expr.value
    if not isinstance(expr, AffineBinaryOpExpr):
        raise LayoutMapError(f"unsupported expression {expr} in a layout map")
    lhs, rhs = eval_grid(expr.lhs, grids), eval_grid(expr.rhs, grids)
    match expr.kind:
        case AffineBinaryOpKind.Add:
            return lhs + rhs
        case AffineBinaryOpKind.Mul:
            return lhs * rhs
        case AffineBinaryOpKind.FloorDiv:
            return lhs // rhs
        case AffineBinaryOpKind.CeilDiv:
            return -(-lhs // rhs)
        case AffineBinaryOpKind.Mod:
            return lhs % rhs
    raise LayoutMapError(f"unsupported expression {expr} in a layout map")


def apply_layout(
    x: np.ndarray,
    index_map: AffineMap,
    out_shape: Sequence[int],
    pad: object = 0,
    *,
    contiguous: bool = True,
) -> np.ndarray:
    """`x` laid out by `index_map`: element `x[i]` goes to `out[MAP(i)]`, every
    slot no element reaches holds `pad`, and elements whose image falls
    outside `out_shape` are dropped (an inverse transform's `crop`).

    The one NumPy implementation of `graph.layout_transform`, vectorized over
    index grids: the reference evaluator and constant hoisting share it.
    `contiguous=False` may return a strided view of a blocked layout's
    transpose (for a caller that copies it anyway: `plan-layouts` takes its
    bytes, `core/dense.py` `dense_attr`, one copy of the weights instead of two)."""
    import numpy as np

    blocked = _blocked_layout(x, index_map, pad)
    if blocked is not None:
        if not contiguous and blocked.shape == tuple(int(s) for s in out_shape):
            return blocked
        return _placed(blocked, out_shape, pad)
    out = np.full(tuple(out_shape), pad, dtype=x.dtype)
    # Sparse grids: each result expression broadcasts over only the dims it uses.
    grids = dict(enumerate(np.meshgrid(*(np.arange(s) for s in x.shape), indexing="ij",
                                       sparse=True)))  # fmt: skip
    index = [np.asarray(eval_grid(e, grids)) for e in index_map.results]
    inside = np.ones((1,) * x.ndim, dtype=bool)
    for axis, idx in enumerate(index):
        inside = inside & (idx >= 0) & (idx < out.shape[axis])
    if inside.all():  # no crop: every element lands (the common, forward case)
        out[tuple(np.broadcast_to(i, x.shape) for i in index)] = x
    else:
        inside = np.broadcast_to(inside, x.shape)
        out[tuple(np.broadcast_to(i, x.shape)[inside] for i in index)] = x[inside]
    return out


def _blocked_layout(x: np.ndarray, index_map: AffineMap, pad: object) -> np.ndarray | None:
    """`x` laid out by a map whose results are each `d`, `d floordiv m` or `d mod m` (every
    dim once, or as one floordiv/mod pair): a pad, reshape and transpose instead of
    a scatter through index arrays, ten times faster on a network's weights
    (NCHW → NCHWc and the like). None for any other map."""
    import numpy as np

    if index_map.num_dims != x.ndim or index_map.num_symbols:
        return None
    parts: list[tuple[int, str, int]] = []  # (dim, "dim" | "div" | "mod", m)
    for expr in index_map.results:
        if isinstance(expr, AffineDimExpr):
            parts.append((expr.position, "dim", 1))
            continue
        if not (
            isinstance(expr, AffineBinaryOpExpr)
            and isinstance(expr.lhs, AffineDimExpr)
            and isinstance(expr.rhs, AffineConstantExpr)
            and expr.rhs.value > 0
        ):
            return None
        kind = {AffineBinaryOpKind.FloorDiv: "div", AffineBinaryOpKind.Mod: "mod"}.get(expr.kind)
        if kind is None:
            return None
        parts.append((expr.lhs.position, kind, expr.rhs.value))
    split: dict[int, int] = {}
    for dim in range(x.ndim):
        kinds = sorted((k, m) for d, k, m in parts if d == dim)
        if kinds == [("dim", 1)]:
            split[dim] = 0
        elif len(kinds) == 2 and kinds[0][0] == "div" and kinds[1][0] == "mod":
            if kinds[0][1] != kinds[1][1]:
                return None
            split[dim] = kinds[0][1]
        else:
            return None
    widths = [(0, -s % split[d]) if split[d] else (0, 0) for d, s in enumerate(x.shape)]
    if any(w for _, w in widths):
        x = np.pad(x, widths, constant_values=np.asarray(pad, dtype=x.dtype))
    shape: list[int] = []
    axis: dict[tuple[int, str], int] = {}
    for dim, size in enumerate(x.shape):
        if split[dim]:
            axis[dim, "div"], axis[dim, "mod"] = len(shape), len(shape) + 1
            shape += [size // split[dim], split[dim]]
        else:
            axis[dim, "dim"] = len(shape)
            shape.append(size)
    return x.reshape(shape).transpose([axis[d, k] for d, k, _ in parts])


def _placed(values: np.ndarray, out_shape: Sequence[int], pad: object) -> np.ndarray:
    """`values` in an array of `out_shape`: cropped where it is smaller, `pad` where larger."""
    import numpy as np

    shape = tuple(int(s) for s in out_shape)
    if values.shape == shape:
        return np.ascontiguousarray(values)
    out = np.full(shape, pad, dtype=values.dtype)
    common = tuple(slice(0, min(a, b)) for a, b in zip(values.shape, shape, strict=True))
    out[common] = values[common]
    return out


INJECTIVITY_LIMIT = 1 << 21
"""Largest domain `is_injective` checks point by point; beyond it each
extent is capped (a map that collides anywhere collides on a small box)."""


def is_injective(index_map: AffineMap, shape: Sequence[int]) -> bool:
    """Whether no two indices of the box `shape` map to the same physical index."""

    if _recoverable(index_map):
        return True
    dims = [int(s) for s in shape]
    if prod(dims) > INJECTIVITY_LIMIT:
        cap = 2 * _largest_constant(index_map) + 2
        dims = [min(d, cap) for d in dims]
    if prod(dims) <= 1 or not index_map.results:
        return prod(dims) <= 1
    return _injective_on_box(index_map, tuple(dims))


def _recoverable(index_map: AffineMap) -> bool:
    """Whether every dimension can be read back from the results, so the map is
    injective on any box: each dimension is a result of its own (`d`, or `d + c`),
    or the two results `d floordiv c` and `d mod c` for the same c > 0 (a blocked
    layout; indices are non-negative, so d = c * (d floordiv c) + d mod c). A
    sufficient condition, decided from the map's text: ResNet-50's classifier
    weight, `(d0, d1) -> (d1 floordiv 250, d0, d1 mod 250)` on 2048x1000, was
    checked point by point on 2 M points (0.1-0.2 s) before the compile forks."""
    plain: set[int] = set()
    floors: set[tuple[int, int]] = set()
    mods: set[tuple[int, int]] = set()
    for expr in index_map.results:
        if isinstance(expr, AffineBinaryOpExpr) and expr.kind is AffineBinaryOpKind.Add:
            if isinstance(expr.rhs, AffineConstantExpr):
                expr = expr.lhs
            elif isinstance(expr.lhs, AffineConstantExpr):
                expr = expr.rhs
        if isinstance(expr, AffineDimExpr):
            plain.add(expr.position)
        elif (
            isinstance(expr, AffineBinaryOpExpr)
            and isinstance(expr.lhs, AffineDimExpr)
            and isinstance(expr.rhs, AffineConstantExpr)
            and expr.rhs.value > 0
        ):
            pair = (expr.lhs.position, expr.rhs.value)
            if expr.kind is AffineBinaryOpKind.FloorDiv:
                floors.add(pair)
            elif expr.kind is AffineBinaryOpKind.Mod:
                mods.add(pair)
    blocked = {d for d, _ in floors & mods}
    return all(d in plain or d in blocked for d in range(index_map.num_dims))


@functools.lru_cache(maxsize=256)
def _injective_on_box(index_map: AffineMap, dims: tuple[int, ...]) -> bool:
    """Point-by-point check, memoized: every verifier run asks again for the
    same constrained buffers. The physical points are linearized (mixed radix
    over their bounding box) so the collision test is a 1-D count or sort,
    not a row-wise `np.unique` (which sorts structured rows: 0.2 s for a
    2 M-point box, paid once per verified constraint)."""
    import numpy as np

    grids = np.meshgrid(*(np.arange(d, dtype=np.int64) for d in dims), indexing="ij")
    flat = {i: g.ravel() for i, g in enumerate(grids)}
    count = flat[0].size
    key = np.zeros(count, dtype=np.int64)
    span = 1
    for expr in index_map.results:
        column = np.broadcast_to(eval_grid(expr, flat), (count,))
        low, high = int(column.min()), int(column.max())
        extent = high - low + 1
        if span * extent >= 1 << 62:  # no int64 key: fall back to comparing rows
            return _injective_rows(index_map, flat, count)
        key += (column - low) * span
        span *= extent
    if span <= 8 * count:
        return int(np.bincount(key, minlength=1).max()) <= 1
    key.sort()
    return not bool(np.any(key[1:] == key[:-1]))


def _injective_rows(index_map: AffineMap, flat: dict, count: int) -> bool:
    import numpy as np

    columns = [np.broadcast_to(eval_grid(e, flat), (count,)) for e in index_map.results]
    points = np.stack(columns, axis=1)
    return len(np.unique(points, axis=0)) == count


def _largest_constant(index_map: AffineMap) -> int:
    best = 1
    for expr in index_map.results:
        for sub in expr.dfs():
            if isinstance(sub, AffineConstantExpr):
                best = max(best, abs(sub.value))
    return best


# ---------------------------------------------------------------------------
# Structural inverse
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Linear:
    """`sum(coef * d) + const` with `terms` sorted by decreasing coefficient."""

    terms: tuple[tuple[int, int], ...]  # (dim, coefficient)
    const: int


def linear_form(expr: AffineExpr) -> Linear | None:
    """`expr` as a sum of scaled dims plus a constant, None when it is not one."""
    coefs: dict[int, int] = {}
    const = _collect(expr, 1, coefs)
    if const is None:
        return None
    terms = tuple(sorted(((d, c) for d, c in coefs.items() if c), key=lambda t: (-t[1], t[0])))
    return Linear(terms, const)


def _collect(expr: AffineExpr, scale: int, coefs: dict[int, int]) -> int | None:
    if isinstance(expr, AffineDimExpr):
        coefs[expr.position] = coefs.get(expr.position, 0) + scale
        return 0
    if isinstance(expr, AffineConstantExpr):
        return scale * expr.value
    if not isinstance(expr, AffineBinaryOpExpr):
        return None
    if expr.kind == AffineBinaryOpKind.Add:
        lhs = _collect(expr.lhs, scale, coefs)
        rhs = _collect(expr.rhs, scale, coefs)
        return None if lhs is None or rhs is None else lhs + rhs
    if expr.kind == AffineBinaryOpKind.Mul:
        for a, b in ((expr.lhs, expr.rhs), (expr.rhs, expr.lhs)):
            if isinstance(b, AffineConstantExpr):
                return _collect(a, scale * b.value, coefs)
    return None


def same_map(a: AffineMap, b: AffineMap) -> bool:
    """Whether two maps are the same function: equal, or equal result by result
    as affine sums (`d1 + d0 * 4 - 1` is `d0 * 4 + d1 + -1`; a user writes an
    inverse map one way, plan-layouts builds it another)."""
    if a == b:
        return True
    if (a.num_dims, a.num_symbols, len(a.results)) != (b.num_dims, b.num_symbols, len(b.results)):
        return False
    forms = [(_split(x), _split(y)) for x, y in zip(a.results, b.results, strict=True)]
    return all(fx == fy and fx[1] is not None for fx, fy in forms)


@dataclass(frozen=True)
class Group:
    """One recoverable inner sum: its value is `idx[plain]`, or
    `idx[outer] * tile + idx[inner]` (tiling), or `idx[inner]` (mod alone)."""

    inner: Linear
    plain: int | None
    outer: int | None
    inner_pos: int | None
    tile: int


def invert_map(index_map: AffineMap, logical: Sequence[int] | None = None) -> list[Group]:
    """The groups that recover every logical dim of `index_map`; raises
    `LayoutMapError` when the map is not injective (or not of the supported
    form). `logical` (the domain) makes the mixed-radix and `mod`-alone checks
    exact; without it, sums of several dims are accepted as long as their
    coefficients differ (their domain is not known)."""
    parts: dict[Linear, dict[str, tuple[int, int]]] = {}
    for p, expr in enumerate(index_map.results):
        kind, inner, divisor = _split(expr)
        if inner is None:
            raise LayoutMapError(f"result #{p} ({expr}) is not an affine sum of dimensions")
        slot = parts.setdefault(inner, {})
        if kind in slot:
            raise LayoutMapError(f"result #{p} ({expr}) repeats result #{slot[kind][0]}")
        slot[kind] = (p, divisor)
    groups = [_group(inner, slot, logical) for inner, slot in parts.items()]
    seen: dict[int, Linear] = {}
    for g in groups:
        for d, _ in g.inner.terms:
            if d in seen:
                raise LayoutMapError(f"d{d} appears in two independent results")
            seen[d] = g.inner
    for d in range(index_map.num_dims):
        if d not in seen and (logical is None or logical[d] > 1):
            raise LayoutMapError(f"d{d} does not appear in the results")
    return groups


def _split(expr: AffineExpr) -> tuple[str, Linear | None, int]:
    if (
        isinstance(expr, AffineBinaryOpExpr)
        and expr.kind in (AffineBinaryOpKind.FloorDiv, AffineBinaryOpKind.Mod)
        and isinstance(expr.rhs, AffineConstantExpr)
        and expr.rhs.value > 0
    ):
        kind = "floordiv" if expr.kind == AffineBinaryOpKind.FloorDiv else "mod"
        return kind, linear_form(expr.lhs), expr.rhs.value
    return "plain", linear_form(expr), 1


def _group(inner: Linear, slot: dict[str, tuple[int, int]], logical: Sequence[int] | None) -> Group:
    kinds = set(slot)
    if kinds == {"plain"}:
        group = Group(inner, slot["plain"][0], None, None, 1)
    elif kinds == {"floordiv", "mod"} and slot["floordiv"][1] == slot["mod"][1]:
        group = Group(inner, None, slot["floordiv"][0], slot["mod"][0], slot["mod"][1])
    elif kinds == {"mod"} and inner.const < 0:
        raise LayoutMapError(
            f"`({_linear_text(inner)}) mod {slot['mod'][1]}` wraps negative positions around "
            "to the end of the axis; pair it with its `floordiv` to pad at the start"
        )
    elif kinds == {"mod"} and logical is not None and _max_value(inner, logical) < slot["mod"][1]:
        group = Group(inner, None, None, slot["mod"][0], slot["mod"][1])
    elif kinds == {"floordiv", "mod"}:
        raise LayoutMapError(
            f"`({_linear_text(inner)}) floordiv {slot['floordiv'][1]}` and "
            f"`({_linear_text(inner)}) mod {slot['mod'][1]}` use different tile sizes"
        )
    else:
        what = " and ".join(f"`{k}`" for k in sorted(kinds))
        raise LayoutMapError(
            f"{_linear_text(inner)} appears only as {what}; a `floordiv` needs its `mod` "
            "partner (and vice versa) to be injective"
        )
    _check_radix(inner, logical)
    return group


def _check_radix(inner: Linear, logical: Sequence[int] | None) -> None:
    """Each coefficient exceeds the largest value of the smaller terms."""
    reach = 0
    for d, c in reversed(inner.terms):
        if c <= 0:
            raise LayoutMapError(f"d{d} has a non-positive coefficient in {_linear_text(inner)}")
        if logical is None:
            if reach and c == reach:
                raise LayoutMapError(
                    f"{_linear_text(inner)} is not invertible (equal coefficients)"
                )
            reach = c
            continue
        if c <= reach:
            raise LayoutMapError(
                f"{_linear_text(inner)} is not invertible (its coefficients are not a mixed "
                f"radix on the logical shape {list(logical)})"
            )
        reach += c * (logical[d] - 1)


def _max_value(inner: Linear, logical: Sequence[int]) -> int:
    return inner.const + sum(c * (logical[d] - 1) for d, c in inner.terms)


def _linear_text(inner: Linear) -> str:
    parts = [f"d{d}" if c == 1 else f"d{d} * {c}" for d, c in inner.terms]
    if inner.const or not parts:
        parts.append(str(inner.const))
    return " + ".join(parts)


def constraint_problem(
    index_map: AffineMap, shape: Sequence[int], logical: Sequence[int] | None
) -> str | None:
    """Why a constraint cannot describe a tensor or buffer of `shape` (rank,
    injectivity), or None. The shape is the physical one (rank = number of map
    results), or the logical one (rank = number of map dimensions, then it is
    also the domain); `logical`, when recorded, is the domain."""
    n_dims, n_results = index_map.num_dims, len(index_map.results)
    if len(shape) not in (n_dims, n_results):
        return (
            f"constraint map {index_map} has {n_dims} dimensions and {n_results} results "
            f"but the tensor has rank {len(shape)}"
        )
    if logical is None and len(shape) == n_dims and n_dims != n_results:
        logical = shape
    if index_map.num_symbols:
        return "constraint map must not have symbols"
    try:
        groups = invert_map(index_map, logical)
    except LayoutMapError as err:
        return f"constraint map {index_map} is not injective: {err}"
    for g in groups:
        if g.inner.const < 0 and g.inner.terms:
            p = next(p for p in (g.plain, g.outer, g.inner_pos) if p is not None)
            return (
                f"constraint map {index_map} puts the first element before slot 0 (result "
                f"#{p} has offset {g.inner.const}): every logical element is stored, so "
                "padding at the start is a positive offset (e.g. `d0 + 1`)"
            )
    if logical is not None and not is_injective(index_map, logical):
        return f"constraint map {index_map} is not injective on {list(logical)}"
    return None


def verify_boundary_constraints(
    arg_attrs: ArrayAttr[DictionaryAttr] | None,
    res_attrs: ArrayAttr[DictionaryAttr] | None,
    inputs: Sequence[Attribute],
    outputs: Sequence[Attribute],
) -> None:
    """Each `lamina.constraint` in a function's `arg_attrs`/`res_attrs` fits its
    tensor or buffer: rank, injectivity, pad element type (else VerifyException)."""
    from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, ConstraintAttr

    for what, attrs, types in (("parameter", arg_attrs, inputs), ("result", res_attrs, outputs)):
        for i, (entry, typ) in enumerate(zip(attrs.data if attrs else (), types, strict=False)):
            constraint = entry.data.get(CONSTRAINT_ATTR_NAME)
            if not isinstance(constraint, ConstraintAttr) or not isinstance(typ, ShapedType):
                continue
            problem = constraint_problem(
                constraint.index_map.data, typ.get_shape(), constraint.logical_shape
            )
            pad = constraint.pad
            if problem is None and isinstance(pad, FloatAttr | IntegerAttr):
                if pad.type != typ.get_element_type():
                    problem = (
                        f"pad value type {pad.type} does not match the element type "
                        f"{typ.get_element_type()}"
                    )
            if problem is not None:
                raise VerifyException(f"'{CONSTRAINT_ATTR_NAME}' of {what} #{i}: {problem}")
