"""The ONNX backend test suite (`onnx.backend.test`) with Lamina as the backend.

In scope: every node, PyTorch-converted, PyTorch-operator and simple-model
test whose operators are all supported by the importer (`HANDLERS`). Each
either runs — imported, compiled, executed natively and compared with the
suite's expected outputs at the suite's own tolerances — or is excluded
for a reason stated here:

* by rule: the model's opset is above 21 (the importer reads opsets 13–21),
  or a graph input/output has an element type Lamina lacks (unsigned
  integers, strings, bfloat16, float8, ...);
* by name (`EXCLUDED`): what the importer cannot represent exactly, each
  with the reason. For these the test checks that import fails with a
  diagnostic (never a crash or a wrong graph).

To keep CI time down, runnable tests are compiled in batches, one module
of `BATCH` functions each (`compile_models`), instead of one compilation
per test. `test_backend_test_runner` also drives a few tests through
onnx's own `BackendTest` runner with `LaminaBackend`.
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

from lamina.frontends.onnx import HANDLERS, MAX_OPSET, OnnxImportError, import_model  # noqa: E402
from lamina.frontends.onnx_backend import LaminaBackend, compile_models  # noqa: E402

KINDS = ("node", "pytorch-converted", "pytorch-operator", "simple")
BATCH = 48
SUPPORTED_TYPES = {"FLOAT", "DOUBLE", "FLOAT16", "INT8", "INT16", "INT32", "INT64", "BOOL"}

_RUNTIME_AXES = (
    "axes given as a run-time input (Lamina needs static shapes, so axes must be constants)"
)
EXCLUDED: dict[str, str] = {
    **{
        name: _RUNTIME_AXES
        for name in [
            "test_reduce_l1_do_not_keepdims_example_expanded",
            "test_reduce_l1_do_not_keepdims_random_expanded",
            "test_reduce_l1_keep_dims_example_expanded",
            "test_reduce_l1_keep_dims_random_expanded",
            "test_reduce_l1_default_axes_keepdims_example_expanded",
            "test_reduce_l1_default_axes_keepdims_random_expanded",
            "test_reduce_l1_negative_axes_keep_dims_example_expanded",
            "test_reduce_l1_negative_axes_keep_dims_random_expanded",
            "test_reduce_l1_empty_set_expanded", "test_reduce_max_do_not_keepdims_example",
            "test_reduce_max_do_not_keepdims_random", "test_reduce_max_keepdims_example",
            "test_reduce_max_keepdims_random", "test_reduce_max_negative_axes_keepdims_example",
            "test_reduce_max_negative_axes_keepdims_random", "test_reduce_max_bool_inputs",
            "test_reduce_max_empty_set", "test_reduce_max_empty_set_bool",
            "test_reduce_mean_do_not_keepdims_example", "test_reduce_mean_do_not_keepdims_random",
            "test_reduce_mean_keepdims_example", "test_reduce_mean_keepdims_random",
            "test_reduce_mean_default_axes_keepdims_example",
            "test_reduce_mean_default_axes_keepdims_random",
            "test_reduce_mean_negative_axes_keepdims_example",
            "test_reduce_mean_negative_axes_keepdims_random",
            "test_reduce_sum_do_not_keepdims_example", "test_reduce_sum_do_not_keepdims_random",
            "test_reduce_sum_keepdims_example", "test_reduce_sum_keepdims_random",
            "test_reduce_sum_default_axes_keepdims_example",
            "test_reduce_sum_default_axes_keepdims_random",
            "test_reduce_sum_negative_axes_keepdims_example",
            "test_reduce_sum_negative_axes_keepdims_random",
            "test_reduce_sum_empty_axes_input_noop_example",
            "test_reduce_sum_empty_axes_input_noop", "test_reduce_sum_empty_set",
            "test_reduce_sum_empty_set_non_reduced_axis_zero",
            "test_reduce_sum_square_do_not_keepdims_example_expanded",
            "test_reduce_sum_square_do_not_keepdims_random_expanded",
            "test_reduce_sum_square_keepdims_example_expanded",
            "test_reduce_sum_square_keepdims_random_expanded",
            "test_reduce_sum_square_default_axes_keepdims_example_expanded",
            "test_reduce_sum_square_default_axes_keepdims_random_expanded",
            "test_reduce_sum_square_negative_axes_keepdims_example_expanded",
            "test_reduce_sum_square_negative_axes_keepdims_random_expanded",
            "test_reduce_sum_square_empty_set_expanded",
        ]
    },
    **{
        name: "Pow with a run-time or non-listed exponent (supported: constant 0.5, -0.5, 1, 2, 3, -1)"
        for name in [
            "test_pow_example", "test_pow", "test_pow_bcast_scalar", "test_pow_bcast_array",
            "test_pow_types_float32_int64", "test_pow_types_int64_float32",
            "test_pow_types_float32_int32", "test_pow_types_int32_float32",
            "test_pow_types_int64_int64", "test_pow_types_int32_int32", "test_operator_pow",
        ]
    },
    **{
        name: "Slice bounds given as run-time inputs (they must be constants for static shapes)"
        for name in [
            "test_slice", "test_slice_neg", "test_slice_start_out_of_bounds",
            "test_slice_end_out_of_bounds", "test_slice_default_axes", "test_slice_default_steps",
            "test_slice_neg_steps", "test_slice_negative_axes",
        ]
    },
    **{
        name: "Split sizes given as a run-time input (they must be constants for static shapes)"
        for name in [
            f"test_split_{v}_opset{o}"
            for o in (13, 18)
            for v in ("variable_parts_1d", "variable_parts_2d", "variable_parts_default_axis",
                      "zero_size_splits")
        ]
    },
    **{
        name: "Expand to a run-time shape (the shape must be a constant)"
        for name in [
            "test_expand_dim_changed", "test_expand_dim_unchanged", "test_expand_shape_model1",
            "test_expand_shape_model2", "test_expand_shape_model3", "test_expand_shape_model4",
        ]
    },
    **{
        name: "3-D convolution / pooling (the graph dialect has 2-D ones; 1-D maps onto 2-D)"
        for name in [
            "test_Conv3d_stride_padding", "test_Conv3d", "test_Conv3d_no_bias",
            "test_Conv3d_dilated_strided", "test_Conv3d_dilated", "test_Conv3d_groups",
            "test_Conv3d_stride", "test_AvgPool3d_stride1_pad0_gpu_input", "test_AvgPool3d_stride",
            "test_AvgPool3d", "test_MaxPool3d_stride_padding", "test_MaxPool3d_stride",
            "test_MaxPool3d",
        ]
    },
    "test_batchnorm_example_training_mode": "BatchNormalization in training mode (inference only)",
    "test_batchnorm_epsilon_training_mode": "BatchNormalization in training mode (inference only)",
    "test_MaxPool1d_stride_padding_dilation": "dilated pooling (graph pools have no dilation)",
    "test_MaxPool2d_stride_padding_dilation": "dilated pooling (graph pools have no dilation)",
    "test_identity_opt": "optional-typed input (only tensors are supported)",
}  # fmt: skip
"""In-scope tests the importer refuses, with the reason (checked to fail cleanly)."""


def _model(case):
    if case.model is not None:
        return case.model
    return onnx.load(os.path.join(case.model_dir, "model.onnx"))


def _data_sets(case) -> list[tuple[list[np.ndarray], list[np.ndarray]]]:
    if case.data_sets is not None:
        return case.data_sets
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
    opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
    if opset > MAX_OPSET:
        return f"opset {opset} is above the supported range (13 to {MAX_OPSET})"
    for info in [*model.graph.input, *model.graph.output]:
        if info.type.HasField("tensor_type"):
            name = onnx.TensorProto.DataType.Name(info.type.tensor_type.elem_type)
            if name not in SUPPORTED_TYPES:
                return f"element type {name} is not supported"
    return None


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
                by_name[case.name] = case
                reason = _rule_exclusion(model) or EXCLUDED.get(case.name)
                if reason is not None:
                    excluded[case.name] = reason
                else:
                    runnable.append(case)
    return runnable, excluded, by_name


RUNNABLE, EXCLUDED_ALL, IN_SCOPE = _cases()
RUNNABLE_NAMES = [c.name for c in RUNNABLE]


@cache
def _batch(index: int):
    cases = RUNNABLE[index * BATCH : (index + 1) * BATCH]
    return compile_models([_model(c) for c in cases])


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


@pytest.mark.parametrize("name", sorted(n for n in EXCLUDED_ALL if n in EXCLUDED))
def test_listed_exclusion_fails_with_a_diagnostic(name: str) -> None:
    """Each listed exclusion is refused by the importer with a diagnostic, not a crash."""
    with pytest.raises(OnnxImportError):
        import_model(_model(IN_SCOPE[name]))


def test_exclusion_list_is_current() -> None:
    """Every name in EXCLUDED is an in-scope test (a stale entry would hide nothing)."""
    assert set(EXCLUDED) - set(EXCLUDED_ALL) == set()
    assert len(RUNNABLE) >= 300


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
