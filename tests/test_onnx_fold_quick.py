"""The ONNX importer's quick folds (Gather, Unsqueeze, Concat on constants) give the
arrays ONNX's reference evaluator gives, or step aside (None) for it."""

from __future__ import annotations

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402
from onnx.reference import ReferenceEvaluator  # noqa: E402

from lamina.frontends.onnx import _fold_quickly  # noqa: E402


def _reference(node, inputs):
    feeds = dict(zip(node.input, inputs, strict=True))
    return [np.asarray(v) for v in ReferenceEvaluator(node, opsets={"": 17}).run(None, feeds)]


def _same(node, inputs):
    quick = _fold_quickly(node, inputs)
    assert quick is not None, node
    want = _reference(node, inputs)
    assert len(quick) == len(want)
    for q, w in zip(quick, want, strict=True):
        assert type(q) is type(w) and q.dtype == w.dtype and q.shape == w.shape
        assert np.array_equal(q, w)


SHAPE = np.array([1, 128, 256], dtype=np.int64)


@pytest.mark.parametrize(
    ("data", "indices", "axis"),
    [
        (SHAPE, np.array(0, dtype=np.int64), None),
        (SHAPE, np.array(-1, dtype=np.int64), 0),
        (SHAPE, np.array([2, 0], dtype=np.int32), None),
        (np.arange(12, dtype=np.float32).reshape(3, 4), np.array([[1, 0], [2, 2]]), 1),
        (np.arange(12, dtype=np.int64).reshape(3, 4)[:, ::2], np.array([1]), -1),
        (np.array([True, False, True]), np.array([2, 1], dtype=np.int64), 0),
    ],
)
def test_gather(data, indices, axis):
    kwargs = {} if axis is None else {"axis": axis}
    _same(helper.make_node("Gather", ["x", "i"], ["y"], **kwargs), [data, indices])


@pytest.mark.parametrize(
    ("data", "axes"),
    [
        (np.array(7, dtype=np.int64), [0]),
        (SHAPE, [0]),
        (SHAPE, [-1]),
        (np.ones((2, 3), np.float32), [0, 3]),
        (np.ones((2, 3), np.float16), [-1, 1]),
    ],
)
def test_unsqueeze(data, axes):
    node = helper.make_node("Unsqueeze", ["x", "a"], ["y"])
    _same(node, [data, np.array(axes, dtype=np.int64)])


@pytest.mark.parametrize(
    ("inputs", "axis"),
    [
        ([np.array([1], np.int64), np.array([-1], np.int64), np.array([256], np.int64)], 0),
        ([np.ones((2, 3), np.float32), np.zeros((2, 1), np.float32)], -1),
        ([np.ones((1, 2), np.int32), np.ones((3, 2), np.int32)], 0),
        ([np.array([0], np.int64), np.array([], np.int64)], 0),
    ],
)
def test_concat(inputs, axis):
    names = [f"x{i}" for i in range(len(inputs))]
    _same(helper.make_node("Concat", names, ["y"], axis=axis), inputs)


@pytest.mark.parametrize(
    ("node", "inputs"),
    [
        (helper.make_node("Gather", ["x", "i"], ["y"]), [SHAPE, np.array(5)]),  # out of range
        (helper.make_node("Gather", ["x", "i"], ["y"]), [SHAPE, np.array(0.0)]),  # float index
        (helper.make_node("Unsqueeze", ["x", "a"], ["y"]), [SHAPE, np.array([0, 0])]),  # repeated
        (helper.make_node("Concat", ["x", "z"], ["y"], axis=1), [SHAPE, SHAPE]),  # bad axis
        (helper.make_node("Concat", ["x", "z"], ["y"], axis=0), [np.array(1), SHAPE]),  # rank 0
        (helper.make_node("Reshape", ["x", "s"], ["y"]), [SHAPE, np.array([3])]),  # not ours
    ],
)
def test_steps_aside(node, inputs):
    """Unusual or failing nodes are left to the evaluator (its errors are the importer's)."""
    assert _fold_quickly(node, inputs) is None
