"""Tuning records and lamina-tune (docs/tuning.md): records apply per kernel and
deterministically, malformed files are located errors, bad candidates are recorded
invalid, and the tuner runs locally and on a local Ray instance."""

from __future__ import annotations

import json
import logging
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import lamina
from lamina.target.tuning_records import (
    RecordsError,
    host_identity,
    lamina_version,
    load_records,
    parse_record,
)
from lamina.tuning.kernels import load_model, model_kernels
from lamina.tuning.measure import LocalMeasurer
from lamina.tuning.search import canonical

ROOT = Path(__file__).resolve().parents[1]

SMALL = """
graph.func @main(%x: tensor<32x64xf32>, %w: tensor<64x48xf32>, %b: tensor<48xf32>,
                 %w2: tensor<48x16xf32>) -> tensor<32x16xf32> {
  %y = graph.dataflow -> tensor<32x16xf32> {
    %0 = graph.matmul %x, %w : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
    %1 = graph.add %0, %b : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
    %2 = graph.relu %1 : (tensor<32x48xf32>) -> tensor<32x48xf32>
    %3 = graph.matmul %2, %w2 : (tensor<32x48xf32>, tensor<48x16xf32>) -> tensor<32x16xf32>
    graph.output %3 : tensor<32x16xf32>
  }
  graph.return %y : tensor<32x16xf32>
}
"""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


def _record(kernel: str, knobs: dict, cpu: str | None = None, version: str | None = None) -> str:
    name, features = host_identity()
    return json.dumps(
        {
            "kernel": kernel,
            "cpu": {"name": cpu or name, "features": list(features)},
            "lamina": version or lamina_version(),
            "knobs": knobs,
            "time": {"median": 1e-4, "spread": 0.01, "count": 5},
        }
    )


def _inputs(exe) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(p.shape).astype(p.dtype) for p in exe._signature("main").params]


def test_malformed_records_name_the_line(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    kernel = "a" * 64
    cases = {
        "not json": "not JSON",
        _record(kernel, {"no_such_knob": 1}): "unknown knob 'no_such_knob'",
        _record(kernel, {"block_rows": -1}): "knob 'block_rows' must be >= 0",
        _record(kernel, {"winograd_min_output": 4}): "decided before kernels exist",
        "[1, 2]": "a record must be a JSON object",
    }
    for line, why in cases.items():
        path.write_text(_record(kernel, {}) + "\n\n" + line + "\n")
        with pytest.raises(RecordsError, match=rf"r\.jsonl:3: .*{why}"):
            load_records(path)
        found = load_records(path, ignore_errors=True)
        assert list(found.applicable) == [kernel] and "r.jsonl:3" in found.skipped[0]


def test_records_of_another_cpu_or_version_are_ignored_with_a_note(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    path.write_text(
        _record("a" * 64, {"block_rows": 2}, cpu="pentium")
        + "\n"
        + _record("b" * 64, {"block_rows": 2}, version="0.0.1")
        + "\n"
    )
    found = load_records(path)
    assert found.applicable == {}
    notes = "\n".join(found.notes())
    assert "1 record(s) for another CPU ignored" in notes
    assert "1 record(s) of another Lamina version ignored" in notes


def test_records_apply_per_kernel_and_deterministically(small: Path, tmp_path: Path):
    """A record changes its kernel's code only; the same records give byte-identical
    code; the results stay those of the defaults; the cache key sees the records."""
    first, second = model_kernels(load_model(small))
    records = tmp_path / "r.jsonl"
    records.write_text(_record(first.key, {"block_rows": 2, "block_vector_choices": [1]}) + "\n")
    default = lamina.compile(small, cache=False)
    tuned = [lamina.compile(small, cache=False, records=str(records)) for _ in range(2)]
    assert tuned[0].compiled.object_code == tuned[1].compiled.object_code
    assert tuned[0].compiled.object_code != default.compiled.object_code
    kernels = [set(e.compiled.timings.kernels) for e in (default, tuned[0])]
    assert len(kernels[0] & kernels[1]) == 1  # the second kernel's code is shared
    args = _inputs(default)
    np.testing.assert_allclose(
        tuned[0].run("main", *args), default.run("main", *args), rtol=1e-5, atol=1e-5
    )
    from lamina.driver.compiler import CompileRequest

    keys = {CompileRequest.of(str(small), records=r).cache_key() for r in (None, str(records))}
    assert len(keys) == 2
    assert second.key != first.key


def _tool(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, timeout=timeout
    )


def test_tools_take_records_and_refuse_bad_ones(small: Path, tmp_path: Path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kernel": 1}\n')
    for tool in ("lamina.tools.lamina_run", "lamina.tools.lamina_compile"):
        out = tmp_path / "m.ll"
        extra = ["-o", str(out)] if tool.endswith("compile") else []
        result = _tool(tool, str(small), "--records", str(bad), *extra)
        assert result.returncode == 1, result.stderr
        assert "bad.jsonl:1: 'kernel' must be a 64-digit kernel key" in result.stderr
        assert "Traceback" not in result.stderr and not out.exists()
        result = _tool(tool, str(small), "--records", str(bad), "--records-ignore-errors", *extra)
        assert result.returncode == 0, result.stderr
    other = tmp_path / "other.jsonl"
    other.write_text(_record("a" * 64, {"block_rows": 2}, cpu="pentium") + "\n")
    result = _tool("lamina.tools.lamina_run", str(small), "--records", str(other), "-v")
    assert result.returncode == 0, result.stderr
    assert "1 record(s) for another CPU ignored" in result.stderr


def test_measurer_records_crashes_hangs_and_wrong_numbers(small: Path):
    """A candidate that does not build, hangs (timed out) or computes something else is
    answered as invalid, and the measuring process is started again after it."""
    first, _ = model_kernels(load_model(small))
    other = model_kernels(load_model(SMALL.replace("graph.relu", "graph.neg")))[0]
    measurer = LocalMeasurer()
    try:
        built = measurer.build_many([first.program(), "graph.func @broken("])
        assert built[0]["ok"] and not built[1]["ok"]
        wrong = measurer.check(first.key, first.program(), other.program(), 60)
        assert not wrong["ok"] and "wrong numbers" in wrong["why"]
        hung = measurer.measure(first.key, [first.program()], 10**7, 0.5)
        assert not hung["ok"] and "timed out" in hung["why"]
        again = measurer.check(first.key, first.program(), first.program({"block_rows": 2}), 60)
        assert again == {"ok": True}
    finally:
        measurer.close()


def test_one_thread_measurements_time_the_thread_cpu(small: Path, monkeypatch):
    """At one thread the measured calls run on the timing thread, so they are timed by
    its CPU time (a busy machine's waits left out); with more threads, by the wall clock."""
    from lamina.tuning import worker
    from lamina.tuning.measure import call_clock

    assert (call_clock(1), call_clock(2), call_clock(None)) == ("cpu", "wall", "wall")
    first, _ = model_kernels(load_model(small))
    ticks = iter(range(1000))
    monkeypatch.setitem(worker.CLOCKS, "cpu", lambda: float(next(ticks)))
    request = {"texts": [first.program()], "rounds": 3, "sample_seconds": 0.002, "clock": "cpu"}
    assert worker._measure(request)["samples"] == [[1.0, 1.0, 1.0]]  # one tick a call
    measurer = LocalMeasurer(threads=1)
    try:
        answer = measurer.measure(first.key, [first.program()], 3, 60)
        assert answer["ok"] and all(0 < t < 1 for t in answer["samples"][0])
    finally:
        measurer.close()


def _documented_commands() -> list[list[str]]:
    """The commands of docs/tuning.md's worked example."""
    text = (ROOT / "docs" / "tuning.md").read_text()
    block = text.split("<!-- tuning-example", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [shlex.split(line) for line in block.splitlines() if line.strip()]


def test_docs_worked_example_runs(tmp_path: Path):
    """docs/tuning.md's example: records are written, applied (same results as the
    defaults), and a budget of 0 leaves them byte for byte."""
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    commands = _documented_commands()
    assert [c[0] for c in commands] == ["lamina-tune", "lamina-run", "lamina-tune"]
    tools = {"lamina-tune": "lamina.tools.lamina_tune", "lamina-run": "lamina.tools.lamina_run"}
    outputs = []
    for command in commands:
        if command[0] == "lamina-tune" and command[2:4] == ["--budget", "0"]:
            before = (tmp_path / "mlp.jsonl").read_bytes()
        result = subprocess.run(
            [sys.executable, "-m", tools[command[0]], *command[1:]],
            capture_output=True,
            text=True,
            timeout=180,
            cwd=tmp_path,
        )
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout + result.stderr)
    assert "speed-up" in outputs[0] and "lamina-tune: model" in outputs[0]
    assert (tmp_path / "mlp.jsonl").read_bytes() == before
    found = load_records(tmp_path / "mlp.jsonl")
    assert found.applicable and all(r.trials > 0 for r in found.applicable.values())
    mlp = ROOT / "examples" / "mlp.mlir"
    tuned = lamina.compile(mlp, cache=False, records=str(tmp_path / "mlp.jsonl"))
    default = lamina.compile(mlp, cache=False)
    args = _inputs(default)
    want = default.run("main", *args)
    np.testing.assert_allclose(
        tuned.run("main", *args), want, atol=1e-4 * float(np.abs(want).max())
    )


def _ray():
    """Ray, or None when it is not installed (a directory named `ray` on the path, such
    as Ray's own /tmp/ray when /tmp is there, is not Ray)."""
    try:
        import ray
    except ImportError:
        return None
    return ray if hasattr(ray, "init") else None


def test_unreachable_ray_address_is_one_line(small: Path, tmp_path: Path):
    """One line either way: the address that does not answer, or (without the extra) how
    to install Ray."""
    result = _tool(
        "lamina.tools.lamina_tune",
        str(small),
        "--budget",
        "5",
        "--records",
        str(tmp_path / "r.jsonl"),
        "--ray",
        "127.0.0.1:1",
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0, result.stderr
    if _ray() is None:
        assert "--ray needs Ray: pip install 'lamina[ray]'" in result.stderr
    else:
        assert "cannot reach a Ray cluster at 127.0.0.1:1" in result.stderr


@pytest.fixture(scope="class")
def local_ray():
    """A Ray instance of two CPUs on loopback, started once for `TestOnLocalRay`'s tests
    and shut down after the last of them."""
    ray = _ray()
    if ray is None:
        pytest.skip("needs the ray extra (pip install -e '.[ray]')")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
        logging_level=logging.ERROR,
    )
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.mark.usefixtures("local_ray")
class TestOnLocalRay:
    """The tuner on one local Ray instance (each test leaves no actor behind)."""

    def test_tune_through_a_local_ray_instance(self, small: Path, tmp_path: Path):
        from lamina.tuning.tune import tune

        records = tmp_path / "ray.jsonl"
        result = tune(small, records, budget=4, ray="auto", measure_model=False)
        assert result.measurements > 0 and result.builds > 0
        found = load_records(records)
        assert {r.kernel for r in found.applicable.values()} <= {
            k.key for k in model_kernels(load_model(small))
        }
        assert found.applicable

    def test_ray_builds_the_next_kernels_singles_while_a_kernel_drains(self, small: Path):
        """On a Ray instance (two CPUs, build slots apart from the measurements) the second
        kernel's single-knob changes are submitted while the first kernel's phases drain; its
        own search collects them (every single tried, counted once), nothing is left over."""
        from lamina.tuning.ray_cluster import RayMeasurer
        from lamina.tuning.search import Tuner

        measurer = RayMeasurer("auto", threads=1)
        try:
            tuner = Tuner(model_kernels(load_model(small)), measurer)
            assert tuner.depth > 1
            tuner.measure_defaults()
            first, second = tuner.searches
            submitted = []
            start = tuner._start

            def spy(search, candidates):
                pending = start(search, candidates)
                if pending is not None:
                    submitted.append((search is second, tuner._upcoming is second))
                return pending

            tuner._start = spy
            tuner.tune(900)  # the space is used up long before (a time budget: ample under load)
        finally:
            measurer.close()
        assert (True, True) in submitted  # the second kernel's builds, during the first's search
        singles = {canonical(c.knobs) for c in tuner._singles()}
        for search in (first, second):
            assert not search.ahead
            assert singles <= set(search.seen)
            assert search.trials == len(search.seen) - 1  # each built once (the default: 0)


def test_parse_record_round_trips():
    line = _record("c" * 64, {"block_vector_choices": [2, 1], "block_rows": 4})
    record = parse_record(line)
    assert record.knobs == {"block_vector_choices": (2, 1), "block_rows": 4}
    assert parse_record(record.to_json()) == record


class _Skewed(LocalMeasurer):
    """The real measurer, its timings of every candidate but the default (the first text
    of a measurement) multiplied by `factor`: the search's decision made certain."""

    def __init__(self, factor: float):
        super().__init__()
        self.factor = factor

    def measure(self, kernel, texts, rounds, timeout, drop_slower=None):
        answer = super().measure(kernel, texts, rounds, timeout, drop_slower)
        if answer["ok"] and kernel:  # not the shares' measurement (every kernel's default)
            first, *rest = answer["samples"]
            answer["samples"] = [first, *[[t * self.factor for t in s] for s in rest]]
        return answer


@pytest.mark.parametrize("factor", [4.0, 0.25])
def test_default_is_candidate_zero_and_never_loses(small: Path, factor: float):
    """Candidates all slower than the default: the record keeps the defaults (a tuned
    build is the default build); all faster: the record holds the fastest's knobs."""
    from lamina.tuning.search import Tuner

    kernels = model_kernels(load_model(small))
    measurer = _Skewed(factor)
    try:
        tuner = Tuner(kernels[:1], measurer)
        tuner.measure_defaults()
        search = tuner.searches[0]
        assert search.seen[next(iter(search.seen))].knobs == {}  # candidate 0: the default
        tuner.tune(8)
        (record,) = tuner.records(measurer.identity())
    finally:
        measurer.close()
    assert record.trials > 1
    if factor > 1:
        assert record.knobs == {} and record.time == record.default
    else:
        assert record.knobs and record.time.median < record.default.median  # type: ignore[union-attr]


class _Erratic(LocalMeasurer):
    """Candidates twice as fast as the default in every other round, a little slower in
    the rest: a median speed-up of 2 that a sign test does not believe."""

    def measure(self, kernel, texts, rounds, timeout, drop_slower=None):
        answer = super().measure(kernel, texts, rounds, timeout, drop_slower)
        if answer["ok"] and kernel:
            first, *rest = answer["samples"]
            skew = [0.5 if r % 2 == 0 else 1.05 for r in range(len(first))]
            answer["samples"] = [
                first,
                *[[d * f for d, f in zip(first, skew, strict=True)] for _ in rest],
            ]
        return answer


def test_a_candidate_faster_in_only_some_rounds_keeps_the_defaults(small: Path):
    from lamina.tuning.search import FINAL_ROUNDS, FINAL_WINS, Tuner

    assert (FINAL_ROUNDS + 1) // 2 < FINAL_WINS <= FINAL_ROUNDS
    kernels = model_kernels(load_model(small))
    measurer = _Erratic()
    try:
        tuner = Tuner(kernels[:1], measurer)
        tuner.measure_defaults()
        tuner.tune(8)
        (record,) = tuner.records(measurer.identity())
    finally:
        measurer.close()
    assert record.trials > 1 and record.knobs == {}


def test_model_records_hold_graph_level_knobs_only(tmp_path: Path):
    path = tmp_path / "r.jsonl"
    model = json.loads(_record("d" * 64, {"conv_channel_block": 8}))
    path.write_text(json.dumps({**model, "scope": "model"}) + "\n")
    (record,) = load_records(path).applicable.values()
    assert record.scope == "model" and parse_record(record.to_json()) == record
    path.write_text(json.dumps({**model, "scope": "model", "knobs": {"block_rows": 2}}) + "\n")
    with pytest.raises(RecordsError, match=r"r\.jsonl:1: knob 'block_rows' is per kernel"):
        load_records(path)
    path.write_text(json.dumps({**model, "scope": "graph"}) + "\n")
    with pytest.raises(RecordsError, match=r"r\.jsonl:1: 'scope' must be"):
        load_records(path)


def test_graph_level_knobs_are_tuned_on_whole_models(tmp_path: Path):
    """A model with convolutions: the graph-level knobs are searched first and recorded
    under the model's key, which the compile finds (a hand-written model record changes
    the code, deterministically, not the results); budget 0 keeps the file byte for byte."""
    from lamina.passes.apply_model_records import model_key
    from lamina.tuning.testing import write_model_record
    from lamina.tuning.tune import tune

    cnn = ROOT / "examples" / "cnn.mlir"
    records = tmp_path / "cnn.jsonl"
    result = tune(cnn, records, budget=40, measure_model=False)
    (graph,) = [r for r in result.records if r.scope == "model"]
    assert graph.kernel == model_key(load_model(cnn, lower=False)) and graph.trials >= 1
    before = records.read_bytes()
    tune(cnn, records, budget=0)
    assert records.read_bytes() == before
    hand = tmp_path / "hand.jsonl"
    write_model_record(str(cnn), str(hand), {"conv_channel_block": 8})
    default = lamina.compile(cnn, cache=False)
    tuned = [lamina.compile(cnn, cache=False, records=str(hand)) for _ in range(2)]
    assert tuned[0].compiled.object_code == tuned[1].compiled.object_code
    assert tuned[0].compiled.object_code != default.compiled.object_code
    args = _inputs(default)
    want = default.run("main", *args)
    np.testing.assert_allclose(
        tuned[0].run("main", *args), want, atol=1e-4 * float(np.abs(want).max())
    )


def test_a_model_slower_as_a_whole_keeps_the_defaults(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """When the whole model compiled with this run's records times slower than without
    (here: its timing made so, the decision rule under test), the records are written
    with the default knobs and the model's speed-up is 1."""
    import lamina.tuning.tune as tuning

    calls = []

    def slower(*args, **kwargs):
        calls.append(kwargs.get("rounds"))
        return 1e-3, 2e-3

    monkeypatch.setattr(tuning, "model_times", slower)
    records = tmp_path / "r.jsonl"
    result = tuning.tune(small, records, budget=6)
    assert calls == [None, 31] and result.speedup == 1.0
    found = load_records(records)
    assert found.applicable and all(r.knobs == {} for r in found.applicable.values())
    assert all(r.time == r.default for r in found.applicable.values())


@pytest.mark.parametrize(
    "knobs",
    [{"block_rows_outside_columns": 1}, {"block_broadcast_registers": 2}],
    ids=["loop-order", "broadcasts"],
)
def test_register_block_knobs_apply_deterministically(small: Path, tmp_path: Path, knobs):
    """The loop order of a register block (`block_rows_outside_columns`: the row blocks
    outermost, both layers' 48- and 16-wide rows split into column blocks) and the
    broadcast registers it is sized for, as a record: byte-identical code from the same
    record, another code than the default's, the default's results."""
    first, second = model_kernels(load_model(small))
    records = tmp_path / "r.jsonl"
    records.write_text(_record(first.key, knobs) + "\n" + _record(second.key, knobs) + "\n")
    default = lamina.compile(small, cache=False)
    tuned = [lamina.compile(small, cache=False, records=str(records)) for _ in range(2)]
    assert tuned[0].compiled.object_code == tuned[1].compiled.object_code
    assert tuned[0].compiled.object_code != default.compiled.object_code
    args = _inputs(default)
    np.testing.assert_allclose(
        tuned[0].run("main", *args), default.run("main", *args), rtol=1e-4, atol=1e-4
    )


def test_graph_candidates_of_the_default_plan_are_not_built():
    """A graph-level knob that leaves the plan (the model through `lower-te`) as the
    default's is skipped without a build: on the AVX2 build `conv_channel_block = 8` is
    the derived block and the CNN has no grouped convolution; 32 is another plan."""
    from lamina.tuning.graph_search import GraphSearch, _plan

    cnn = ROOT / "examples" / "cnn.mlir"
    search = GraphSearch(str(cnn), "key", ["cpu{isa=avx2}"])
    default = _plan(search, {})
    assert _plan(search, {"conv_channel_block": 8}) == default
    assert _plan(search, {"conv_grouped_min_width": 1 << 30}) == default
    assert _plan(search, {"conv_channel_block": 32}) != default
