// RUN: lamina-opt %s --split-input-file -p schedule-fuse-stages | filecheck %s
// RUN: lamina-opt %s --split-input-file -p 'schedule-fuse-stages{cores=2}' | filecheck %s --check-prefix=TEAM
// RUN: lamina-opt %s --split-input-file -p 'schedule-fuse-stages{cores=1}' | filecheck %s --check-prefix=NOTEAM

// Stage fusion alone (one rule of `schedule`): row stages over the same
// rows (a row reduction, then an elementwise pass reading it) become one
// loop; the temporary's allocation moves before it and its free to the end.
// A serial stage next to a parallel one joins it (the fused loop is
// parallel), and the fused body's inner loops fuse too. A stage that reads
// another row of a buffer the first writes stays apart. Nothing else
// changes: the division keeps its exact rounding (no `arcp`, that is
// `schedule-reciprocal-divisions`).

builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @stages(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %zero = arith.constant 0.0 : f32
    %t = loop.alloc {scope = "local"} : memref<4xf32>
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      %s = loop.for %k = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
        %v = loop.load %x[%i, %k] : memref<4x8xf32>
        %n = arith.addf %acc, %v : f32
        loop.yield %n : f32
      }
      loop.store %s, %t[%i] : memref<4xf32>
    }
    %one = arith.constant 1.0 : f32
    loop.for %i2 = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %x[%i2, %j] : memref<4x8xf32>
        %s = loop.load %t[%i2] : memref<4xf32>
        %d = arith.divf %v, %s : f32
        loop.store %d, %y[%i2, %j] : memref<4x8xf32>
      }
    }
    loop.free %t : memref<4xf32>
    loop.return
  }

  loop.func @shifted(%x: memref<4xf32>, %y: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %t = loop.alloc {scope = "local"} : memref<4xf32>
    loop.for %i = %c0 to %c3 step %c1 {
      %v = loop.load %x[%i] : memref<4xf32>
      loop.store %v, %t[%i] : memref<4xf32>
    }
    loop.for %i2 = %c0 to %c3 step %c1 {
      %n = arith.addi %i2, %c1 : index
      %v = loop.load %t[%n] : memref<4xf32>
      loop.store %v, %y[%i2] : memref<4xf32>
    }
    loop.free %t : memref<4xf32>
    loop.return
  }
  // A kernel and its epilogue (a blocked convolution's bias+relu): the
  // shared temporary is indexed by the outer loop at position 1, by the
  // middle one at 2 and by the inner one at 3, so the stages fuse at every
  // level and the epilogue reads the element the first stage just wrote.
  // The temporary then only carries values to the epilogue's store of %y at
  // the same index: %y itself holds them (no temporary of the output's size).
  loop.func @epilogue(%x: memref<1x2x3x8xf32>, %y: memref<1x2x3x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c8 = arith.constant 8 : index
    %t = loop.alloc {scope = "local"} : memref<1x2x3x8xf32>
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c3 step %c1 {
        loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
          %v = loop.load %x[%c0, %b, %h, %w] : memref<1x2x3x8xf32>
          %d = arith.addf %v, %v : f32
          loop.store %d, %t[%c0, %b, %h, %w] : memref<1x2x3x8xf32>
        }
      }
    }
    loop.for %b2 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h2 = %c0 to %c3 step %c1 {
        loop.for %w2 = %c0 to %c8 step %c1 kind(vectorized) {
          %v = loop.load %t[%c0, %b2, %h2, %w2] : memref<1x2x3x8xf32>
          %z = arith.constant 0.0 : f32
          %r = arith.maximumf %v, %z : f32
          loop.store %r, %y[%c0, %b2, %h2, %w2] : memref<1x2x3x8xf32>
        }
      }
    }
    loop.free %t : memref<1x2x3x8xf32>
    loop.return
  }

  // An epilogue too small for a thread team of its own (serial) after a
  // parallel stage: it joins the parallel loop instead of running on the
  // calling thread alone; a serial stage before a parallel one joins it too.
  loop.func @serial_epilogue(%x: memref<2x8xf32>, %y: memref<2x8xf32>, %z: memref<2x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c8 = arith.constant 8 : index
    loop.for %p = %c0 to %c2 step %c1 {
      loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %x[%p, %w] : memref<2x8xf32>
        loop.store %v, %z[%p, %w] : memref<2x8xf32>
      }
    }
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %z[%b, %w] : memref<2x8xf32>
        %d = arith.addf %v, %v : f32
        loop.store %d, %y[%b, %w] : memref<2x8xf32>
      }
    }
    loop.for %e = %c0 to %c2 step %c1 {
      loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
        %v = loop.load %y[%e, %w] : memref<2x8xf32>
        %f = arith.constant 0.0 : f32
        %r = arith.maximumf %v, %f : f32
        loop.store %r, %y[%e, %w] : memref<2x8xf32>
      }
    }
    loop.return
  }

  // The inner loops read another row of the temporary (h2 + 1): only the
  // outer level fuses.
  loop.func @epilogue_shifted(%x: memref<1x2x4x8xf32>, %y: memref<1x2x3x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %t = loop.alloc {scope = "local"} : memref<1x2x4x8xf32>
    loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h = %c0 to %c3 step %c1 {
        loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
          %v = loop.load %x[%c0, %b, %h, %w] : memref<1x2x4x8xf32>
          loop.store %v, %t[%c0, %b, %h, %w] : memref<1x2x4x8xf32>
        }
      }
    }
    loop.for %b2 = %c0 to %c2 step %c1 kind(parallel) {
      loop.for %h2 = %c0 to %c3 step %c1 {
        loop.for %w2 = %c0 to %c8 step %c1 kind(vectorized) {
          %n = arith.addi %h2, %c1 : index
          %v = loop.load %t[%c0, %b2, %n, %w2] : memref<1x2x4x8xf32>
          loop.store %v, %y[%c0, %b2, %h2, %w2] : memref<1x2x3x8xf32>
        }
      }
    }
    loop.free %t : memref<1x2x4x8xf32>
    loop.return
  }
  // A local temporary every access of which indexes dimension 0 by the same
  // serial loop's variable keeps one slice (iteration i only touches slice
  // i); under a parallel loop, whose iterations run together, it keeps all.
  loop.func @contract(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %t = loop.alloc {scope = "local"} : memref<4x8xf32>
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c8 step %c1 {
        %v = loop.load %x[%i, %j] : memref<4x8xf32>
        loop.store %v, %t[%i, %j] : memref<4x8xf32>
      }
      loop.for %j2 = %c0 to %c8 step %c1 {
        %r = arith.subi %c8, %j2 : index
        %k = arith.subi %r, %c1 : index
        %v = loop.load %t[%i, %k] : memref<4x8xf32>
        loop.store %v, %y[%i, %j2] : memref<4x8xf32>
      }
    }
    loop.free %t : memref<4x8xf32>
    loop.return
  }
  loop.func @keep_parallel(%x: memref<4x8xf32>, %y: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %t = loop.alloc {scope = "local"} : memref<4x8xf32>
    loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c8 step %c1 {
        %v = loop.load %x[%i, %j] : memref<4x8xf32>
        loop.store %v, %t[%i, %j] : memref<4x8xf32>
      }
      loop.for %j2 = %c0 to %c8 step %c1 {
        %r = arith.subi %c8, %j2 : index
        %k = arith.subi %r, %c1 : index
        %v = loop.load %t[%i, %k] : memref<4x8xf32>
        loop.store %v, %y[%i, %j2] : memref<4x8xf32>
      }
    }
    loop.free %t : memref<4x8xf32>
    loop.return
  }
}


// CHECK-LABEL: loop.func @stages(
// CHECK:         %t = loop.alloc
// CHECK:         loop.for %i = %c0 to %c4 step %c1 kind(parallel) {
// CHECK:           loop.store %s, %t[%i]
// CHECK-NEXT:      loop.for %j = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK:             arith.divf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     loop.for
// CHECK:         loop.free %t
// CHECK-NEXT:    loop.return

// CHECK-LABEL: loop.func @shifted(
// CHECK:         loop.for %i = %c0 to %c3 step %c1 {
// CHECK:         loop.for %i2 = %c0 to %c3 step %c1 {

// CHECK-LABEL: loop.func @epilogue(
// CHECK:         loop.for %b = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NEXT:      loop.for %h = %c0 to %c3 step %c1 {
// CHECK-NEXT:        loop.for %w = %c0 to %c8 step %c1 kind(vectorized) {
// CHECK:               loop.store %d, %t[%c0, %b, %h, %w]
// CHECK:               loop.store %r, %y[%c0, %b, %h, %w]
// CHECK-NOT:     loop.for
// CHECK:         loop.free %t

// CHECK-LABEL: loop.func @serial_epilogue(
// CHECK:         loop.for %p = %c0 to %c2 step %c1 kind(parallel) {
// CHECK-NOT:     loop.for %{{[be]}} =
// CHECK:         loop.return

// -----

// A squeeze-and-excitation block's excitation (a 1x1 convolution on a 1x1
// image into 60 channel blocks) and its gating multiply are each below
// `parallel_min_work` (461 K and 141 K reads), so `lower-te` left both serial;
// fused over the channel blocks they read 602 K and the loop gets the thread
// team (`team_for_fused_stages`) -- before storage folding, so the shared
// temporary keeps its 60 slices. When together they are still below it
// (@excite_small: 325 K) but reach `parallel_team_min_work` (32 K), the loop
// is shared with a call's thread team only (`lamina.team_only`); with one
// core, never.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @excite(%x: memref<10x16xf32>, %w: memref<60x10x16x16xf32>, %f: memref<60x7x7x16xf32>, %y: memref<60x7x7x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c7 = arith.constant 7 : index
    %c10 = arith.constant 10 : index
    %c16 = arith.constant 16 : index
    %c60 = arith.constant 60 : index
    %zero = arith.constant 0.0 : f32
    %t = loop.alloc {scope = "local"} : memref<60x16xf32>
    loop.for %b = %c0 to %c60 step %c1 {
      loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %zero, %t[%b, %i] : memref<60x16xf32>
      }
      loop.for %k0 = %c0 to %c10 step %c1 {
        loop.for %k3 = %c0 to %c16 step %c1 {
          loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
            %a = loop.load %x[%k0, %k3] : memref<10x16xf32>
            %v = loop.load %w[%b, %k0, %k3, %i] : memref<60x10x16x16xf32>
            %m = arith.mulf %a, %v : f32
            %acc = loop.load %t[%b, %i] : memref<60x16xf32>
            %s = arith.addf %acc, %m : f32
            loop.store %s, %t[%b, %i] : memref<60x16xf32>
          }
        }
      }
    }
    loop.for %b2 = %c0 to %c60 step %c1 {
      loop.for %h = %c0 to %c7 step %c1 {
        loop.for %v = %c0 to %c7 step %c1 {
          loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
            %g = loop.load %t[%b2, %i] : memref<60x16xf32>
            %e = loop.load %f[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
            %o = loop.load %y[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
            %p = arith.mulf %g, %e : f32
            %q = arith.addf %p, %o : f32
            loop.store %q, %y[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
          }
        }
      }
    }
    loop.free %t : memref<60x16xf32>
    loop.return
  }

  loop.func @excite_small(%x: memref<4x16xf32>, %w: memref<60x4x16x16xf32>, %f: memref<60x7x7x16xf32>, %y: memref<60x7x7x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c16 = arith.constant 16 : index
    %c60 = arith.constant 60 : index
    %zero = arith.constant 0.0 : f32
    %t = loop.alloc {scope = "local"} : memref<60x16xf32>
    loop.for %b = %c0 to %c60 step %c1 {
      loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %zero, %t[%b, %i] : memref<60x16xf32>
      }
      loop.for %k0 = %c0 to %c4 step %c1 {
        loop.for %k3 = %c0 to %c16 step %c1 {
          loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
            %a = loop.load %x[%k0, %k3] : memref<4x16xf32>
            %v = loop.load %w[%b, %k0, %k3, %i] : memref<60x4x16x16xf32>
            %m = arith.mulf %a, %v : f32
            %acc = loop.load %t[%b, %i] : memref<60x16xf32>
            %s = arith.addf %acc, %m : f32
            loop.store %s, %t[%b, %i] : memref<60x16xf32>
          }
        }
      }
    }
    loop.for %b2 = %c0 to %c60 step %c1 {
      loop.for %h = %c0 to %c7 step %c1 {
        loop.for %v = %c0 to %c7 step %c1 {
          loop.for %i = %c0 to %c16 step %c1 kind(vectorized) {
            %g = loop.load %t[%b2, %i] : memref<60x16xf32>
            %e = loop.load %f[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
            %o = loop.load %y[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
            %p = arith.mulf %g, %e : f32
            %q = arith.addf %p, %o : f32
            loop.store %q, %y[%b2, %h, %v, %i] : memref<60x7x7x16xf32>
          }
        }
      }
    }
    loop.free %t : memref<60x16xf32>
    loop.return
  }
}

// TEAM-LABEL: loop.func @excite(
// TEAM:         loop.for %b = %c0 to %c60 step %c1 kind(parallel) {
// TEAM:           loop.for %k0 = %c0 to %c10 step %c1 {
// TEAM:           loop.for %h = %c0 to %c7 step %c1 {
// TEAM-NOT:     lamina.team_only
// TEAM-LABEL: loop.func @excite_small(
// TEAM:         loop.for %b = %c0 to %c60 step %c1 kind(parallel) {
// TEAM:           loop.for %h = %c0 to %c7 step %c1 {
// TEAM:         } {lamina.team_only}

// NOTEAM-LABEL: loop.func @excite(
// NOTEAM:         loop.for %b = %c0 to %c60 step %c1 {
// NOTEAM:           loop.for %h = %c0 to %c7 step %c1 {
