"""Graph-level choices per convolution (docs/tuning.md, "Per-convolution choices"): a
model record's `conv2d#N` entries reach that convolution only, the defaults give the
default's code byte for byte, the records round-trip, and the graph-level search tries
them convolution by convolution, the largest share of the multiply-adds first."""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.passes.apply_model_records import model_key
from lamina.target.registry import module_facts
from lamina.target.tuning_records import (
    RecordsError,
    host_identity,
    lamina_version,
    load_records,
    parse_record,
    split_op_knobs,
)
from lamina.tuning.graph_search import GraphSearch, _op_candidates, _parse, _text, search_graph
from lamina.tuning.kernels import load_model
from lamina.tuning.testing import write_model_record

# Two 3x3 stride-1 convolutions whose weights are parameters: both are computed by
# Winograd by default (a 16x16 output, transformed weights in L2), the second has
# twice the multiply-adds of the first.
TWO_CONVS = """
graph.func @main(%x: tensor<1x16x16x16xf32>, %w0: tensor<32x16x3x3xf32>,
                 %w1: tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32> {
  %y = graph.conv2d %x, %w0 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x16x16x16xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x16x16xf32>
  %r = graph.relu %y : (tensor<1x32x16x16xf32>) -> tensor<1x32x16x16xf32>
  %z = graph.conv2d %r, %w1 {padding = array<i64: 1, 1, 1, 1>} : (tensor<1x32x16x16xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x16x16xf32>
  graph.return %z : tensor<1x32x16x16xf32>
}
"""


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "two_convs.mlir"
    path.write_text(TWO_CONVS)
    return path


def _args(exe) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(p.shape).astype(p.dtype) for p in exe._signature("main").params]


def _compile(model: Path, tmp_path: Path, knobs: dict | None):
    if knobs is None:
        return lamina.compile(model, cache=False)
    records = tmp_path / f"r{len(list(tmp_path.iterdir()))}.jsonl"
    write_model_record(str(model), str(records), knobs)
    return lamina.compile(model, cache=False, records=str(records))


def test_per_conv_records_round_trip_and_bad_ones_are_located(tmp_path: Path):
    name, features = host_identity()
    line = {
        "kernel": "d" * 64,
        "scope": "model",
        "cpu": {"name": name, "features": list(features)},
        "lamina": lamina_version(),
        "knobs": {"conv2d#3": {"conv_winograd": 0}, "conv_channel_block": 8},
        "time": {"median": 1e-3, "spread": 0.0, "count": 1},
    }
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(line) + "\n")
    (record,) = load_records(path).applicable.values()
    assert parse_record(record.to_json()) == record
    assert split_op_knobs(record.knobs) == ({"conv_channel_block": 8}, {3: {"conv_winograd": 0}})
    bad = {
        "conv2d#x": {"conv_winograd": 0},
        "conv2d#1": {"block_rows": 4},
        "conv2d#2": {"conv_winograd": 2},
    }
    whys = ["a convolution is named conv2d#N", "not set per convolution", "must be 0"]
    for (key, value), why in zip(bad.items(), whys, strict=True):
        path.write_text(json.dumps({**line, "knobs": {key: value}}) + "\n")
        with pytest.raises(RecordsError, match=rf"r\.jsonl:1: .*{why}"):
            load_records(path)
    kernel_record = {k: v for k, v in line.items() if k != "scope"}
    path.write_text(json.dumps(kernel_record) + "\n")
    with pytest.raises(RecordsError, match="unknown knob 'conv2d#3'"):
        load_records(path)


def test_per_conv_knobs_reach_their_convolution_only(model: Path, tmp_path: Path):
    """The defaults written per convolution give the default's code byte for byte; the
    direct kernel for the second convolution alone is another code than the default's
    and than the direct kernel for both (the model-wide knob), with the same results."""
    lanes = module_facts(load_model(model, lower=False)).lanes(32)
    default = _compile(model, tmp_path, None)
    same = _compile(
        model,
        tmp_path,
        {"conv2d#0": {"conv_channel_block": lanes}, "conv2d#1": {"conv_winograd": 1}},
    )
    assert same.compiled.object_code == default.compiled.object_code
    second = [_compile(model, tmp_path, {"conv2d#1": {"conv_winograd": 0}}) for _ in range(2)]
    both = _compile(model, tmp_path, {"conv_winograd": 0})
    assert second[0].compiled.object_code == second[1].compiled.object_code
    codes = {default.compiled.object_code, second[0].compiled.object_code}
    assert len(codes | {both.compiled.object_code}) == 3
    block = _compile(model, tmp_path, {"conv2d#0": {"conv_channel_block": 2 * lanes}})
    assert block.compiled.object_code not in codes
    args = _args(default)
    want = np.asarray(default.run("main", *args))
    for exe in (second[0], both, block):
        np.testing.assert_allclose(
            np.asarray(exe.run("main", *args)), want, atol=1e-4 * float(np.abs(want).max())
        )


def test_search_tries_convolutions_largest_share_first(model: Path, tmp_path: Path):
    """The per-convolution candidates start with the convolution of the most
    multiply-adds (the second here), skip the derived channel block, and a short search
    times some of them as whole models and writes a model record that round-trips."""
    lanes = module_facts(load_model(model, lower=False)).lanes(32)
    key = model_key(load_model(model, lower=False))
    search = GraphSearch(str(model), key, None, clock="cpu")
    candidates = list(_op_candidates(search))
    assert candidates[0] == {"conv2d#1": {"conv_winograd": 0}}
    assert [c for c in candidates if "conv2d#0" in c][0] == {"conv2d#0": {"conv_winograd": 0}}
    assert {"conv2d#1": {"conv_channel_block": lanes}} not in candidates
    for knobs in candidates:
        assert _parse(_text(knobs)) == knobs
    search_graph(search, host_identity(), time.perf_counter() + 60, lambda s: None)
    assert any(text.startswith("conv2d#") for text in search.ratios), search.invalid
    record = search.record(host_identity())
    again = parse_record(record.to_json())
    assert (again.kernel, again.scope, again.knobs) == (key, "model", search.knobs)


def test_a_record_for_a_convolution_the_model_lacks_is_an_error(model: Path, tmp_path: Path):
    """A hand-edited `conv2d#N` past the model's convolutions is a diagnostic naming
    the entry, never silently dropped."""
    with pytest.raises(lamina.DiagnosticError, match=r"'conv2d#7'.* 2 graph.conv2d ops"):
        _compile(model, tmp_path, {"conv2d#7": {"conv_winograd": 0}})
