"""The deal's weights: a kernel reducing over a spatial window weighs `WINDOW_WEIGHT`
times `_weight` in the deal (backends/kernel_reuse.py), and only there."""

from __future__ import annotations

from xdsl.parser import Parser

from lamina.backends import kernel_reuse
from lamina.core.context import make_context
from lamina.dialects import te

KERNEL = """
te.func @{name}(%a: tensor<2x{k}x{k}x4xf32>) -> tensor<1xf32> {{
  %c = te.compute [1] reduce [2, {k}, {k}, 4] combiner(sum) (%n, %c, %h, %w, %l) {{
    %x = te.read %a[%c, %h, %w, %l] : tensor<2x{k}x{k}x4xf32>
    te.yield %x : f32
  }} : tensor<1xf32>
  te.return %c : tensor<1xf32>
}}
"""


def _funcs() -> dict[str, te.FuncOp]:
    text = KERNEL.format(name="window", k=3) + KERNEL.format(name="pointwise", k=1)
    module = Parser(make_context(), text).parse_module()
    return {f.sym_name.data: f for f in module.ops if isinstance(f, te.FuncOp)}


def test_a_spatial_window_is_found_and_a_pointwise_reduction_is_not():
    funcs = _funcs()
    assert kernel_reuse._has_window(funcs["window"])
    assert not kernel_reuse._has_window(funcs["pointwise"])
    assert kernel_reuse.WINDOW_WEIGHT > 1


def test_the_window_weight_is_the_deals_not_the_families_scopes(monkeypatch):
    """`family_scopes` sees `_weight` (the families, hence the code, do not depend on the
    deal); the deal sees the window's kernel `WINDOW_WEIGHT` times heavier."""
    from lamina.backends import parallel_lowering

    funcs = _funcs()
    seen: dict[str, dict] = {}
    monkeypatch.setattr(
        kernel_reuse,
        "family_scopes",
        lambda weights, families: seen.setdefault("scopes", dict(weights)) and {},
    )
    monkeypatch.setattr(parallel_lowering, "MIN_KERNELS", 1)
    monkeypatch.setattr(parallel_lowering, "enabled", lambda: True)
    monkeypatch.setattr(
        parallel_lowering,
        "deal",
        lambda weights, families=None: seen.setdefault("deal", dict(weights)) and set(),
    )
    monkeypatch.setattr(parallel_lowering, "start", lambda *args, **kwargs: None)
    text = KERNEL.format(name="window", k=3) + KERNEL.format(name="pointwise", k=1)
    module = Parser(make_context(), text.replace("te.func @", "te.func private @")).parse_module()

    class Shared:
        passes: list = []
        jit = True
        delegation = None

    reuse = kernel_reuse.ReuseKernelsPass("context")
    object.__setattr__(reuse, "parallel", Shared())
    reuse.apply(make_context(), module)
    weights = {name: kernel_reuse._weight(f) for name, f in funcs.items()}
    assert seen["scopes"] == weights
    assert seen["deal"] == {
        "window": weights["window"] * kernel_reuse.WINDOW_WEIGHT,
        "pointwise": weights["pointwise"],
    }
