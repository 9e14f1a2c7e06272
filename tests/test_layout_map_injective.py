"""`layout_maps.is_injective`: the structural shortcut (`_recoverable`) never calls a
colliding map injective; it agrees with the point-by-point check on random maps."""

from __future__ import annotations

import random

from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.ir.affine.affine_expr import AffineBinaryOpExpr, AffineBinaryOpKind

from lamina.dialects import layout_maps

D = [AffineExpr.dimension(i) for i in range(3)]


def _op(kind: AffineBinaryOpKind, lhs: AffineExpr, rhs: AffineExpr) -> AffineExpr:
    return AffineBinaryOpExpr(kind, lhs, rhs)


def _random_result(rng: random.Random) -> AffineExpr:
    x, c = rng.choice(D), AffineExpr.constant(rng.randint(1, 5))
    return rng.choice(
        [
            x,
            _op(AffineBinaryOpKind.Add, x, c),
            _op(AffineBinaryOpKind.FloorDiv, x, c),
            _op(AffineBinaryOpKind.Mod, x, c),
            _op(AffineBinaryOpKind.Mul, x, c),
            _op(AffineBinaryOpKind.Add, x, rng.choice(D)),
        ]
    )


def test_a_recoverable_map_is_injective_on_every_box() -> None:
    rng = random.Random(1)
    recoverable = 0
    for _ in range(3000):
        index_map = AffineMap(3, 0, tuple(_random_result(rng) for _ in range(rng.randint(1, 5))))
        box = tuple(rng.randint(1, 7) for _ in range(3))
        if layout_maps._recoverable(index_map):
            recoverable += 1
            assert layout_maps._injective_on_box(index_map, box), (index_map, box)
    assert recoverable > 20


def test_a_blocked_layout_is_recognized_without_the_point_check() -> None:
    """ResNet-50's classifier weight: 2 M points, checked point by point before."""
    block = AffineExpr.constant(250)
    blocked = AffineMap(
        2,
        0,
        (
            _op(AffineBinaryOpKind.FloorDiv, D[1], block),
            D[0],
            _op(AffineBinaryOpKind.Mod, D[1], block),
        ),
    )
    assert layout_maps._recoverable(blocked)
    assert layout_maps.is_injective(blocked, (2048, 1000))
    half = AffineMap(2, 0, (_op(AffineBinaryOpKind.FloorDiv, D[1], block), D[0]))
    assert not layout_maps._recoverable(half)
    assert not layout_maps.is_injective(half, (4, 500))
