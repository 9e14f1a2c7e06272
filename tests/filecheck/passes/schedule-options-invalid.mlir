// An impossible override of the target's facts is a diagnostic, never a silently different kernel.
// RUN: not lamina-opt %s -p 'schedule{vector_bits=7}' 2>&1 | filecheck %s --check-prefix=BITS
// RUN: not lamina-opt %s -p 'schedule{vector_registers=1}' 2>&1 | filecheck %s --check-prefix=REGS
// RUN: not lamina-opt %s -p 'schedule{cores=-1}' 2>&1 | filecheck %s --check-prefix=CORES
// RUN: lamina-opt %s -p 'schedule{vector_bits=256 vector_registers=16 cores=1}' | filecheck %s --check-prefix=OK

// BITS: error: 'builtin.module' op schedule: vector_bits must be 128, 256 or 512 (0: the target's), got 7
// REGS: error: 'builtin.module' op schedule: vector_registers must be 8..64 (0: the target's), got 1
// CORES: error: 'builtin.module' op schedule: cores must be >= 1 (0: detect), got -1
// OK: lamina.phase = #lamina.phase<lowering>
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
}
