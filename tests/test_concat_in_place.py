"""Concatenations in place (`concat-in-place`, passes/concat_in_place.py): the
kernels producing a concatenation's inputs write their slices of its output,
against onnxruntime, on the host's ISA and on the AVX2 build, with the pass on
(the default) and off (`concat_in_place=0`).

Cases: SqueezeNet's fire module (1x1 and 3x3 expansions of one squeeze), a
GoogLeNet-like block of four branches (one a max pool and a 1x1 convolution),
the concatenation as the model's output, a concatenation whose input is read
elsewhere too (left as a copy), channel counts that are not whole 16-channel
blocks (24 + 40: in place where the layout plan keeps NCHW, a copy on blocks)
and a batch of 2 (slices not contiguous:
left as a copy).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.frontends.onnx import import_model

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx_util import make_model, run_ort  # noqa: E402

HOST = "cpu"
AVX2 = "cpu{isa=avx2}"
RNG = np.random.default_rng(5)


def _conv(nodes, inits, name, x, cin, cout, k=1, relu=True):
    inits[name + "_w"] = (RNG.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(
        np.float32
    )
    inits[name + "_b"] = RNG.standard_normal(cout).astype(np.float32)
    out = name + ("_c" if relu else "")
    nodes.append(helper.make_node("Conv", [x, name + "_w", name + "_b"], [out], pads=[k // 2] * 4))
    if relu:
        nodes.append(helper.make_node("Relu", [out], [name]))
    return name


def _fire(cin=64, squeeze=16, expand=64, size=14, batch=1, tail=True):
    nodes, inits = [], {}
    s = _conv(nodes, inits, "s", "x", cin, squeeze)
    a = _conv(nodes, inits, "e1", s, squeeze, expand)
    b = _conv(nodes, inits, "e3", s, squeeze, expand, k=3)
    nodes.append(helper.make_node("Concat", [a, b], ["y"], axis=1))
    out = _conv(nodes, inits, "t", "y", 2 * expand, 32) if tail else "y"
    x = RNG.standard_normal((batch, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, [out], inits), x


def _inception(cin=48, size=14):
    nodes, inits = [], {}
    b1 = _conv(nodes, inits, "b1", "x", cin, 32)
    r3 = _conv(nodes, inits, "r3", "x", cin, 16)
    b3 = _conv(nodes, inits, "b3", r3, 16, 48, k=3)
    r5 = _conv(nodes, inits, "r5", "x", cin, 16)
    b5 = _conv(nodes, inits, "b5", r5, 16, 16, k=3)
    nodes.append(
        helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[3, 3], pads=[1] * 4, strides=[1, 1])
    )
    b4 = _conv(nodes, inits, "b4", "p", cin, 16)
    nodes.append(helper.make_node("Concat", [b1, b3, b5, b4], ["y"], axis=1))
    t = _conv(nodes, inits, "t", "y", 112, 32)
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, [t], inits), x


def _two_convs(ca=32, cb=32, shortcut=False, cin=32, size=14):
    """concat(conv(x) of `ca` channels, conv(x) of `cb`) -> conv; with `shortcut`, the
    first conv's output is also added to the result (read twice: stays a copy)."""
    nodes, inits = [], {}
    a = _conv(nodes, inits, "a", "x", cin, ca)
    b = _conv(nodes, inits, "b", "x", cin, cb)
    nodes.append(helper.make_node("Concat", [a, b], ["y"], axis=1))
    c = _conv(nodes, inits, "c", "y", ca + cb, 32)
    if shortcut:
        nodes.append(helper.make_node("Add", [c, a], ["z"]))
    x = RNG.standard_normal((1, cin, size, size)).astype(np.float32)
    return make_model(nodes, {"x": x}, ["z" if shortcut else c], inits), x


MODELS = {
    "fire": (_fire, True),
    "fire_output": (lambda: _fire(tail=False), True),
    "inception": (_inception, True),
    "shared_input": (lambda: _two_convs(shortcut=True), False),
    "partial_blocks": (lambda: _two_convs(24, 40), None),  # in place on NCHW, a copy on NCHW16c
    "batch": (lambda: _fire(batch=2), False),
}


def _concat_calls(tmp: Path) -> int:
    """Calls of concatenation kernels left in the host code (the build phase's)."""
    text = (tmp / "3_build.mlir").read_text()
    return sum(1 for line in text.splitlines() if "llvm.call @te_concat_" in line)


@pytest.mark.parametrize(
    ("case", "rule", "isa"),
    [(case, 1, HOST) for case in MODELS]
    + [(case, 1, AVX2) for case in ("fire", "inception")]
    + [("fire", 0, HOST)],
)
def test_concat_in_place_matches_onnxruntime(case, rule, isa, tmp_path) -> None:
    build, in_place = MODELS[case]
    model, x = build()
    (want,) = run_ort(model, {"x": x})
    options = f"concat_in_place={rule}"
    target = f"{isa[:-1]} {options}}}" if isa.endswith("}") else f"{isa}{{{options}}}"
    exe = lamina.compile(import_model(model).module, targets=[target], dump_phases_to=tmp_path)
    got = exe.run("main", x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    if in_place is not None:
        assert (_concat_calls(tmp_path) == 0) == (in_place and rule == 1)
