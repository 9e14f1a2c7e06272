"""The measuring process: builds candidates and times them, apart from the tuner.

`python -m lamina.tuning.worker` reads requests from stdin and answers on
stdout (pickled, length-prefixed; anything the code prints goes to stderr).
A candidate that crashes takes only this process down, and one that hangs
is killed with it (tuning/measure.py restarts it): the tuner records the
candidate invalid and goes on.

Requests (dicts with an "op"):
* `build`: compile a kernel program (the disk cache and the kernel cache
  keep it: a later `check` or `measure` in a new process loads it);
  answers the symbols of its kernels, which name the code exactly
  (identical code: identical symbols, backends/kernel_split.py).
* `install`: a cache entry built elsewhere (a Ray task), stored here.
* `check`: run a candidate once on the reference inputs and compare with
  the default candidate's results (within `tolerance` of their magnitude).
* `model`: a whole model built with candidate records (a profiling build),
  checked against its baseline build and timed interleaved with it: each
  kernel's time in context, from the model's profile (tuning/context.py).
* `measure`: time candidates interleaved: each round times every
  candidate once (a batch of calls of at least `sample_seconds`), so a
  disturbance of the machine hits all of them alike. With `drop_slower`,
  a candidate slower than that many times the first (the default) in the
  first round is not timed again: one sample says enough about it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import struct
import sys
import time
from typing import IO, Any

import numpy as np

from lamina.runtime.env import env_int

_exes: dict[str, Any] = {}
_inputs: dict[str, list[np.ndarray]] = {}
_references: dict[str, tuple[np.ndarray, ...]] = {}


def send(stream: IO[bytes], message: object) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(struct.pack("<Q", len(data)) + data)
    stream.flush()


def receive(stream: IO[bytes]) -> Any:
    head = stream.read(8)
    if len(head) < 8:
        raise EOFError
    (size,) = struct.unpack("<Q", head)
    return pickle.loads(stream.read(size))


def _executable(text: str):
    exe = _exes.get(text)
    if exe is None:
        import lamina

        exe = _exes[text] = lamina.compile(text, filename="<kernel>")
        if len(_exes) > 64:  # keep memory bounded: forget the oldest
            _exes.pop(next(iter(_exes)))
    return exe


def _inputs_for(exe) -> list[np.ndarray]:
    """Reproducible inputs, the same for every program of the same signature: floats in
    [0.1, 1) (safe for log, sqrt, division), zero integers (valid indices), false booleans."""
    params = exe._signature("main").params
    key = repr([(p.shape, p.dtype.str) for p in params])
    found = _inputs.get(key)
    if found is None:
        rng = np.random.default_rng(0)
        found = []
        for spec in params:
            if spec.dtype.kind == "f":
                found.append(rng.uniform(0.1, 1.0, spec.shape).astype(spec.dtype))
            else:
                found.append(np.zeros(spec.shape, spec.dtype))
        _inputs[key] = found
    return found


def _results(exe, args) -> tuple[np.ndarray, ...]:
    out = exe.run("main", *args)
    return tuple(np.array(r) for r in (out if isinstance(out, tuple) else (out,)))


def _build(request: dict) -> dict:
    start = time.perf_counter()
    exe = _executable(request["text"])
    code = hashlib.sha256(exe.compiled.object_code or request["text"].encode()).hexdigest()
    return {"ok": True, "code": code, "seconds": time.perf_counter() - start}


def _install(request: dict) -> dict:
    from lamina.runtime import cache as disk

    entry = disk.decode(request["entry"])
    if entry is not None:
        disk.write(request["key"], entry)
    return {"ok": entry is not None}


def _check(request: dict) -> dict:
    reference_text, key = request["reference"], request["kernel"]
    ref_exe = _executable(reference_text)
    args = _inputs_for(ref_exe)
    if key not in _references:
        _references[key] = _results(ref_exe, args)
    got = _results(_executable(request["text"]), args)
    for want, have in zip(_references[key], got, strict=True):
        if want.shape != have.shape:
            return {"ok": False, "why": f"wrong shape {have.shape}"}
        if want.dtype.kind != "f":
            if not np.array_equal(want, have):
                return {"ok": False, "why": "wrong numbers"}
            continue
        scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
        error = float(np.max(np.abs(want - have))) if want.size else 0.0
        if not error <= request["tolerance"] * scale:  # NaN fails too
            return {"ok": False, "why": f"wrong numbers (max error {error:.3g})"}
    return {"ok": True}


CLOCKS = {"wall": time.perf_counter, "cpu": time.thread_time}
"""A measurement's clock (`call_clock` in tuning/measure.py): wall time, or this
thread's CPU time when the code runs on this thread alone."""


def _measure(request: dict) -> dict:
    exes = [_executable(t) for t in request["texts"]]
    inputs = [_inputs_for(exe) for exe in exes]
    clock = CLOCKS[request.get("clock", "wall")]
    counts = []
    for exe, args in zip(exes, inputs, strict=True):  # warm up, then calls per sample
        exe.run("main", *args)
        start = clock()
        exe.run("main", *args)
        once = max(clock() - start, 1e-7)
        counts.append(max(1, min(10000, int(request["sample_seconds"] / once))))
    samples: list[list[float]] = [[] for _ in exes]
    timed = list(range(len(exes)))
    slower = request.get("drop_slower")
    for round_ in range(request["rounds"]):
        if round_ == 1 and slower:  # far slower than the first (the default): seen enough
            timed = [i for i in timed if i == 0 or samples[i][0] <= slower * samples[0][0]]
        order = timed[round_ % len(timed) :] + timed[: round_ % len(timed)]  # rotate
        for i in order:
            exe, n, args = exes[i], counts[i], inputs[i]
            start = clock()
            for _ in range(n):
                exe.run("main", *args)
            samples[i].append((clock() - start) / n)
    return {"ok": True, "samples": samples}


_models: dict[tuple, Any] = {}
"""The baseline build of each model (by model, targets, records' content), for `model`."""

PREEMPTED = 1.10
"""A timed run whose wall time exceeds its thread CPU time by this factor was preempted
(another process held the core): its per-kernel wall times are not used."""


def _model_build(model: str, targets, records: str | None):
    """A profiling build of `model` with `records`, and the code of each kernel symbol
    (its kernel unit's key, backends/kernel_split.py; "" when compiled whole)."""
    import lamina
    from lamina.backends import kernel_cache

    codes: dict[str, str] = {}

    def capture(split) -> None:  # which unit (code) each kernel name got
        for unit in split.kernels:
            for name in unit.names:
                codes[name] = unit.key

    _thread_clock()
    stop = kernel_cache.observe_splits(capture)
    try:
        exe = lamina.compile(model, targets=targets, records=records, profile=True, cache=False)
    finally:
        stop()
    key = getattr(exe.compiled, "key", None)
    if codes:
        _codes[key] = codes
    return exe, dict(codes or _codes.get(key, {}))  # none built: the same code as before


_codes: dict[Any, dict[str, str]] = {}
"""The kernels' codes of each module built (by its key): a module built again is taken
from the code generator's cache, unsplit."""

_clock: list[Any] = []


def _thread_clock() -> None:
    """Code linked from now on reads the thread's CPU clock when it asks for any clock:
    the profiling build's per-kernel counters then leave out the time the thread was
    preempted (at one thread, where the kernels run on this thread; LAMINA_NUM_THREADS=1).
    A JIT-compiled function calling libc's `clock_gettime(CLOCK_THREAD_CPUTIME_ID, ts)`,
    registered under that name (as benchmarks/bench_thread_bound.py does with a shim)."""
    if _clock or env_int("LAMINA_NUM_THREADS", None, minimum=1) != 1:
        return
    import ctypes

    from lamina.runtime import native_setup

    native_setup.ensure_native()
    llvm = native_setup._llvm()
    libc = ctypes.CDLL(None)
    real = ctypes.cast(libc.clock_gettime, ctypes.c_void_p).value
    module = llvm.parse_assembly(
        "define i32 @lamina_thread_clock(i32 %id, ptr %ts) {\n"
        f"  %f = inttoptr i64 {real} to ptr\n"
        "  %r = call i32 %f(i32 3, ptr %ts)\n"
        "  ret i32 %r\n}\n"
    )
    target = llvm.Target.from_default_triple().create_target_machine()
    engine = llvm.create_mcjit_compiler(module, target)
    engine.finalize_object()
    llvm.add_symbol("clock_gettime", engine.get_function_address("lamina_thread_clock"))
    _clock.append(engine)


def _model_samples(exes: list, args, rounds: int, clock: str) -> list[list[dict[str, float]]]:
    """Per program, per round: seconds per run of each kernel symbol (the model's profile
    counters), "" the whole run by `clock`. Rounds interleaved (order alternating); at one
    thread (`cpu` clock) a run another process preempted is timed again (`PREEMPTED`)."""
    from lamina.runtime.profile import (
        profile_addresses,
        read_counters,
        reset_counters,
        slot_kernels,
    )

    now = CLOCKS[clock]
    slots = []
    for exe in exes:
        addresses = profile_addresses(exe.compiled.engine)
        assert addresses is not None, "a profiling build has its counters"
        slots.append((addresses, slot_kernels(addresses)))
        exe.run("main", *args)  # warm up
    samples: list[list[dict[str, float]]] = [[] for _ in exes]
    for round_ in range(rounds):
        order = list(range(len(exes)))
        if round_ % 2:
            order.reverse()
        for i in order:
            (addresses, kernels), exe = slots[i], exes[i]
            for _attempt in range(5):
                reset_counters(addresses, len(kernels))
                wall, start = time.perf_counter(), now()
                exe.run("main", *args)
                spent, wall = now() - start, time.perf_counter() - wall
                if clock != "cpu" or wall <= PREEMPTED * spent:
                    break
            row: dict[str, float] = {"": spent}
            for (symbol, *_), (nanos, _) in zip(
                kernels, read_counters(addresses, len(kernels)), strict=True
            ):
                row[symbol] = row.get(symbol, 0.0) + nanos * 1e-9
            samples[i].append(row)
    return samples


def _model(request: dict) -> dict:
    """A model built with candidate records timed in context against its baseline build:
    each kernel's time as it runs in the network (tuning/context.py)."""
    model, targets = request["model"], request["targets"]
    base_key = (model, tuple(targets or ()), request["base_digest"])
    if base_key not in _models:
        exe, codes = _model_build(model, targets, request["base_records"])
        args = _inputs_for(exe)
        _models.clear()
        _models[base_key] = (exe, codes, args, _results(exe, args))
    base, base_codes, args, want = _models[base_key]
    if request["records"] is None:
        samples = _model_samples([base], args, request["rounds"], request["clock"])
        return {"ok": True, "samples": samples, "codes": base_codes, "base_codes": base_codes}
    start, cpu = time.perf_counter(), time.process_time()
    exe, codes = _model_build(model, targets, request["records"])
    built = (time.perf_counter() - start, time.process_time() - cpu)
    for w, h in zip(want, _results(exe, args), strict=True):
        scale = max(1.0, float(np.max(np.abs(w)))) if w.size else 1.0
        error = float(np.max(np.abs(w - h))) if w.size else 0.0
        if w.shape != h.shape or not error <= request["tolerance"] * scale:
            why = f"wrong numbers (max error {error:.3g})"
            return {"ok": False, "why": why, "codes": codes, "base_codes": base_codes}
    samples = _model_samples([base, exe], args, request["rounds"], request["clock"])
    answer = {"ok": True, "samples": samples, "codes": codes, "base_codes": base_codes}
    return answer | {"build_seconds": built[0], "build_cpu_seconds": built[1]}


_HANDLERS = {
    "build": _build,
    "install": _install,
    "check": _check,
    "measure": _measure,
    "model": _model,
}


def main() -> None:
    """Serve requests until stdin closes; a failing request is answered with its error."""
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # whatever the code prints must not corrupt the answers
    sys.stdout = sys.stderr
    requests = sys.stdin.buffer
    while True:
        try:
            request = receive(requests)
        except EOFError:
            return
        try:
            answer = _HANDLERS[request["op"]](request)
        except Exception as err:  # a candidate that fails to build or run: its answer
            answer = {"ok": False, "why": f"{type(err).__name__}: {err}".splitlines()[0][:300]}
        send(protocol, answer)


if __name__ == "__main__":
    main()
