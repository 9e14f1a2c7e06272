// RUN: %python -c "import sys; from lamina.tuning.testing import write_record; write_record(sys.argv[1], sys.argv[2], 'scale', {'parallel_min_iterations_per_core': 5})" %s %t.jsonl
// RUN: lamina-opt %s -p 'apply-records{records="%t.jsonl"}' | filecheck %s
// RUN: lamina-opt %s --records %t.jsonl -p 'apply-records{records="%t.jsonl"},schedule-parallel{cores=2}' | filecheck %s --check-prefix=SCHED
// RUN: lamina-opt %s -p 'schedule-parallel{cores=2}' | filecheck %s --check-prefix=DEFAULT
// RUN: echo '{"kernel": 1}' > %t.bad.jsonl
// RUN: not lamina-opt %s -p 'apply-records{records="%t.bad.jsonl"}' 2>&1 | filecheck %s --check-prefix=BAD
// RUN: not lamina-opt %s --records %t.bad.jsonl 2>&1 | filecheck %s --check-prefix=BADFLAG
// RUN: lamina-opt %s --records %t.bad.jsonl --records-ignore-errors -p 'apply-records{records="%t.bad.jsonl" ignore_errors=true}' | filecheck %s --check-prefix=IGNORED

// A kernel with a tuning record for this CPU gets the record's knobs as
// `lamina.knobs`; a kernel without one is left alone. The schedule rules
// read the function's knobs over the module's: with the recorded
// `parallel_min_iterations_per_core = 5` the 8 rows of @scale stay on one
// thread (2 cores would need 10), while without the record they are shared.
// A malformed records file is an error naming the line, unless ignored.

// CHECK:      loop.func @scale({{.*}}) attributes {lamina.knobs = {parallel_min_iterations_per_core = 5 : i64}}
// CHECK:      loop.func @other(
// CHECK-NOT:  lamina.knobs

// SCHED:      loop.func @scale(
// SCHED-NEXT:   arith.constant
// SCHED:        loop.for %{{.*}} kind(parallel)
// SCHED-NEXT:     loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {

// DEFAULT:      loop.func @scale(
// DEFAULT:        loop.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// DEFAULT-NEXT:     loop.for %{{.*}} kind(parallel)

// BAD:      error: {{.*}}apply-records: {{.*}}.bad.jsonl:1: 'kernel' must be a 64-digit kernel key
// BADFLAG:  lamina-opt: error: {{.*}}.bad.jsonl:1: 'kernel' must be a 64-digit kernel key

// IGNORED:     loop.func @scale(
// IGNORED-NOT: lamina.knobs

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @scale(%x: memref<1x8x4xf32>, %y: memref<1x8x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    loop.for %b = %c0 to %c1 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c8 step %c1 {
        loop.for %w = %c0 to %c4 step %c1 kind(vectorized) {
          %v = loop.load %x[%b, %h, %w] : memref<1x8x4xf32>
          %d = arith.addf %v, %v : f32
          loop.store %d, %y[%b, %h, %w] : memref<1x8x4xf32>
        }
      }
    }
    loop.return
  }
  loop.func @other(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    loop.for %i = %c0 to %c4 step %c1 kind(vectorized) {
      %v = loop.load %x[%i] : memref<4xf32>
      loop.store %v, %y[%i] : memref<4xf32>
    }
    loop.return
  }
}
