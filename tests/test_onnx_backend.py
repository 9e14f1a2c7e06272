"""The ONNX backend node tests (`onnx.backend.test`, the installed onnx's
onnx/backend/test/data/node) with Lamina as the backend.

In scope: every node, PyTorch-converted, PyTorch-operator and simple-model
test whose operators are all supported by the importer (`HANDLERS`) and
whose inputs and outputs have element types Lamina has. Graph inputs that
decide shapes (axes, target shapes, sizes, K, ...) are bound to the test's
values (`compile_models(bind=...)`, as `LaminaBackend` does at the first
run). Each in-scope test either runs — imported, compiled, executed
natively and compared with the suite's expected outputs at its own
tolerances — or is refused by name (`EXCLUDED`, with the reason; checked
to fail with a diagnostic naming the node, never a crash or a wrong graph).

CI time: the runnable tests are compiled in batches, one module of `BATCH`
functions each, and CI runs every `SAMPLE`-th of them (sorted by name);
`LAMINA_ONNX_NODE_TESTS=all` runs them all. docs/onnx.md states the pass
rate over the full set.
"""

from __future__ import annotations

import io
import os
import unittest
import warnings
from functools import cache

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx.backend.test.loader import load_model_tests  # noqa: E402

from lamina.frontends.onnx import HANDLERS, OnnxImportError  # noqa: E402
from lamina.frontends.onnx_backend import (  # noqa: E402
    LaminaBackend,
    _input_names,
    bind_shape_inputs,
    compile_models,
)

KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")
BATCH = 48
REFUSED_LIMIT = 0.02
"""Refused in-scope tests at most (measured: 15 of 983, 1.5 %)."""
SAMPLE = 1 if os.environ.get("LAMINA_ONNX_NODE_TESTS") == "all" else 4
SUPPORTED_TYPES = {"FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "BOOL"}

_RANDOM = "training_mode = true with a ratio above 0 (random) is not supported"
_ANTIALIAS = "antialias = 1 is not supported"
_RUNTIME_PADS = "input #1 (pads) must be a constant"
"""CenterCropPad's expansion computes Pad's pads from a run-time shape input: the result's
shape would depend on run-time values."""
EXCLUDED: dict[str, str] = {
    "test_convtranspose_3d": "only 1-D and 2-D transposed convolution are supported",
    **{f"test_training_dropout{v}": _RANDOM for v in ("", "_mask", "_default", "_default_mask")},
    **{f"test_resize_downsample_{v}_antialias": _ANTIALIAS
       for v in ("scales_linear", "sizes_linear", "scales_cubic", "sizes_cubic")},
    **{f"test_center_crop_pad_{v}_expanded": _RUNTIME_PADS
       for v in ("crop", "pad", "crop_and_pad", "crop_axes_hwc", "crop_negative_axes_hwc",
                 "crop_axes_chw")},
}  # fmt: skip
"""In-scope tests the importer refuses, with the reason (checked to fail cleanly)."""


def _model(case):
    if case.model is not None:
        return case.model
    return onnx.load(os.path.join(case.model_dir, "model.onnx"))


def _data_sets(case) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    if case.data_sets is not None:  # in-memory sets may hold TensorProtos
        from onnx import numpy_helper

        def arrays(values) -> list[np.ndarray]:
            return [numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
                    for v in values]  # fmt: skip

        return [(arrays(i), arrays(o)) for i, o in case.data_sets]
    import glob

    from onnx import numpy_helper

    sets = []
    for folder in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set*"))):

        def tensors(prefix: str, folder: str = folder) -> list[np.ndarray]:
            files = sorted(glob.glob(os.path.join(folder, f"{prefix}_*.pb")))
            return [numpy_helper.to_array(onnx.load_tensor(f)) for f in files]

        sets.append((tensors("input"), tensors("output")))
    return sets


def _rule_exclusion(model) -> str | None:
    for info in [*model.graph.input, *model.graph.output]:
        if info.type.HasField("tensor_type"):
            name = onnx.TensorProto.DataType.Name(info.type.tensor_type.elem_type)
            if name not in SUPPORTED_TYPES:
                return f"element type {name} is not supported"
        else:
            return "a non-tensor (optional or sequence) input or output"
    return None


def _feeds(case) -> dict[str, np.ndarray]:
    """The first data set's inputs by graph input name (what shape-deciding inputs bind to)."""
    sets = _data_sets(case)
    return dict(zip(_input_names(_model(case)), sets[0][0], strict=False)) if sets else {}


@cache
def _cases() -> tuple[list, dict[str, str], dict]:
    """(runnable cases, {excluded name: reason}, {name: case}) over the in-scope tests."""
    runnable, excluded, by_name = [], {}, {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the suite's generators warn about overflowing casts
        for kind in KINDS:
            for case in load_model_tests(kind=kind):
                model = _model(case)
                ops = {n.op_type for n in model.graph.node}
                if not ops or not ops <= set(HANDLERS):
                    continue
                if _rule_exclusion(model) is not None:
                    continue
                by_name[case.name] = case
                if case.name in EXCLUDED:
                    excluded[case.name] = EXCLUDED[case.name]
                else:
                    runnable.append(case)
    return runnable, excluded, by_name


ALL_RUNNABLE, EXCLUDED_ALL, IN_SCOPE = _cases()
RUNNABLE = sorted(ALL_RUNNABLE, key=lambda c: c.name)[::SAMPLE]
RUNNABLE_NAMES = [c.name for c in RUNNABLE]


@cache
def _batch(index: int):
    cases = RUNNABLE[index * BATCH : (index + 1) * BATCH]
    return compile_models([_model(c) for c in cases], [_feeds(c) for c in cases])


@pytest.mark.parametrize("name", RUNNABLE_NAMES)
def test_onnx_backend_case(name: str) -> None:
    position = RUNNABLE_NAMES.index(name)
    case = RUNNABLE[position]
    rep = _batch(position // BATCH)[position % BATCH]
    for inputs, expected in _data_sets(case):
        got = rep.run(inputs)
        assert len(got) == len(expected)
        for g, w in zip(got, expected, strict=True):
            w = np.asarray(w)
            assert g.shape == w.shape
            if w.dtype.kind in "fc":
                np.testing.assert_allclose(g, w, rtol=case.rtol, atol=case.atol)
            else:
                np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", sorted(EXCLUDED_ALL))
def test_listed_exclusion_fails_with_a_diagnostic(name: str) -> None:
    """Each listed exclusion is refused by the importer with a located diagnostic
    (the node by name or '#index', its op type and opset) and the listed reason."""
    case = IN_SCOPE[name]
    with pytest.raises(OnnxImportError) as err:
        bind_shape_inputs(_model(case), _feeds(case))
    message = str(err.value)
    assert EXCLUDED[name] in message, message


def test_exclusion_list_is_current() -> None:
    """Every name in EXCLUDED is an in-scope test, and at most 2 % of the
    tests in scope are refused."""
    assert set(EXCLUDED) - set(EXCLUDED_ALL) == set()
    nodes = list(IN_SCOPE)
    refused = [n for n in nodes if n in EXCLUDED]
    assert len(ALL_RUNNABLE) >= 600
    assert len(refused) <= REFUSED_LIMIT * len(nodes), (len(refused), len(nodes))


def test_backend_test_runner() -> None:
    """onnx's own runner (`BackendTest`) with `LaminaBackend`, on a few node tests."""
    import onnx.backend.test

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        backend_test = onnx.backend.test.BackendTest(LaminaBackend, __name__)
    for pattern in (r"^test_relu_cpu$", r"^test_add_bcast_cpu$", r"^test_softmax_axis_1_cpu$"):
        backend_test.include(pattern)
    suite = unittest.TestSuite()
    for case_class in backend_test.test_cases.values():
        suite.addTests(unittest.defaultTestLoader.loadTestsFromTestCase(case_class))
    result = unittest.TextTestRunner(stream=io.StringIO(), verbosity=0).run(suite)
    assert result.testsRun >= 3
    ran = result.testsRun - len(result.skipped)
    assert ran == 3 and result.wasSuccessful(), (result.failures, result.errors)
