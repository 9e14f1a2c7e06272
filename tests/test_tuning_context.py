"""The in-context search (tuning/context.py): kernels' candidates timed inside the whole
model keep their knobs only when they win there, and the single-knob changes are tried
in the order that pays on networks."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_tuning import SMALL

from lamina.target.tuning_records import load_records
from lamina.tuning.context import (
    FEW_REGISTERS_ROWS,
    PRIORITY,
    THREAD_KNOBS,
    VALUE_ORDER,
    ContextSearch,
    singles,
)
from lamina.tuning.kernels import load_model, model_kernels
from lamina.tuning.measure import LocalMeasurer
from lamina.tuning.search import CHOICES, canonical


@pytest.fixture
def small(tmp_path: Path) -> Path:
    """test_tuning.py's two-layer model, as a file."""
    path = tmp_path / "small.mlir"
    path.write_text(SMALL)
    return path


def test_singles_follow_the_priority_and_skip_thread_knobs_at_one_thread():
    one, many = singles(1), singles(None)
    assert one[0] == {PRIORITY[0]: VALUE_ORDER[PRIORITY[0]][0]}
    assert not {k for c in one for k in c} & THREAD_KNOBS
    everything = {(k, v) for k, values in CHOICES.items() for v in values}
    assert {next(iter(c.items())) for c in many} == everything
    assert len(many) == len(everything) and all(len(c) == 1 for c in many)
    few = singles(1, registers=16)  # AVX2: the register rows smallest first, the same set
    assert [c["block_rows"] for c in few[:4]] == list(FEW_REGISTERS_ROWS[:4])
    assert sorted(map(canonical, few)) == sorted(map(canonical, one))


class _Skewed(LocalMeasurer):
    """The real measurer (real builds, checks and profiles), every kernel of a candidate
    build timed `factor` times its measured time: the search's decision made certain."""

    def __init__(self, factor: float):
        super().__init__(threads=1)
        self.factor = factor

    def model(self, model, targets, base_records, records, rounds, timeout):
        answer = super().model(model, targets, base_records, records, rounds, timeout)
        if answer["ok"] and len(answer["samples"]) == 2:
            base, own = answer["samples"]
            answer["samples"] = [base, [{k: t * self.factor for k, t in r.items()} for r in own]]
        return answer


@pytest.mark.parametrize("factor", [4.0, 0.25])
def test_in_context_the_default_never_loses(small: Path, factor: float):
    """Candidates all slower in the model: every record keeps the defaults; all faster:
    the records hold knobs, timed faster than the default."""
    module = load_model(small)
    kernels = model_kernels(module)
    measurer = _Skewed(factor)
    search = ContextSearch(str(small), None, module, kernels, measurer)
    try:
        search.search(12, None)
        records = search.records(measurer.identity())
    finally:
        search.close()
        measurer.close()
    assert search.generations >= 1 and {r.kernel for r in records} == {k.key for k in kernels}
    assert all(r.trials >= 1 for r in records)
    if factor > 1:
        assert all(r.knobs == {} and r.time == r.default for r in records)
    else:
        kept = [r for r in records if r.knobs]
        assert kept and all(r.time.median < r.default.median for r in kept)  # type: ignore[union-attr]


class _SlowsTheNext(LocalMeasurer):
    """The real measurer, every candidate build's first kernel timed at half its time,
    the second at 20 times its own and the model at 0.9 times: the first kernel's knobs
    win alone and the model is faster, but they cost the kernel after it more than they
    save."""

    def __init__(self, first: frozenset[str], second: frozenset[str]):
        super().__init__(threads=1)
        self.first, self.second = first, second

    def model(self, model, targets, base_records, records, rounds, timeout):
        answer = super().model(model, targets, base_records, records, rounds, timeout)
        if answer["ok"] and len(answer["samples"]) == 2:
            base, own = answer["samples"]
            scale = {"": 0.9, **{k: 0.5 for k in self.first}, **{k: 20.0 for k in self.second}}
            answer["samples"] = [
                base,
                [{k: t * scale.get(k, 1.0) for k, t in r.items()} for r in own],
            ]
        return answer


def test_knobs_that_slow_the_next_kernel_more_than_they_save_are_dropped(small: Path):
    module = load_model(small)
    kernels = model_kernels(module)
    probe = ContextSearch(str(small), None, module, kernels, LocalMeasurer(threads=1))
    first, second = (slot.symbols for slot in probe.slots)
    probe.close()
    probe.measurer.close()
    measurer = _SlowsTheNext(first, second)
    search = ContextSearch(str(small), None, module, kernels, measurer)
    try:
        search.search(12, None)
        records = search.records(measurer.identity())
    finally:
        search.close()
        measurer.close()
    assert search.final_ratio is not None  # the finalists were timed together
    assert all(r.knobs == {} for r in records)
    assert any("slow the kernel after it" in note for note in search.notes)


def test_tune_in_context_writes_records_that_apply(small: Path, tmp_path: Path):
    """`lamina.tune` searches in context by default; budget 0 then keeps the file."""
    from lamina.tuning.tune import tune

    records = tmp_path / "r.jsonl"
    result = tune(small, records, budget=6, threads=1, measure_model=False)
    found = load_records(records)
    assert result.records and found.applicable
    assert {r.kernel for r in found.applicable.values()} <= {
        k.key for k in model_kernels(load_model(small))
    }
    before = records.read_bytes()
    tune(small, records, budget=0)
    assert records.read_bytes() == before


def test_register_rows_beyond_one_that_spilled_are_not_tried(small: Path):
    """A row count far slower in context (no round won): the larger ones are skipped for
    that kernel, the smaller ones and other knobs still tried; singles lead with four
    row counts, two channel jams and two vector counts."""
    import random

    from lamina.tuning.context import LEADING, SPILLED, Slot, Trial

    kernel = model_kernels(load_model(small))[0]
    slot = Slot(kernel, frozenset({kernel.name}), queue=list(singles(1)))
    assert [next(iter(c)) for c in slot.queue[: sum(LEADING.values())]] == ["block_rows"] * 4 + [
        "conv_channel_jam"
    ] * 2 + ["block_vector_choices"] * 2
    rng = random.Random(0)
    assert slot.next(rng) == {"block_rows": 4}
    assert slot.next(rng) == {"block_rows": 7}
    slot.trials.append(Trial({"block_rows": 7}, ("x",), SPILLED - 0.1, 0, 21))
    tried = []
    while slot.queue:
        tried.append(slot.next(rng))
    rows = [c["block_rows"] for c in tried if c and "block_rows" in c]
    assert rows == [6, 2, 3, 5, 1]  # 8, 12, 14 and 16 skipped
    assert {"conv_channel_jam": 2} in tried and {"block_vector_choices": (1,)} in tried
    children = [slot.next(rng) for _ in range(20)]
    assert not [c for c in children if c and c.get("block_rows", 0) >= 7]
