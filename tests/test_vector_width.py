"""Generated code follows the host's vector width (512-bit on AVX-512 hosts)."""

from __future__ import annotations

import re

import pytest

from lamina.backends import codegen
from lamina.driver.lowering import lower_to_build, parse_source
from lamina.target.cpu_facts import host_cpu_facts

AXPY = """
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @axpy(%x: memref<4096xf32>, %y: memref<4096xf32>, %out: memref<4096xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = arith.constant 4096 : index
    %a = arith.constant 3.0 : f32
    loop.for %i = %c0 to %n step %c1 kind(vectorized) {
      %xv = loop.load %x[%i] : memref<4096xf32>
      %yv = loop.load %y[%i] : memref<4096xf32>
      %p = arith.mulf %a, %xv : f32
      %s = arith.addf %p, %yv : f32
      loop.store %s, %out[%i] : memref<4096xf32>
    }
    loop.return
  }
}
"""


def _build():
    module = parse_source(AXPY, "axpy")
    lower_to_build(module)
    return module


def test_functions_carry_the_host_vector_width():
    bits = host_cpu_facts().vector_bits
    ir = codegen.emit_llvm_ir(_build(), optimized=False)
    assert f'"prefer-vector-width"="{bits}"' in ir
    assert f'"min-legal-vector-width"="{bits}"' in ir


def test_portable_code_does_not_carry_the_host_vector_width():
    ir = codegen.emit_llvm_ir(_build(), optimized=False, cpu="x86-64")
    assert "prefer-vector-width" not in ir


@pytest.mark.skipif(host_cpu_facts().vector_bits != 512, reason="needs an AVX-512 host")
def test_avx512_host_gets_512_bit_fmas():
    asm = codegen.emit_assembly(_build())
    assert re.search(r"vfmadd\w+\s+.*%zmm", asm), "expected 512-bit FMAs in the hot loop"
