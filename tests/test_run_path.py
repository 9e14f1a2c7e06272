"""The lean `Executable.run` path: every argument check still fires, `out=` works.

Each test runs on a freshly compiled executable and on one loaded from the
disk cache (a different construction path for the same call path).
"""

from __future__ import annotations

import numpy as np
import pytest

import lamina

PROGRAM = """\
graph.func @main(%a: tensor<2x3xf32>, %b: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %s = graph.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %m = graph.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  graph.return %s, %m : tensor<2x3xf32>, tensor<2x3xf32>
}
graph.func @one(%a: tensor<4xf64>) -> tensor<4xf64> {
  %e = graph.exp %a : (tensor<4xf64>) -> tensor<4xf64>
  graph.return %e : tensor<4xf64>
}
graph.func @scalar(%a: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  graph.return %a : tensor<4xf32>
}
"""

A = np.arange(6, dtype=np.float32).reshape(2, 3) - 2
B = np.array([0.5, -1.0, 2.0], dtype=np.float32)


@pytest.fixture(scope="module", params=["cold", "cached"])
def exe(request, tmp_path_factory) -> lamina.Executable:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LAMINA_CACHE_DIR", str(tmp_path_factory.mktemp("run-path-cache")))
        first = lamina.compile(PROGRAM)
        if request.param == "cold":
            return first
        cached = lamina.compile(PROGRAM)
        assert cached.cache_hit is True
        return cached


def test_results(exe):
    s, m = exe.run("main", A, B)
    np.testing.assert_array_equal(s, A + B)
    np.testing.assert_array_equal(m, A * B)
    x = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(exe.run("one", x), np.exp(x), rtol=1e-12)


def test_repeated_calls_reuse_the_prepared_entry_and_fresh_outputs(exe):
    first = exe.run("one", np.zeros(4))
    second = exe.run("one", np.ones(4))
    assert first is not second
    np.testing.assert_array_equal(first, np.ones(4))
    np.testing.assert_allclose(second, np.full(4, np.e), rtol=1e-12)


@pytest.mark.parametrize(
    "args, message",
    [
        ((), r"@main expects 2 argument\(s\), got 0"),
        ((A,), r"@main expects 2 argument\(s\), got 1"),
        ((A, B, B), r"@main expects 2 argument\(s\), got 3"),
        ((A.astype(np.float64), B), "argument 0: expected dtype float32, got float64"),
        ((A, B.astype(np.int32)), "argument 1: expected dtype float32, got int32"),
        ((A.T.copy(), B), r"argument 0: expected shape \(2, 3\), got \(3, 2\)"),
        ((A, [1.0, 2.0, 3.0]), "argument 1: expected a numpy array float32\\[3\\], got list"),
        ((A, None), "argument 1: expected a numpy array .* got NoneType"),
        ((np.float32(1), B), r"argument 0: expected shape \(2, 3\), got \(\)"),
    ],
)
def test_every_argument_check_fires(exe, args, message):
    with pytest.raises(lamina.LaminaRuntimeError, match=message):
        exe.run("main", *args)


def test_unknown_and_non_entry_functions(exe):
    with pytest.raises(lamina.LaminaRuntimeError, match=r"no entry function 'nope' \(known: "):
        exe.run("nope")
    with pytest.raises(lamina.LaminaRuntimeError, match="@scalar cannot be called on arrays"):
        exe.run("scalar", np.zeros(4, np.float32), np.float32(1))


class _Subclass(np.ndarray):
    pass


def test_non_contiguous_read_only_and_subclass_inputs(exe):
    wide = np.arange(12, dtype=np.float32).reshape(3, 4)
    view = wide[:2, :3]  # strided: copied
    readonly = B.copy()
    readonly.flags.writeable = False  # passed by pointer all the same
    matrix = A.view(_Subclass)  # an ndarray subclass takes the checked path
    s, _ = exe.run("main", view, readonly)
    np.testing.assert_array_equal(s, view + B)
    s, _ = exe.run("main", matrix, B)
    np.testing.assert_array_equal(s, A + B)


def test_out_is_written_in_place_and_returned(exe):
    out = (np.full((2, 3), np.nan, np.float32), np.full((2, 3), np.nan, np.float32))
    result = exe.run("main", A, B, out=out)
    assert result[0] is out[0] and result[1] is out[1]
    np.testing.assert_array_equal(out[0], A + B)
    np.testing.assert_array_equal(out[1], A * B)
    single = np.empty(4)
    assert exe.run("one", np.zeros(4), out=single) is single
    np.testing.assert_array_equal(single, np.ones(4))
    assert exe.run("one", np.zeros(4), out=[single]) is single


def _outs(**change):
    outs = [np.empty((2, 3), np.float32), np.empty((2, 3), np.float32)]
    for index, value in change.items():
        outs[int(index[1:])] = value
    return outs


@pytest.mark.parametrize(
    "out, message",
    [
        (np.empty((2, 3), np.float32), r"out=: expected 2 array\(s\)"),
        ([np.empty((2, 3), np.float32)], r"out=: expected 2 array\(s\)"),
        (_outs(o1=[0.0] * 6), r"out\[1\]: expected a numpy array"),
        (
            _outs(o0=np.empty((2, 3), np.float64)),
            r"out\[0\]: expected float32\[2, 3\], got float64",
        ),
        (_outs(o1=np.empty((3, 2), np.float32)), r"out\[1\]: expected float32\[2, 3\]"),
        (_outs(o0=np.empty((3, 4), np.float32)[:2, :3]), r"out\[0\]: must be C-contiguous"),
        (
            _outs(o0=np.broadcast_to(np.float32(0), (2, 3))),
            r"out\[0\]: must be C-contiguous and writeable",
        ),
        (_outs(o0=A), r"out\[0\]: overlaps argument 0"),
        ("not arrays", r"out=: expected 2 array\(s\)"),
    ],
)
def test_bad_out_raises_clear_errors(exe, out, message):
    with pytest.raises(lamina.LaminaRuntimeError, match=message):
        exe.run("main", A, B, out=out)


def test_two_outputs_may_not_be_one_array(exe):
    shared = np.empty((2, 3), np.float32)
    with pytest.raises(lamina.LaminaRuntimeError, match=r"out\[1\]: overlaps out\[0\]"):
        exe.run("main", A, B, out=(shared, shared))
