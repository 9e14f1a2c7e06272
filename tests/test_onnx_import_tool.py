"""`lamina-import-onnx` and the importer's diagnostics: what cannot be imported
exactly is an error naming the node (name, op type, opset), exit status 1, no
traceback and no output file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from onnx_util import make_model, run_ort

import lamina
from lamina.frontends.onnx import MAX_OPSET
from lamina.tools.lamina_import_onnx import main

from onnx import TensorProto, helper, save  # isort: skip


def _tool(capsys, *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def _save(tmp_path: Path, model, name: str = "m.onnx") -> str:
    path = tmp_path / name
    save(model, str(path))
    return str(path)


def _conv_model(opset: int = 17):
    rng = np.random.default_rng(0)
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
        helper.make_node("Relu", ["c"], ["y"], name="relu"),
    ]
    x = rng.standard_normal((1, 2, 5, 5)).astype(np.float32)
    inits = {"w": rng.standard_normal((3, 2, 3, 3)).astype(np.float32)}
    return make_model(nodes, {"x": x}, ["y"], inits, opset), x


def test_import_writes_a_module_that_compiles_and_matches(tmp_path, capsys) -> None:
    model, x = _conv_model()
    out = tmp_path / "m.mlir"
    code, _, err = _tool(capsys, _save(tmp_path, model), "-o", str(out))
    assert code == 0, err
    text = out.read_text()
    assert "graph.func @main(%x: tensor<1x2x5x5xf32>) -> tensor<1x3x5x5xf32>" in text
    assert "graph.constant dense<" in text
    got = lamina.compile(text).run("main", x)
    np.testing.assert_allclose(got, run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_elided_weights_print_as_mlirs_marker(tmp_path, capsys) -> None:
    """`--mlir-elide-elementsattrs-if-larger N`: the 54-element weight is
    elided (a readable structure), and the flag is checked."""
    model, _ = _conv_model()
    path = _save(tmp_path, model)
    code, out, err = _tool(capsys, path, "--mlir-elide-elementsattrs-if-larger", "16")
    assert code == 0, err
    assert "graph.constant dense_resource<__elided__> : tensor<3x2x3x3xf32>" in out
    code, out, err = _tool(capsys, path, "--mlir-elide-elementsattrs-if-larger", "-2")
    assert code == 1 and "expects N >= 0" in err and not out


def test_old_opset_is_upgraded_with_a_note(tmp_path, capsys) -> None:
    model, _ = _conv_model(opset=11)
    code, out, err = _tool(capsys, _save(tmp_path, model))
    assert code == 0, err
    assert "note: the model was upgraded from opset 11 to 13" in err
    assert "graph.conv2d" in out


def _error_of(tmp_path, capsys, model, *extra: str) -> str:
    out = tmp_path / "never.mlir"
    code, _, err = _tool(capsys, _save(tmp_path, model), "-o", str(out), *extra)
    assert code == 1
    assert "Traceback" not in err
    assert not out.exists()
    return err


def test_unknown_operator_names_the_node(tmp_path, capsys) -> None:
    node = helper.make_node("Celu", ["x"], ["y"], name="act")
    err = _error_of(tmp_path, capsys, make_model([node], {"x": np.zeros(3, np.float32)}, ["y"]))
    assert "m.onnx: error: node 'act' (Celu, opset 17): operator is not supported" in err


def test_unsupported_attribute_names_it(tmp_path, capsys) -> None:
    node = helper.make_node("Resize", ["x", "", "s"], ["y"], antialias=1, name="rs")
    x = np.zeros((1, 1, 6, 6), np.float32)
    scales = {"s": np.array([1, 1, 0.5, 0.5], np.float32)}
    err = _error_of(tmp_path, capsys, make_model([node], {"x": x}, ["y"], scales, opset=19))
    assert "node 'rs' (Resize, opset 19): antialias = 1 is not supported" in err
    node = helper.make_node("Softmax", ["x"], ["y"], axis=1, foo=3, name="sm")
    err = _error_of(tmp_path, capsys, make_model([node], {"x": x}, ["y"]))
    assert "node 'sm' (Softmax, opset 17): attribute 'foo' (= 3) is not supported" in err


def test_runtime_shape_input_is_refused(tmp_path, capsys) -> None:
    node = helper.make_node("Reshape", ["x", "s"], ["y"], name="rs")
    inputs = {"x": np.zeros((2, 3), np.float32), "s": np.array([3, 2], np.int64)}
    err = _error_of(tmp_path, capsys, make_model([node], inputs, ["y"]))
    assert (
        "node 'rs' (Reshape, opset 17): input #1 (shape) is the graph input 's', which must be a constant"
        in err
    )


def test_dynamic_dimension_and_its_override(tmp_path, capsys) -> None:
    node = helper.make_node("Relu", ["x"], ["y"], name="r")
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    code, out, err = _tool(capsys, _save(tmp_path, model))
    assert code == 0, err  # a leading dim_param is the dynamic batch (docs/dynamic-shapes.md)
    assert "graph.func @main(%x: tensor<?x4xf32>) -> tensor<?x4xf32>" in out
    assert "lamina.bounds = {N = array<i64: 1, 64>}" in out
    code, out, err = _tool(capsys, _save(tmp_path, model), "--batch-bounds", "2:16")
    assert code == 0 and "lamina.bounds = {N = array<i64: 2, 16>}" in out, err
    code, out, err = _tool(capsys, _save(tmp_path, model), "--batch-bounds", "0:16")
    assert code == 1 and "--batch-bounds expects LO:HI with 1 <= LO <= HI, got '0:16'" in err
    code, out, err = _tool(capsys, _save(tmp_path, model), "--input-shape", "x=2,4")
    assert code == 0, err
    assert "graph.func @main(%x: tensor<2x4xf32>) -> tensor<2x4xf32>" in out
    other = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "f"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )  # fmt: skip
    err = _error_of(
        tmp_path, capsys, helper.make_model(other, opset_imports=[helper.make_opsetid("", 17)])
    )
    assert "input 'x' has a dynamic dimension 1 ('f')" in err
    assert "--input-shape x=" in err


def test_opset_out_of_range(tmp_path, capsys) -> None:
    """Above the installed onnx package's newest opset: refused, suggesting the converter."""
    node = helper.make_node("Relu", ["x"], ["y"])
    newer = MAX_OPSET + 1
    model = make_model([node], {"x": np.zeros(3, np.float32)}, ["y"], opset=newer)
    err = _error_of(tmp_path, capsys, model)
    assert f"m.onnx: error: opset {newer} is not supported (supported: 13 to {MAX_OPSET}" in err
    assert f"onnx.version_converter.convert_version(model, {MAX_OPSET})" in err


def test_newest_opset_is_read(tmp_path, capsys) -> None:
    """The installed onnx's newest opset (what `helper.make_model` writes by default)."""
    from onnx.defs import onnx_opset_version

    assert onnx_opset_version() == MAX_OPSET
    model, x = _conv_model(opset=MAX_OPSET)
    code, out, err = _tool(capsys, _save(tmp_path, model))
    assert code == 0, err
    got = lamina.compile(out).run("main", x)
    np.testing.assert_allclose(got, run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5)


def test_operator_changed_after_the_audited_opset(monkeypatch) -> None:
    """A definition newer than the importer knows is refused by name, not guessed."""
    from lamina.frontends import onnx as frontend

    monkeypatch.setattr(frontend, "AUDITED_OPSET", 21)
    model, _ = _conv_model(opset=22)  # Conv's definition is from opset 22
    with pytest.raises(frontend.OnnxImportError, match=r"node 'conv' \(Conv, opset 22\): the "
                       "operator's definition changed in opset 22"):  # fmt: skip
        frontend.import_model(model)


def test_schema_not_asked_at_or_below_the_audited_opset(monkeypatch) -> None:
    """The definition in force at an opset is from that opset or older: a model at or
    below the audited opset never needs ONNX's schema registry (25 ms to set up)."""
    from lamina.frontends import onnx as frontend

    def asked(op_type: str, opset: int) -> int:
        raise AssertionError(f"schema of {op_type} asked at opset {opset}")

    monkeypatch.setattr(frontend, "_since_version", asked)
    monkeypatch.setattr(frontend, "AUDITED_OPSET", 22)
    model, _ = _conv_model(opset=22)
    frontend.import_model(model)
    monkeypatch.setattr(frontend, "AUDITED_OPSET", 21)  # above it: asked (and refused)
    with pytest.raises(AssertionError, match="schema of Conv asked at opset 22"):
        frontend.import_model(model)


def test_unconvertible_old_opset(tmp_path, capsys) -> None:
    """An operator the converter does not know: a clear error, not its assertion text alone."""
    node = helper.make_node("NoSuchOp", ["x"], ["y"], name="odd")
    model = make_model([node], {"x": np.zeros((2, 2), np.float32)}, ["y"], opset=10)
    err = _error_of(tmp_path, capsys, model)
    assert "opset 10 is older than 13 and onnx.version_converter cannot upgrade it" in err


def test_inference_only(tmp_path, capsys) -> None:
    """Random dropout (training mode, ratio above 0) has no exact translation."""
    node = helper.make_node("Dropout", ["x", "r", "t"], ["y"], name="drop")
    consts = {"r": np.float32(0.5), "t": np.array(True)}
    err = _error_of(tmp_path, capsys, make_model([node], {"x": np.zeros((1, 2, 2), np.float32)},
                                                 ["y"], consts))  # fmt: skip
    assert "node 'drop' (Dropout, opset 17): training_mode = true with a ratio above 0" in err


def test_malformed_and_missing_files(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x08\x07this is not protobuf\xff\xff")
    code, _, err = _tool(capsys, str(bad), "-o", str(tmp_path / "out.mlir"))
    assert code == 1 and "bad.onnx: error: not a valid ONNX model" in err
    assert "Traceback" not in err and not (tmp_path / "out.mlir").exists()
    code, _, err = _tool(capsys, str(tmp_path / "missing.onnx"))
    assert code == 1 and "missing.onnx: error: no such file" in err


def test_bad_input_shape_flag(tmp_path, capsys) -> None:
    model, _ = _conv_model()
    code, _, err = _tool(capsys, _save(tmp_path, model), "--input-shape", "x")
    assert code == 1
    assert "--input-shape expects NAME=D0,D1,..." in err


def test_inconsistent_node_is_a_diagnostic(tmp_path, capsys) -> None:
    nodes = [helper.make_node("Expand", ["x", "s"], ["y"], name="ex")]
    shape = np.array([4, 5], np.int64)
    model = make_model(nodes, {"x": np.zeros((3, 1), np.float32)}, ["y"], {"s": shape})
    err = _error_of(tmp_path, capsys, model)
    assert "node 'ex' (Expand, opset 17): invalid node:" in err


def test_each_op_is_located_at_its_node_and_profiles_name_them(tmp_path, capsys) -> None:
    """The importer locates each op at its node (`loc("name")`, an unnamed node at its
    op type and index); `--print-debuginfo` prints them, the tools keep them when they
    parse the text, and a profiling build times each call site under its nodes."""
    model, x = _conv_model()
    model.graph.node[1].name = ""  # unnamed: "Relu#1"
    path = _save(tmp_path, model)
    out = tmp_path / "m.mlir"
    code, _, err = _tool(capsys, path, "-o", str(out), "--print-debuginfo")
    assert code == 0, err
    text = out.read_text()
    assert "graph.conv2d" in text and 'loc("conv")' in text and 'loc("Relu#1")' in text
    assert "loc(" not in (_tool(capsys, path)[1])  # without the flag: no locations
    for source in (path, text):
        exe = lamina.compile(source, profile=True, cache=False)
        np.testing.assert_allclose(
            exe.run("main", x), run_ort(model, {"x": x})[0], rtol=1e-4, atol=1e-5
        )
        profile = exe.profile("main", x, runs=3)
        assert [(s.ops, s.calls) for s in profile.sites] == [(("conv", "Relu#1"), 3)]
        assert profile.sites[0].symbol == profile.kernels[0].symbol
        assert "conv, Relu#1" in profile.sites_table()
