"""lower-to-llvm + codegen + runtime: hand-written loop kernels, JIT-compiled, against NumPy.

Each kernel is loop-dialect text in phase `lowering`; `lower_and_jit` runs
`lower-to-llvm` through the pass manager (which checks the phase transition
and the build-phase invariants), then JIT-compiles the module and returns a
`Kernel` whose functions are called on NumPy arrays in place.
"""

from __future__ import annotations

import ctypes
import math
import os
import platform
import subprocess
import sys
from string import Template

import numpy as np
import pytest

from lamina.backends import codegen
from lamina.backends.jit import Kernel, RuntimeCallError
from lamina.core.context import make_context
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.core.pass_manager import PassManager
from lamina.dialects.lamina import Phase, get_phase
from lamina.passes.lower_to_llvm import LowerToLLVMPass

HEADER = "builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {\n"


def lower(body: str, **subst: object):
    """Parse a module made of `body` (with $-substitutions) and lower it to phase build."""
    ctx = make_context()
    text = HEADER + Template(body).substitute(**subst) + "\n}\n"
    module = parse_module(ctx, text, "kernel.mlir")
    PassManager([LowerToLLVMPass()]).run(ctx, module)
    return module


def lower_and_jit(body: str, **subst: object) -> Kernel:
    return Kernel(lower(body, **subst))


RNG = np.random.default_rng(0)

# ---------------------------------------------------------------------------
# Kernels
# ---------------------------------------------------------------------------

# c[k] = a[k / 8, k % 8] + b[k % 8] over the flattened 4x8 output: broadcasting
# by index arithmetic (floordivsi/remsi on index values).
BROADCAST_ADD = """
  loop.func @bcast_add(%a: memref<4x8x$T>, %b: memref<8x$T>, %c: memref<4x8x$T>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    loop.for %k = %c0 to %c32 step %c1 kind(parallel) {
      %i = arith.floordivsi %k, %c8 : index
      %j = arith.remsi %k, %c8 : index
      %x = loop.load %a[%i, %j] : memref<4x8x$T>
      %y = loop.load %b[%j] : memref<8x$T>
      %s = arith.addf %x, %y : $T
      loop.store %s, %c[%i, %j] : memref<4x8x$T>
    }
    loop.return
  }
"""

MATMUL = """
  loop.func @matmul(%a: memref<${M}x${K}x$T>, %b: memref<${K}x${N}x$T>, %c: memref<${M}x${N}x$T>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %m = arith.constant $M : index
    %n = arith.constant $N : index
    %kk = arith.constant $K : index
    %zero = arith.constant 0.0 : $T
    loop.for %i = %c0 to %m step %c1 {
      loop.for %j = %c0 to %n step %c1 kind(vectorized) {
        %sum = loop.for %k = %c0 to %kk step %c1 iter_args(%acc = %zero) -> ($T) {
          %x = loop.load %a[%i, %k] : memref<${M}x${K}x$T>
          %y = loop.load %b[%k, %j] : memref<${K}x${N}x$T>
          %p = arith.mulf %x, %y : $T
          %s = arith.addf %acc, %p : $T
          loop.yield %s : $T
        }
        loop.store %sum, %c[%i, %j] : memref<${M}x${N}x$T>
      }
    }
    loop.return
  }
"""

UNARY = """
  loop.func @unary(%a: memref<64x$T>, %e: memref<64x$T>, %t: memref<64x$T>, %r: memref<64x$T>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    loop.for %i = %c0 to %c64 step %c1 {
      %x = loop.load %a[%i] : memref<64x$T>
      %ex = math.exp %x : $T
      %th = math.tanh %x : $T
      %er = math.erf %x : $T
      loop.store %ex, %e[%i] : memref<64x$T>
      loop.store %th, %t[%i] : memref<64x$T>
      loop.store %er, %r[%i] : memref<64x$T>
    }
    loop.return
  }
"""

INT32 = """
  loop.func @ints(%a: memref<32xi32>, %b: memref<32xi32>, %q: memref<32xi32>, %r: memref<32xi32>, %f: memref<32xi32>, %m: memref<32xi32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %seven = arith.constant 7 : i32
    loop.for %i = %c0 to %c32 step %c1 {
      %x = loop.load %a[%i] : memref<32xi32>
      %y = loop.load %b[%i] : memref<32xi32>
      %p = arith.muli %x, %y : i32
      %s = arith.addi %p, %seven : i32
      %dq = arith.divsi %s, %y : i32
      %dr = arith.remsi %s, %y : i32
      %fd = arith.floordivsi %s, %y : i32
      %mx = arith.maxsi %x, %y : i32
      loop.store %dq, %q[%i] : memref<32xi32>
      loop.store %dr, %r[%i] : memref<32xi32>
      loop.store %fd, %f[%i] : memref<32xi32>
      loop.store %mx, %m[%i] : memref<32xi32>
    }
    loop.return
  }
"""

FPTOSI = """
  loop.func @to_int(%a: memref<16x$F>, %o: memref<16x$I>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    loop.for %i = %c0 to %c16 step %c1 {
      %x = loop.load %a[%i] : memref<16x$F>
      %k = arith.fptosi %x : $F to $I
      loop.store %k, %o[%i] : memref<16x$I>
    }
    loop.return
  }
"""

# out = 2 * exp(a) through a temporary buffer of the given scope.
TEMP_BUFFER = """
  loop.func @twice_exp(%a: memref<3x5xf32>, %o: memref<3x5xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c5 = arith.constant 5 : index
    %two = arith.constant 2.0 : f32
    %t = loop.alloc {scope = "$SCOPE"} : memref<3x5xf32>
    loop.for %i = %c0 to %c3 step %c1 {
      loop.for %j = %c0 to %c5 step %c1 {
        %x = loop.load %a[%i, %j] : memref<3x5xf32>
        %e = math.exp %x : f32
        loop.store %e, %t[%i, %j] : memref<3x5xf32>
      }
    }
    loop.for %i = %c0 to %c3 step %c1 {
      loop.for %j = %c0 to %c5 step %c1 {
        %x = loop.load %t[%i, %j] : memref<3x5xf32>
        %y = arith.mulf %x, %two : f32
        loop.store %y, %o[%i, %j] : memref<3x5xf32>
      }
    }
    loop.free %t : memref<3x5xf32>
    loop.return
  }
"""

# A loop.if with results (|x|, by branches) and one without else (clamp
# negative outputs to zero in place), plus a scalar-returning loop.
CONTROL = """
  loop.func @abs_then_clip(%a: memref<20xf64>, %o: memref<20xf64>, %lim: f64) -> i64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c20 = arith.constant 20 : index
    %zero = arith.constant 0.0 : f64
    %n0 = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %count = loop.for %i = %c0 to %c20 step %c1 iter_args(%n = %n0) -> (i64) {
      %x = loop.load %a[%i] : memref<20xf64>
      %neg = arith.cmpf olt, %x, %zero : f64
      %v = loop.if %neg -> (f64) {
        %y = arith.negf %x : f64
        loop.yield %y : f64
      } else {
        loop.yield %x : f64
      }
      loop.store %v, %o[%i] : memref<20xf64>
      %big = arith.cmpf ogt, %v, %lim : f64
      loop.if %big {
        loop.store %lim, %o[%i] : memref<20xf64>
      }
      %inc = arith.extui %big : i1 to i64
      %n2 = arith.addi %n, %inc : i64
      loop.yield %n2 : i64
    }
    loop.return %count : i64
  }
"""

COPY_AND_CALL = """
  loop.func @fill(%o: memref<6xf32>, %v: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    loop.for %i = %c0 to %c6 step %c1 {
      loop.store %v, %o[%i] : memref<6xf32>
    }
    loop.return
  }
  loop.func @fill_then_copy(%a: memref<6xf32>, %o: memref<6xf32>, %v: f32) {
    loop.call @fill(%a, %v) : (memref<6xf32>, f32) -> ()
    loop.copy %a, %o : memref<6xf32> to memref<6xf32>
    loop.return
  }
"""


# ---------------------------------------------------------------------------
# Numerics
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_broadcast_add_by_index_arithmetic(dtype):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    kernel = lower_and_jit(BROADCAST_ADD, T=dtype)
    a = RNG.standard_normal((4, 8)).astype(np_dtype)
    b = RNG.standard_normal(8).astype(np_dtype)
    c = np.zeros((4, 8), np_dtype)
    kernel.call("bcast_add", a, b, c)
    np.testing.assert_array_equal(c, a + b)


@pytest.mark.parametrize(("dtype", "rtol"), [("f32", 1e-5), ("f64", 1e-12)])
def test_matmul_with_iter_args_reduction(dtype, rtol):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    m, k, n = 7, 33, 12
    kernel = lower_and_jit(MATMUL, T=dtype, M=m, K=k, N=n)
    a = RNG.standard_normal((m, k)).astype(np_dtype)
    b = RNG.standard_normal((k, n)).astype(np_dtype)
    c = np.full((m, n), np.nan, np_dtype)
    kernel.call("matmul", a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=rtol, atol=rtol)


@pytest.mark.parametrize(("dtype", "tol"), [("f32", 1e-6), ("f64", 1e-14)])
def test_exp_tanh_erf(dtype, tol):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    kernel = lower_and_jit(UNARY, T=dtype)
    a = np.linspace(-4, 4, 64).astype(np_dtype)
    e, t, r = (np.zeros(64, np_dtype) for _ in range(3))
    kernel.call("unary", a, e, t, r)
    erf = np.array([math.erf(float(x)) for x in a])
    np.testing.assert_allclose(e, np.exp(a), rtol=tol * 4)
    np.testing.assert_allclose(t, np.tanh(a), rtol=tol * 4, atol=tol)
    np.testing.assert_allclose(r, erf, rtol=tol * 4, atol=tol)


def test_int32_arithmetic_follows_c_division():
    kernel = lower_and_jit(INT32)
    a = RNG.integers(-50, 50, 32, dtype=np.int32)
    b = RNG.integers(1, 9, 32, dtype=np.int32) * RNG.choice([-1, 1], 32).astype(np.int32)
    q, r, f, m = (np.zeros(32, np.int32) for _ in range(4))
    kernel.call("ints", a, b, q, r, f, m)
    s = a * b + 7
    np.testing.assert_array_equal(q, np.trunc(s / b).astype(np.int32))  # toward zero
    np.testing.assert_array_equal(r, np.fmod(s, b))  # sign of the dividend
    np.testing.assert_array_equal(f, s // b)  # toward -inf
    np.testing.assert_array_equal(m, np.maximum(a, b))


@pytest.mark.parametrize(("fty", "ity"), [("f32", "i32"), ("f64", "i64"), ("f32", "i8")])
def test_fptosi_truncates_toward_zero_like_astype(fty, ity):
    np_f = np.float32 if fty == "f32" else np.float64
    np_i = {"i32": np.int32, "i64": np.int64, "i8": np.int8}[ity]
    kernel = lower_and_jit(FPTOSI, F=fty, I=ity)
    a = np.array(
        [-3.7, -2.5, -1.0, -0.9, -0.0, 0.0, 0.4, 0.5, 0.99, 1.0, 2.5, 3.7, 100.9, -100.9, 7, -7],
        np_f,
    )
    o = np.zeros(16, np_i)
    kernel.call("to_int", a, o)
    np.testing.assert_array_equal(o, a.astype(np_i))


@pytest.mark.parametrize("scope", ["global", "local"])
def test_temporary_buffer_alloc_free(scope):
    module = lower(TEMP_BUFFER, SCOPE=scope)
    text = str(module)
    if scope == "global":  # on the device's allocator (backends/llvm/device_runtime.py)
        assert "llvm.call @__lamina_device_alloc" in text
        assert "llvm.call @__lamina_device_free" in text
    else:
        assert "llvm.alloca" in text and "@free" not in text
    kernel = Kernel(module)
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    o = np.zeros((3, 5), np.float32)
    for _ in range(3):  # repeated calls: no leak or double free crashes
        kernel.call("twice_exp", a, o)
    np.testing.assert_allclose(o, 2 * np.exp(a), rtol=1e-6)


# A row accumulated over k in one temporary while reading another: both on
# the device allocator, the situation of Winograd's product stage when it
# runs serially (its V, U and M are temporaries).
TEMPORARY_ACCUMULATOR = """
  loop.func @column_sums(%x: memref<64x16xf32>, %y: memref<16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %a = loop.alloc {scope = "global"} : memref<64x16xf32>
    %s = loop.alloc {scope = "global"} : memref<16xf32>
    loop.for %i = %c0 to %c64 step %c1 {
      loop.for %j = %c0 to %c16 step %c1 kind(vectorized) {
        %v = loop.load %x[%i, %j] : memref<64x16xf32>
        loop.store %v, %a[%i, %j] : memref<64x16xf32>
      }
    }
    loop.for %j = %c0 to %c16 step %c1 kind(vectorized) {
      loop.store %zero, %s[%j] : memref<16xf32>
    }
    loop.for %k = %c0 to %c64 step %c1 {
      loop.for %j = %c0 to %c16 step %c1 kind(vectorized) {
        %v = loop.load %a[%k, %j] : memref<64x16xf32>
        %acc = loop.load %s[%j] : memref<16xf32>
        %n = arith.addf %acc, %v : f32
        loop.store %n, %s[%j] : memref<16xf32>
      }
    }
    loop.for %j = %c0 to %c16 step %c1 kind(vectorized) {
      %v = loop.load %s[%j] : memref<16xf32>
      loop.store %v, %y[%j] : memref<16xf32>
    }
    loop.free %a : memref<64x16xf32>
    loop.free %s : memref<16xf32>
    loop.return
  }
"""


def test_an_accumulator_in_a_temporary_stays_in_registers():
    """The device allocator returns `noalias` memory (and is not inlined, which
    would drop that), so LLVM knows that temporaries do not alias and keeps
    an accumulated row in registers across k. Without it, a Winograd 3x3
    64->64 at 16x16 whose product stage ran serially (a larger
    `PARALLEL_MIN_WORK`) loaded and stored its accumulators on every step:
    0.31 ms against 0.15 ms."""
    kernel = Kernel(lower(TEMPORARY_ACCUMULATOR))
    ir = kernel.compiled.optimized_ir
    assert "noalias ptr @__lamina_device_alloc" in ir
    blocks = ir.split("\n\n")
    summing = [b for b in blocks if "fadd" in b and "phi <" in b]
    assert summing, "the k loop accumulates in a vector phi (a register)"
    assert not any("store <" in b for b in summing)
    x = RNG.standard_normal((64, 16)).astype(np.float32)
    y = np.zeros(16, np.float32)
    kernel.call("column_sums", x, y)
    np.testing.assert_allclose(y, x.sum(axis=0), rtol=1e-5)


def test_loop_if_with_and_without_results():
    kernel = lower_and_jit(CONTROL)
    a = RNG.standard_normal(20) * 3
    o = np.zeros(20)
    count = kernel.call("abs_then_clip", a, o, 2.0)
    np.testing.assert_array_equal(o, np.minimum(np.abs(a), 2.0))
    assert count == int(np.sum(np.abs(a) > 2.0))


def test_call_and_copy():
    kernel = lower_and_jit(COPY_AND_CALL)
    a, o = np.zeros(6, np.float32), np.zeros(6, np.float32)
    kernel.call("fill_then_copy", a, o, 1.5)
    np.testing.assert_array_equal(o, np.full(6, 1.5, np.float32))


def test_lowered_module_is_in_phase_build_with_only_llvm_ops():
    module = lower(MATMUL, T="f32", M=2, K=3, N=4)
    assert get_phase(module) == Phase.BUILD
    names = {op.name for op in module.walk() if op is not module}
    assert names and all(name.startswith("llvm.") for name in names), names


# ---------------------------------------------------------------------------
# Ahead-of-time output
# ---------------------------------------------------------------------------


def test_emit_llvm_ir_and_object():
    module = lower(BROADCAST_ADD, T="f32")
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert 'define void @"bcast_add"(ptr noalias' in raw
    optimized = codegen.emit_llvm_ir(module)
    assert "define void @" in optimized and "nounwind" in optimized
    obj = codegen.emit_object(module)
    assert obj[:4] == b"\x7fELF"
    assert b"bcast_add" in obj


def test_shared_library_loads_through_ctypes(tmp_path):
    module = lower(MATMUL, T="f32", M=5, K=6, N=7)
    path = codegen.build_shared_library(module, tmp_path / "libmatmul.so")
    lib = ctypes.CDLL(str(path))
    lib.matmul.restype = None
    lib.matmul.argtypes = [ctypes.c_void_p] * 3
    a = RNG.standard_normal((5, 6)).astype(np.float32)
    b = RNG.standard_normal((6, 7)).astype(np.float32)
    c = np.zeros((5, 7), np.float32)
    lib.matmul(a.ctypes.data, b.ctypes.data, c.ctypes.data)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


def test_shared_library_resolves_libm(tmp_path):
    module = lower(UNARY, T="f64")
    lib = ctypes.CDLL(str(codegen.build_shared_library(module, tmp_path / "libunary.so")))
    a = np.linspace(-1, 1, 64)
    e, t, r = (np.zeros(64) for _ in range(3))
    lib.unary(*(ctypes.c_void_p(x.ctypes.data) for x in (a, e, t, r)))
    np.testing.assert_allclose(t, np.tanh(a), rtol=1e-14)


# ---------------------------------------------------------------------------
# Compile cache, timings, runtime checks
# ---------------------------------------------------------------------------


def test_second_compile_of_same_module_is_a_cache_hit():
    first = lower(MATMUL, T="f64", M=3, K=4, N=5)
    second = lower(MATMUL, T="f64", M=3, K=4, N=5)  # same program, separately built
    before = codegen.cache_stats()
    compiled = codegen.compile_module(first)
    again = codegen.compile_module(second)
    after = codegen.cache_stats()
    assert again is compiled
    assert after["hits"] >= before["hits"] + 1
    other = codegen.compile_module(lower(MATMUL, T="f64", M=3, K=4, N=6))
    assert other is not compiled


def test_compile_timings_are_recorded():
    compiled = codegen.compile_module(lower(UNARY, T="f32"), use_cache=False)
    timings = compiled.timings.as_dict()
    assert set(timings) == {"translate", "parse_verify", "optimize", "jit", "total"}
    assert all(v > 0 for v in timings.values())
    assert "vector" in compiled.optimized_ir or "call" in compiled.optimized_ir


def test_runtime_rejects_wrong_dtype_size_and_layout():
    kernel = lower_and_jit(BROADCAST_ADD, T="f32")
    a, b, c = np.zeros((4, 8), np.float32), np.zeros(8, np.float32), np.zeros((4, 8), np.float32)
    with pytest.raises(RuntimeCallError, match="expected dtype float32, got float64"):
        kernel.call("bcast_add", a.astype(np.float64), b, c)
    with pytest.raises(RuntimeCallError, match="expected shape"):
        kernel.call("bcast_add", a, np.zeros(4, np.float32), c)
    with pytest.raises(RuntimeCallError, match="C-contiguous"):
        kernel.call("bcast_add", np.zeros((8, 4), np.float32).T, b, c)
    with pytest.raises(RuntimeCallError, match="expected 3 argument"):
        kernel.call("bcast_add", a, b)
    with pytest.raises(KeyError, match="no function 'nope'"):
        kernel.get_function_address("nope")


def test_codegen_rejects_non_llvm_module_with_a_located_diagnostic():
    ctx = make_context()
    text = HEADER + "  loop.func @f() {\n    loop.return\n  }\n}\n"
    module = parse_module(ctx, text, "k.mlir")
    with pytest.raises(DiagnosticError) as info:
        codegen.compile_module(module)
    assert "run lower-to-llvm first" in info.value.format()
    assert "k.mlir:2:3" in info.value.format()


# ---------------------------------------------------------------------------
# Parallel loops (libgomp)
# ---------------------------------------------------------------------------

# Each iteration records the OpenMP thread that ran it; lb, ub and step are
# arguments so uneven chunks and strides are exercised.
PARALLEL_IDS = """
  loop.func private @omp_get_thread_num() -> i32
  loop.func @who(%ids: memref<64xi32>, %lb: index, %ub: index, %step: index) {
    loop.for %i = %lb to %ub step %step kind(parallel) {
      %t = loop.call @omp_get_thread_num() : () -> i32
      loop.store %t, %ids[%i] : memref<64xi32>
    }
    loop.return
  }
"""


@pytest.mark.parametrize(("lb", "ub", "step"), [(0, 64, 1), (3, 61, 1), (1, 64, 5), (10, 10, 1)])
def test_parallel_loop_covers_every_iteration_once(lb, ub, step):
    kernel = lower_and_jit(PARALLEL_IDS)
    codegen.set_num_threads(2)
    ids = np.full(64, -1, np.int32)
    kernel.call("who", ids, lb, ub, step)
    touched = np.zeros(64, bool)
    touched[lb:ub:step] = True
    assert np.all(ids[~touched] == -1)
    assert np.all((ids[touched] == 0) | (ids[touched] == 1))


TEAM_SIZES = PARALLEL_IDS.replace("omp_get_thread_num", "omp_get_num_threads")


def test_parallel_loop_runs_on_a_team_in_chunks():
    codegen.set_num_threads(2)
    assert codegen.get_max_threads() == 2
    sizes = np.full(64, -1, np.int32)
    lower_and_jit(TEAM_SIZES).call("who", sizes, 0, 64, 1)
    assert np.all(sizes == 2)  # every iteration ran inside a team of two
    # Dynamic schedule: chunks of 64 / (2 threads * CHUNKS_PER_THREAD) = 8
    # iterations, each run by one thread, whichever asked first.
    ids = np.full(64, -1, np.int32)
    lower_and_jit(PARALLEL_IDS).call("who", ids, 0, 64, 1)
    chunks = ids.reshape(8, 8)
    assert np.all(chunks == chunks[:, :1]) and np.all((ids == 0) | (ids == 1))


def test_parallel_loop_with_captured_scalars_and_nested_parallel_loop():
    kernel = lower_and_jit(
        """
  loop.func @scale(%a: memref<37x16xf64>, %o: memref<37x16xf64>, %s: f64, %k: i32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c37 = arith.constant 37 : index
    %kf = arith.sitofp %k : i32 to f64
    loop.for %i = %c0 to %c37 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c16 step %c1 kind(parallel) {
        %x = loop.load %a[%i, %j] : memref<37x16xf64>
        %y = arith.mulf %x, %s : f64
        %z = arith.addf %y, %kf : f64
        loop.store %z, %o[%i, %j] : memref<37x16xf64>
      }
    }
    loop.return
  }
"""
    )
    a = RNG.standard_normal((37, 16))
    o = np.zeros_like(a)
    kernel.call("scale", a, o, 1.5, -3)
    np.testing.assert_allclose(o, a * 1.5 - 3)


def test_parallel_reduction_falls_back_to_a_serial_loop():
    module = lower(
        """
  loop.func @total(%a: memref<100xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c100 = arith.constant 100 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %c100 step %c1 kind(parallel) iter_args(%acc = %zero) -> (f32) {
      %x = loop.load %a[%i] : memref<100xf32>
      %s = arith.addf %acc, %x : f32
      loop.yield %s : f32
    }
    loop.return %r : f32
  }
"""
    )
    assert "GOMP_parallel" not in str(module)
    a = np.arange(100, dtype=np.float32)
    assert Kernel(module).call("total", a) == pytest.approx(float(a.sum()))


def test_shared_library_with_parallel_loop_links_openmp(tmp_path):
    module = lower(PARALLEL_IDS)
    lib = ctypes.CDLL(str(codegen.build_shared_library(module, tmp_path / "libwho.so")))
    lib.who.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    ids = np.full(64, -1, np.int32)
    lib.who(ids.ctypes.data, 0, 64, 1)
    assert np.all(ids >= 0)


def test_f16_i1_buffers_select_and_bit_counting():
    kernel = lower_and_jit(
        """
  loop.func @mixed(%a: memref<8xf16>, %m: memref<8xi1>, %o: memref<8xf16>, %c: memref<8xi32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %z = arith.constant 0.0 : f16
    loop.for %i = %c0 to %c8 step %c1 {
      %x = loop.load %a[%i] : memref<8xf16>
      %b = loop.load %m[%i] : memref<8xi1>
      %e = math.tanh %x : f16
      %f = arith.addf %e, %x : f16
      %v = arith.select %b, %f, %z : f16
      loop.store %v, %o[%i] : memref<8xf16>
      %k = arith.index_cast %i : index to i32
      %lz = math.ctlz %k : i32
      loop.store %lz, %c[%i] : memref<8xi32>
    }
    loop.return
  }
"""
    )
    a = np.linspace(-2, 2, 8).astype(np.float16)
    mask = np.array([1, 0, 1, 1, 0, 0, 1, 1], bool)
    o, c = np.zeros(8, np.float16), np.zeros(8, np.int32)
    kernel.call("mixed", a, mask, o, c)
    expected = np.where(mask, np.tanh(a.astype(np.float32)) + a, 0).astype(np.float16)
    np.testing.assert_allclose(o.astype(np.float32), expected.astype(np.float32), rtol=2e-3)
    np.testing.assert_array_equal(c, [32, 31, 30, 30, 29, 29, 29, 29])


def test_registered_external_library_is_callable_from_jit_and_so(tmp_path):
    source = tmp_path / "ext.c"
    source.write_text(
        "void lamina_test_axpy(float a, const float *x, float *y, long n) {\n"
        "  for (long i = 0; i < n; ++i) y[i] += a * x[i];\n}\n"
    )
    library = tmp_path / "libext.so"
    subprocess.run(
        [codegen.system_compiler(), "-shared", "-fPIC", "-o", str(library), str(source)], check=True
    )
    codegen.register_library(library)
    module = lower(
        """
  loop.func @axpy_twice(%x: memref<5xf32>, %y: memref<5xf32>) {
    %a = arith.constant 2.0 : f32
    %n = arith.constant 5 : i64
    loop.call @lamina_test_axpy(%a, %x, %y, %n) : (f32, memref<5xf32>, memref<5xf32>, i64) -> ()
    loop.call @lamina_test_axpy(%a, %x, %y, %n) : (f32, memref<5xf32>, memref<5xf32>, i64) -> ()
    loop.return
  }
"""
    )
    x, y = np.arange(5, dtype=np.float32), np.ones(5, np.float32)
    Kernel(module).call("axpy_twice", x, y)
    np.testing.assert_array_equal(y, 1 + 4 * x)
    lib = ctypes.CDLL(str(codegen.build_shared_library(module, tmp_path / "libuser.so")))
    y2 = np.ones(5, np.float32)
    lib.axpy_twice(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y2.ctypes.data))
    np.testing.assert_array_equal(y2, 1 + 4 * x)


def test_register_library_reports_a_missing_file(tmp_path):
    with pytest.raises(DiagnosticError, match="cannot load library"):
        codegen.register_library(tmp_path / "missing.so")


# ---------------------------------------------------------------------------
# Loop hints and threads
# ---------------------------------------------------------------------------

HINTED_DOT = """
  loop.func @dot(%a: memref<4096xf32>, %b: memref<4096xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 4096 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %n step %c1 kind($KIND) iter_args(%acc = %zero) -> (f32) {
      %x = loop.load %a[%i] : memref<4096xf32>
      %y = loop.load %b[%i] : memref<4096xf32>
      %p = arith.mulf %x, %y : f32
      %s = arith.addf %acc, %p : f32
      loop.yield %s : f32
    }
    loop.return %r : f32
  }
"""


def test_vectorized_reduction_gets_loop_metadata_and_vectorizes():
    module = lower(HINTED_DOT, KIND="vectorized")
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert "!llvm.loop !" in raw and '!"llvm.loop.vectorize.enable", i1 1' in raw
    kernel = Kernel(module)
    assert " x float>" in kernel.compiled.optimized_ir  # the reduction runs in vector lanes
    a = RNG.random(4096, dtype=np.float32)
    b = RNG.random(4096, dtype=np.float32)
    result = kernel.call("dot", a, b)
    assert result == pytest.approx(float(a.astype(np.float64) @ b), rel=1e-5)


# v[t, c, j] = x[c, 2t, j] - x[c, 2t+2, j] + s * (x[c, 2t+1, j] - x[c, 2t+3, j]):
# four rows of a channel block, 16 lanes along j (Winograd's input transform).
SHORT_VECTOR_ROWS = """
  loop.func @rows(%x: memref<4x10x16xf32>, %v: memref<4x4x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c16 = arith.constant 16 : index
    %s = arith.constant -0.5 : f32
    loop.for %t = %c0 to %c4 step %c1 {
      loop.for %c = %c0 to %c4 step %c1 {
        loop.for %j = %c0 to %c16 step %c1 kind(vectorized) {
          %r0 = arith.muli %t, %c2 : index
          %r1 = arith.addi %r0, %c1 : index
          %r2 = arith.addi %r0, %c2 : index
          %r3 = arith.addi %r0, %c3 : index
          %a = loop.load %x[%c, %r0, %j] : memref<4x10x16xf32>
          %b = loop.load %x[%c, %r1, %j] : memref<4x10x16xf32>
          %d = loop.load %x[%c, %r2, %j] : memref<4x10x16xf32>
          %e = loop.load %x[%c, %r3, %j] : memref<4x10x16xf32>
          %ad = arith.subf %a, %d : f32
          %be = arith.subf %b, %e : f32
          %m = arith.mulf %s, %be : f32
          %u = arith.addf %ad, %m : f32
          loop.store %u, %v[%t, %c, %j] : memref<4x4x16xf32>
        }
      }
    }
    loop.return
  }
"""


def test_a_short_vectorized_loop_is_vectorized_not_unrolled_first():
    """A `vectorized` loop of 16 lanes stays a loop until LLVM vectorizes it:
    fully unrolled first, the vectorizer took the outer loop, with gathers."""
    module = lower(SHORT_VECTOR_ROWS)
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert '!"llvm.loop.unroll.disable"' in raw
    assert '!"llvm.loop.vectorize.followup_vectorized"' in raw
    kernel = Kernel(module)
    assert "gather" not in kernel.compiled.optimized_ir
    x = RNG.random((4, 10, 16), dtype=np.float32)
    v = np.zeros((4, 4, 16), np.float32)
    kernel.call("rows", x, v)
    r = 2 * np.arange(4)
    expected = x[:, r] - x[:, r + 2] - 0.5 * (x[:, r + 1] - x[:, r + 3])
    np.testing.assert_allclose(v, expected.transpose(1, 0, 2), rtol=1e-6)


# y[cb * 16 + c, h, w] = x[cb, h, w, c]: a blocked tensor back to NCHW, its
# 7 columns `vectorized` (fewer than a whole vector: `vectorized-short`).
SHORT_COLUMNS = """
  loop.func @unblock(%x: memref<2x7x7x16xf32>, %y: memref<32x7x7xf32>, %blocks: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    loop.for %cb = %c0 to %blocks step %c1 {
      loop.for %h = %c0 to %c7 step %c1 {
        loop.for %c = %c0 to %c16 step %c1 {
          loop.for %w = %c0 to %c7 step %c1 kind(vectorized) {
            %v = loop.load %x[%cb, %h, %w, %c] : memref<2x7x7x16xf32>
            %base = arith.muli %cb, %c16 : index
            %ch = arith.addi %base, %c : index
            loop.store %v, %y[%ch, %h, %w] : memref<32x7x7xf32>
          }
        }
      }
    }
    loop.return
  }
"""


def test_a_loop_shorter_than_a_vector_is_not_unrolled_with_its_nest():
    """7 columns, 16 channels and 7 rows of constant trip counts: LLVM unrolled them
    into 784 scalar copies per channel block, seconds of compile time for the
    SLP vectorizer and the schedulers (ShuffleNetV2's 1x1024x7x7 transform)."""
    module = lower(SHORT_COLUMNS)
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert '!"llvm.loop.unroll.disable"' in raw
    kernel = Kernel(module)
    assert kernel.compiled.optimized_ir.count("store float") < 100
    x = RNG.random((2, 7, 7, 16), dtype=np.float32)
    y = np.zeros((32, 7, 7), np.float32)
    kernel.call("unblock", x, y, 2)
    np.testing.assert_array_equal(y, x.transpose(0, 3, 1, 2).reshape(32, 7, 7))


# One vector of lanes (`lanes` f32 at the target's width): LLVM's loop vectorizer
# plans one width when told it (backends/codegen.py, ONE_VECTOR_METADATA).
ONE_VECTOR_SCALE = """
  loop.func @scale(%x: memref<4x${TRIPS}xf32>, %y: memref<4x${TRIPS}xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant $TRIPS : index
    %s = arith.constant 3.0 : f32
    loop.for %r = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %n step %c1 kind(vectorized) {
        %a = loop.load %x[%r, %j] : memref<4x${TRIPS}xf32>
        %b = arith.mulf %a, %s : f32
        loop.store %b, %y[%r, %j] : memref<4x${TRIPS}xf32>
      }
    }
    loop.return
  }
"""


def _one_vector_lanes() -> int:
    bits = codegen.CodeTarget.of().vector_bits
    return (bits or 256) // 32


def test_a_one_vector_loop_gets_its_width_and_the_same_code(monkeypatch):
    """Width and interleave count 1 are what LLVM chose for such a loop: the object
    code is the same bytes with and without them."""
    lanes = _one_vector_lanes()
    module = lower(ONE_VECTOR_SCALE, TRIPS=lanes)
    raw = codegen.emit_llvm_ir(module, optimized=False)
    if codegen.CodeTarget.of(module).vector_bits is None:
        pytest.skip("no vector width for this CPU")
    assert f'!"llvm.loop.vectorize.width", i32 {lanes}' in raw
    assert '!"llvm.loop.interleave.count", i32 1' in raw
    hinted = codegen.emit_object(module)
    monkeypatch.setattr(codegen, "_one_vector_lanes", lambda *args: None)
    assert "llvm.loop.vectorize.width" not in codegen.emit_llvm_ir(module, optimized=False)
    assert codegen.emit_object(module) == hinted
    x = RNG.random((4, lanes), dtype=np.float32)
    y = np.zeros((4, lanes), np.float32)
    Kernel(module).call("scale", x, y)
    np.testing.assert_array_equal(y, x * np.float32(3))


def test_a_loop_of_two_vectors_gets_no_width():
    module = lower(ONE_VECTOR_SCALE, TRIPS=2 * _one_vector_lanes())
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert '!"llvm.loop.vectorize.enable", i1 1' in raw
    assert "llvm.loop.vectorize.width" not in raw


def test_serial_reduction_keeps_sequential_order():
    module = lower(HINTED_DOT, KIND="serial")
    assert "!llvm.loop" not in codegen.emit_llvm_ir(module, optimized=False)
    a = RNG.random(4096, dtype=np.float32)
    b = RNG.random(4096, dtype=np.float32)
    expected = np.float32(0)
    for x, y in zip(a, b, strict=True):
        expected = np.float32(expected + np.float32(x * y))
    # contract may fuse x*y+acc into one FMA (one rounding fewer); order is kept.
    assert Kernel(module).call("dot", a, b) == pytest.approx(float(expected), rel=1e-6)


def test_unrolled_loop_gets_full_unroll_metadata():
    module = lower(HINTED_DOT, KIND="unrolled")
    assert '!"llvm.loop.unroll.full"' in codegen.emit_llvm_ir(module, optimized=False)


# A depthwise convolution's lane loop around its window's taps
# (schedule/border_split.py, `lanes_outside_taps`): the taps are `unrolled`.
LANES_AROUND_TAPS = """
  loop.func @taps(%x: memref<${ROWS}x${LANES}xf32>, %w: memref<3x${LANES}xf32>, %y: memref<${LANES}xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %n = arith.constant $LANES : index
    %zero = arith.constant 0.0 : f32
    loop.for %l = %c0 to %n step %c1 kind(vectorized) {
      loop.store %zero, %y[%l] : memref<${LANES}xf32>
      loop.for %k = %c0 to %c3 step %c1 kind(unrolled) {
        %a = loop.load %x[%k, %l] : memref<${ROWS}x${LANES}xf32>
        %b = loop.load %w[%k, %l] : memref<3x${LANES}xf32>
        %p = arith.mulf %a, %b : f32
        %s = loop.load %y[%l] : memref<${LANES}xf32>
        %t = arith.addf %s, %p : f32
        loop.store %t, %y[%l] : memref<${LANES}xf32>
      }
    }
    loop.return
  }
"""


def test_a_lane_loop_around_unrolled_taps_is_hinted_and_vectorized():
    """The unrolled tap loop does not hide the lane loop from the hints: it gets
    `vectorize.enable` (and its width), the tap loop `unroll.full`, and O3 makes
    vector code of it, the same sums as NumPy's in the same order."""
    lanes = _one_vector_lanes()
    module = lower(LANES_AROUND_TAPS, LANES=lanes, ROWS=3)
    raw = codegen.emit_llvm_ir(module, optimized=False)
    assert '!"llvm.loop.vectorize.enable", i1 1' in raw
    assert '!"llvm.loop.unroll.full"' in raw
    if codegen.CodeTarget.of(module).vector_bits is not None:
        assert f'!"llvm.loop.vectorize.width", i32 {lanes}' in raw
    assert f"<{lanes} x float>" in codegen.emit_llvm_ir(module, optimized=True)
    x = RNG.random((3, lanes), dtype=np.float32)
    w = RNG.random((3, lanes), dtype=np.float32)
    y = np.zeros(lanes, np.float32)
    Kernel(module).call("taps", x, w, y)
    want = np.zeros(lanes, np.float32)
    for k in range(3):
        want = want + x[k] * w[k]
    np.testing.assert_allclose(y, want, rtol=1e-6)


def test_lamina_num_threads_is_honoured():
    script = "from lamina.backends import codegen\nprint(codegen.get_max_threads())\n"
    env = {**os.environ, "LAMINA_NUM_THREADS": "3"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "3"


def test_loop_hints_skip_outer_loops_and_loops_with_calls():
    module = lower(
        """
  loop.func @outer(%a: memref<8x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c8 step %c1 kind(vectorized) {
      loop.for %j = %c0 to %c8 step %c1 {
        %x = loop.load %a[%i, %j] : memref<8x8xf32>
        %y = arith.addf %x, %x : f32
        loop.store %y, %a[%i, %j] : memref<8x8xf32>
      }
    }
    loop.for %k = %c0 to %c8 step %c1 kind(vectorized) {
      %x = loop.load %a[%k, %k] : memref<8x8xf32>
      %t = math.tanh %x : f32
      loop.store %t, %a[%k, %k] : memref<8x8xf32>
    }
    loop.return
  }
"""
    )
    assert "lamina.loop_kind" in str(module)  # the pass marks both back edges
    assert "!llvm.loop" not in codegen.emit_llvm_ir(module, optimized=False)


def test_outlined_parallel_functions_are_internal():
    kernel = lower_and_jit(PARALLEL_IDS)
    assert kernel.function_names == ["who"]
    with pytest.raises(KeyError, match=r"no function 'who_par0'.*defined: who"):
        kernel.get_function_address("who_par0")
    assert 'define internal void @"who_par0"' in codegen.emit_llvm_ir(
        kernel.module, optimized=False
    )


def test_block_order_is_fixed_before_translation():
    # A hand-written body with the loop exit listed before the header: the
    # pass's block ordering puts definitions first, so translation succeeds.
    from lamina.passes.lower_to_llvm import order_blocks

    ctx = make_context()
    text = """builtin.module {
  llvm.func @count(%n: i64) -> i64 {
    %z = llvm.mlir.constant(0) : i64
    %one = llvm.mlir.constant(1) : i64
    llvm.br ^head(%z : i64)
  ^exit:
    llvm.return %twice : i64
  ^head(%i: i64):
    %twice = llvm.add %i, %i : i64
    %c = llvm.icmp "slt" %i, %n : i64
    llvm.cond_br %c, ^body, ^exit
  ^body:
    %next = llvm.add %i, %one : i64
    llvm.br ^head(%next : i64)
  }
}"""
    module = parse_module(ctx, text, "order.mlir")
    with pytest.raises(DiagnosticError, match="block placed before its definition"):
        codegen.compile_module(module, use_cache=False)
    order_blocks(next(iter(module.ops)))
    assert Kernel(module).call("count", 7) == 14


def test_unsigned_conversions_and_fpowi():
    kernel = lower_and_jit(
        """
  loop.func @conv(%u: memref<6xi64>, %f: memref<6xf64>, %g: memref<6xf32>, %p: memref<6xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %three = arith.constant 3 : i32
    loop.for %i = %c0 to %c6 step %c1 {
      %x = loop.load %u[%i] : memref<6xi64>
      %d = arith.uitofp %x : i64 to f64
      %s = arith.uitofp %x : i64 to f32
      loop.store %d, %f[%i] : memref<6xf64>
      loop.store %s, %g[%i] : memref<6xf32>
      %b = loop.load %p[%i] : memref<6xf32>
      %c = math.fpowi %b, %three : f32, i32
      loop.store %c, %p[%i] : memref<6xf32>
    }
    loop.return
  }
"""
    )
    unsigned = np.array([0, 1, 2**53 + 1, 2**63, 2**64 - 1, 12345678901234567], np.uint64)
    u = unsigned.view(np.int64).copy()
    f, g = np.zeros(6), np.zeros(6, np.float32)
    p = np.array([-2, -1, 0, 0.5, 1.5, 3], np.float32)
    expected_p = p**3
    kernel.call("conv", u, f, g, p)
    np.testing.assert_array_equal(f, unsigned.astype(np.float64))
    np.testing.assert_array_equal(g, unsigned.astype(np.float32))
    np.testing.assert_allclose(p, expected_p, rtol=1e-6)


def test_zero_dim_buffers_and_strided_layouts():
    kernel = lower_and_jit(
        """
  loop.func @sum_col(%a: memref<4x3xf32>, %col: memref<4xf32, strided<[3], offset: 1>>, %out: memref<f32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %zero = arith.constant 0.0 : f32
    %s = loop.for %i = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> (f32) {
      %x = loop.load %col[%i] : memref<4xf32, strided<[3], offset: 1>>
      %t = arith.addf %acc, %x : f32
      loop.yield %t : f32
    }
    loop.store %s, %out[] : memref<f32>
    loop.return
  }
"""
    )
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    out = np.zeros((), np.float32)
    # The strided parameter views the same storage as `a`: column 1.
    kernel.call("sum_col", a, a, out)
    assert out == a[:, 1].sum()


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 CPU names")
def test_portable_object_avoids_host_only_instructions():
    module = lower(BROADCAST_ADD, T="f32")
    portable = codegen.emit_assembly(module, cpu="x86-64")
    assert "ymm" not in portable and "zmm" not in portable  # SSE2 baseline only
    assert codegen.emit_object(module, cpu="x86-64")[:4] == b"\x7fELF"


# ---------------------------------------------------------------------------
# Scalar op semantics, op by op (edge values included)
# ---------------------------------------------------------------------------

ELEMENTWISE = """
  loop.func @op(%a: memref<${N}x$T>, %b: memref<${N}x$T>, %o: memref<${N}x$R>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant $N : index
    loop.for %i = %c0 to %n step %c1 {
      %x = loop.load %a[%i] : memref<${N}x$T>
      %y = loop.load %b[%i] : memref<${N}x$T>
      %r = $EXPR
      loop.store %r, %o[%i] : memref<${N}x$R>
    }
    loop.return
  }
"""


def run_elementwise(expr: str, a: np.ndarray, b: np.ndarray, t: str, r: str, out_dtype):
    kernel = lower_and_jit(ELEMENTWISE, N=a.size, T=t, R=r, EXPR=expr)
    out = np.zeros(a.size, out_dtype)
    kernel.call("op", a, b, out)
    return out


I32_EDGE = np.array([0, 1, -1, 7, -7, 2**31 - 1, -(2**31), 123456, -98765, 31], np.int32)
I32_OTHER = np.array([3, -3, 5, 2, -2, 1, 1, 7, 13, 4], np.int32)
U32 = lambda v: v.view(np.uint32)  # noqa: E731


def _trunc_div(x, y):
    return (np.sign(x) * np.sign(y) * (np.abs(x.astype(np.int64)) // np.abs(y))).astype(np.int32)


INT_CASES = {
    "arith.addi %x, %y : i32": lambda x, y: x + y,
    "arith.subi %x, %y : i32": lambda x, y: x - y,
    "arith.muli %x, %y : i32": lambda x, y: x * y,
    "arith.andi %x, %y : i32": lambda x, y: x & y,
    "arith.ori %x, %y : i32": lambda x, y: x | y,
    "arith.xori %x, %y : i32": lambda x, y: x ^ y,
    "arith.divsi %x, %y : i32": _trunc_div,
    "arith.remsi %x, %y : i32": lambda x, y: x - _trunc_div(x, y) * y,
    "arith.floordivsi %x, %y : i32": lambda x, y: x // y,
    "arith.ceildivsi %x, %y : i32": lambda x, y: -((-x.astype(np.int64)) // y).astype(np.int32),
    "arith.divui %x, %y : i32": lambda x, y: (U32(x) // U32(y)).view(np.int32),
    "arith.remui %x, %y : i32": lambda x, y: (U32(x) % U32(y)).view(np.int32),
    "arith.ceildivui %x, %y : i32": lambda x, y: (
        (-(-U32(x).astype(np.int64) // U32(y).astype(np.int64))).astype(np.uint32).view(np.int32)
    ),
    "arith.maxsi %x, %y : i32": np.maximum,
    "arith.minsi %x, %y : i32": np.minimum,
    "arith.maxui %x, %y : i32": lambda x, y: np.maximum(U32(x), U32(y)).view(np.int32),
    "arith.minui %x, %y : i32": lambda x, y: np.minimum(U32(x), U32(y)).view(np.int32),
}


@pytest.mark.parametrize("expr", list(INT_CASES), ids=[e.split()[0] for e in INT_CASES])
def test_int32_binary_op_semantics(expr):
    x, y = I32_EDGE.copy(), I32_OTHER.copy()
    if expr.startswith("arith.ceildivsi"):
        x[6] = -(2**31) + 1  # -INT_MIN overflows in the NumPy reference, not in the kernel
    with np.errstate(over="ignore"):
        expected = INT_CASES[expr](x, y).astype(np.int32)
    np.testing.assert_array_equal(run_elementwise(expr, x, y, "i32", "i32", np.int32), expected)


@pytest.mark.parametrize("op", ["shli", "shrsi", "shrui"])
def test_int32_shift_semantics(op):
    x = I32_EDGE.copy()
    amount = np.array([0, 1, 31, 4, 3, 1, 1, 30, 16, 2], np.int32)
    expected = {
        "shli": lambda: (x.astype(np.int64) << amount).astype(np.int64).astype(np.int32),
        "shrsi": lambda: x >> amount,
        "shrui": lambda: (U32(x) >> amount.astype(np.uint32)).view(np.int32),
    }[op]()
    got = run_elementwise(f"arith.{op} %x, %y : i32", x, amount, "i32", "i32", np.int32)
    np.testing.assert_array_equal(got, expected)


CMPI = {
    "eq": np.equal, "ne": np.not_equal, "slt": np.less, "sle": np.less_equal,
    "sgt": np.greater, "sge": np.greater_equal,
    "ult": lambda x, y: U32(x) < U32(y), "ule": lambda x, y: U32(x) <= U32(y),
    "ugt": lambda x, y: U32(x) > U32(y), "uge": lambda x, y: U32(x) >= U32(y),
}  # fmt: skip


@pytest.mark.parametrize("pred", list(CMPI))
def test_cmpi_predicates(pred):
    x, y = I32_EDGE, np.roll(I32_EDGE, 3)
    y[:2] = x[:2]  # some equal pairs
    got = run_elementwise(f"arith.cmpi {pred}, %x, %y : i32", x, y, "i32", "i1", np.bool_)
    np.testing.assert_array_equal(got, CMPI[pred](x, y))


F32_EDGE = np.array(
    [0.0, -0.0, 1.5, -2.25, np.nan, np.inf, -np.inf, 3.0, np.nan, 1e-30], np.float32
)
F32_OTHER = np.array([0.0, 0.0, np.nan, -2.25, 1.0, 1.0, np.nan, 4.0, np.nan, -1e-30], np.float32)

CMPF = {
    "oeq": lambda x, y: x == y, "one": lambda x, y: (x != y) & ~np.isnan(x) & ~np.isnan(y),
    "olt": lambda x, y: x < y, "ole": lambda x, y: x <= y, "ogt": lambda x, y: x > y,
    "oge": lambda x, y: x >= y, "ueq": lambda x, y: (x == y) | np.isnan(x) | np.isnan(y),
    "une": lambda x, y: x != y, "ult": lambda x, y: ~(x >= y), "uge": lambda x, y: ~(x < y),
    "ord": lambda x, y: ~np.isnan(x) & ~np.isnan(y), "uno": lambda x, y: np.isnan(x) | np.isnan(y),
    "true": lambda x, y: np.ones_like(x, bool), "false": lambda x, y: np.zeros_like(x, bool),
}  # fmt: skip


@pytest.mark.parametrize("pred", list(CMPF))
def test_cmpf_predicates_with_nans(pred):
    got = run_elementwise(
        f"arith.cmpf {pred}, %x, %y : f32", F32_EDGE, F32_OTHER, "f32", "i1", np.bool_
    )
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(got, CMPF[pred](F32_EDGE, F32_OTHER))


@pytest.mark.parametrize(
    ("op", "reference"),
    [
        ("maximumf", np.maximum),
        ("minimumf", np.minimum),
        ("maxnumf", np.fmax),
        ("minnumf", np.fmin),
        ("divf", np.divide),
        ("subf", np.subtract),
    ],
)
def test_float_binary_ops_follow_numpy_nan_rules(op, reference):
    got = run_elementwise(f"arith.{op} %x, %y : f32", F32_EDGE, F32_OTHER, "f32", "f32", np.float32)
    with np.errstate(all="ignore"):
        expected = reference(F32_EDGE, F32_OTHER)
    # NaNs count as equal here. The sign of a zero result may differ: LLVM's
    # minimum orders -0 below +0 (IEEE 754-2019), NumPy returns either.
    np.testing.assert_array_equal(got, expected)


UNARY_ONE = """
  loop.func @op(%a: memref<${N}x$T>, %o: memref<${N}x$R>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant $N : index
    loop.for %i = %c0 to %n step %c1 {
      %x = loop.load %a[%i] : memref<${N}x$T>
      %r = $EXPR
      loop.store %r, %o[%i] : memref<${N}x$R>
    }
    loop.return
  }
"""


def run_unary(expr: str, a: np.ndarray, t: str, r: str, out_dtype) -> np.ndarray:
    kernel = lower_and_jit(UNARY_ONE, N=a.size, T=t, R=r, EXPR=expr)
    out = np.zeros(a.size, out_dtype)
    kernel.call("op", a, out)
    return out


def _round_half_away(x):
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


MATH_UNARY = {
    "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "log": np.log, "log2": np.log2,
    "log10": np.log10, "log1p": np.log1p, "sqrt": np.sqrt, "rsqrt": lambda x: 1 / np.sqrt(x),
    "cbrt": np.cbrt, "absf": np.abs, "floor": np.floor, "ceil": np.ceil, "trunc": np.trunc,
    "round": _round_half_away, "roundeven": np.round, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "tanh": np.tanh, "sinh": np.sinh, "cosh": np.cosh, "asin": np.arcsin,
    "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh, "atanh": np.arctanh,
    "acosh": np.arccosh,
    "erf": np.vectorize(math.erf),
}  # fmt: skip


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("name", list(MATH_UNARY))
def test_math_unary_ops_match_numpy(name, dtype):
    np_dtype = np.float32 if dtype == "f32" else np.float64
    x = np.array([0.05, 0.3, 0.5, 0.75, 0.9, 1.5, 2.5, -0.5, -0.7, -2.5], np_dtype)
    if name in ("log", "log2", "log10", "log1p", "sqrt", "rsqrt"):
        x = np.abs(x) + np_dtype(0.1)
    if name in ("asin", "acos", "atanh"):
        x = np.clip(x, -0.95, 0.95)
    if name == "acosh":
        x = np.abs(x) + np_dtype(1)
    got = run_unary(f"math.{name} %x : {dtype}", x, dtype, dtype, np_dtype)
    expected = MATH_UNARY[name](x.astype(np.float64))
    rtol = 2e-6 if dtype == "f32" else 1e-13
    np.testing.assert_allclose(got, expected, rtol=rtol, atol=rtol)


CASTS = [
    ("arith.extsi %x : i8 to i32", "i8", "i32", np.int8, np.int32, lambda x: x.astype(np.int32)),
    ("arith.extui %x : i8 to i32", "i8", "i32", np.int8, np.int32,
     lambda x: x.view(np.uint8).astype(np.int32)),
    ("arith.trunci %x : i32 to i8", "i32", "i8", np.int32, np.int8, lambda x: x.astype(np.int8)),
    ("arith.sitofp %x : i32 to f32", "i32", "f32", np.int32, np.float32,
     lambda x: x.astype(np.float32)),
    ("arith.uitofp %x : i32 to f64", "i32", "f64", np.int32, np.float64,
     lambda x: x.view(np.uint32).astype(np.float64)),
    ("arith.fptoui %x : f64 to i32", "f64", "i32", np.float64, np.int32,
     lambda x: x.astype(np.uint32).view(np.int32)),
    ("arith.extf %x : f32 to f64", "f32", "f64", np.float32, np.float64,
     lambda x: x.astype(np.float64)),
    ("arith.truncf %x : f64 to f32", "f64", "f32", np.float64, np.float32,
     lambda x: x.astype(np.float32)),
    ("arith.bitcast %x : f32 to i32", "f32", "i32", np.float32, np.int32,
     lambda x: x.view(np.int32)),
    ("arith.index_cast %x : i32 to index", "i32", "i64", np.int32, np.int64,
     lambda x: x.astype(np.int64)),
]  # fmt: skip


@pytest.mark.parametrize(
    ("expr", "t", "r", "in_dtype", "out_dtype", "reference"), CASTS, ids=[c[0] for c in CASTS]
)
def test_cast_semantics(expr, t, r, in_dtype, out_dtype, reference):
    if expr.startswith("arith.index_cast"):  # the result is an index; store it as i64
        expr = expr.replace("to index", "to index\n      %r2 = arith.index_cast %r : index to i64")
    raw = np.array([0, 1, -1, 100, -100, 127, -128, 3, 77, -5])
    x = raw.astype(in_dtype) if np.dtype(in_dtype).kind != "f" else (raw * 1.7).astype(in_dtype)
    if expr.startswith("arith.fptoui"):
        x = np.abs(x)
    body = UNARY_ONE.replace(
        "loop.store %r,", "loop.store %r2," if "%r2" in expr else "loop.store %r,"
    )
    kernel = lower_and_jit(body, N=x.size, T=t, R=r, EXPR=expr)
    out = np.zeros(x.size, out_dtype)
    kernel.call("op", x, out)
    np.testing.assert_array_equal(out, reference(x))


def test_results_copied_from_constants_of_different_shapes() -> None:
    """Two entries returning constants of different array types: the memcpy
    intrinsic they share takes plain pointers (it is declared once)."""
    import lamina

    text = """
    graph.func @two(%x: tensor<2xf32>) -> tensor<2xi64> {
      %y = graph.constant dense<[2, 3]> : tensor<2xi64>
      graph.return %y : tensor<2xi64>
    }
    graph.func @none(%x: tensor<2xf32>) -> tensor<0xi64> {
      %y = graph.constant dense<> : tensor<0xi64>
      graph.return %y : tensor<0xi64>
    }
    """
    exe = lamina.compile(text, cache=False)
    x = np.zeros(2, np.float32)
    np.testing.assert_array_equal(exe.run("two", x), [2, 3])
    assert exe.run("none", x).shape == (0,)
