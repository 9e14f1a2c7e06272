// RUN: lamina-opt %s --split-input-file -p lower-to-llvm | filecheck %s
// RUN: lamina-opt %s --split-input-file -p lower-to-llvm | lamina-opt --split-input-file -p verify-phase | filecheck %s --check-prefix=PHASE

// Every chunk ends in phase build with nothing but llvm ops.
// PHASE-COUNT-20: builtin.module attributes {lamina.phase = #lamina.phase<build>}

// A loop nest with 2-D accesses: buffers become noalias pointers, loops become
// header/body blocks with the induction variable as a block argument, and
// each access is a chain of byte GEPs, one per index (`i * 32`, then `j * 4`).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @add_bcast(%a: memref<4x8xf32>, %b: memref<8xf32>, %c: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    loop.for %i = %c0 to %c4 step %c1 {
      loop.for %j = %c0 to %c8 step %c1 {
        %x = loop.load %a[%i, %j] : memref<4x8xf32>
        %y = loop.load %b[%j] : memref<8xf32>
        %s = arith.addf %x, %y : f32
        loop.store %s, %c[%i, %j] : memref<4x8xf32>
      }
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @add_bcast(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr {llvm.noalias, lamina.buffer = memref<4x8xf32>}, %[[B:[^:]*]]: !llvm.ptr {llvm.noalias, lamina.buffer = memref<8xf32>}, %[[C:[^:]*]]: !llvm.ptr {llvm.noalias, lamina.buffer = memref<4x8xf32>})
// CHECK:         %[[C0:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[C1:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[C8:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    llvm.br ^[[OUTER:.*]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[OUTER]](%[[I:.*]]: i64):
// CHECK-NEXT:    %[[IC:.*]] = llvm.icmp "slt" %[[I]], %[[C4]] : i64
// CHECK-NEXT:    llvm.cond_br %[[IC]], ^[[OUTER_BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[OUTER_BODY]]:
// CHECK-NEXT:    llvm.br ^[[INNER:.*]](%[[C0]] : i64)
// CHECK-NEXT:  ^[[INNER]](%[[J:.*]]: i64):
// CHECK-NEXT:    %[[JC:.*]] = llvm.icmp "slt" %[[J]], %[[C8]] : i64
// CHECK-NEXT:    llvm.cond_br %[[JC]], ^[[INNER_BODY:.*]], ^[[LATCH:.*]]
// CHECK-NEXT:  ^[[INNER_BODY]]:
// CHECK-NEXT:    %[[S0:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[R0:.*]] = llvm.mul %[[I]], %[[S0]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PA0:.*]] = llvm.getelementptr inbounds %[[A]][%[[R0]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[S1:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[R1:.*]] = llvm.mul %[[J]], %[[S1]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PA:.*]] = llvm.getelementptr inbounds %[[PA0]][%[[R1]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[PA]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[PB:.*]] = llvm.getelementptr inbounds %[[B]][%[[R1]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[PB]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %[[X]], %[[Y]] {fastmathFlags = #llvm.fastmath<contract>} : f32
// CHECK-NEXT:    %[[PC0:.*]] = llvm.getelementptr inbounds %[[C]][%[[R0]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[PC:.*]] = llvm.getelementptr inbounds %[[PC0]][%[[R1]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[S]], %[[PC]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:    %[[JN:.*]] = llvm.add %[[J]], %[[C1]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^[[INNER]](%[[JN]] : i64)
// CHECK-NEXT:  ^[[LATCH]]:
// CHECK-NEXT:    %[[IN:.*]] = llvm.add %[[I]], %[[C1]] overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^[[OUTER]](%[[IN]] : i64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return

// -----

// A reduction through iter_args: the accumulator is a header block argument,
// and the loop's result is that argument in the exit block.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @dot(%a: memref<16xf64>, %b: memref<16xf64>) -> f64 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %zero = arith.constant 0.0 : f64
    %r = loop.for %i = %c0 to %c16 step %c1 iter_args(%acc = %zero) -> (f64) {
      %x = loop.load %a[%i] : memref<16xf64>
      %y = loop.load %b[%i] : memref<16xf64>
      %m = arith.mulf %x, %y : f64
      %s = arith.addf %acc, %m : f64
      loop.yield %s : f64
    }
    loop.return %r : f64
  }
}
// CHECK-LABEL: llvm.func @dot(
// CHECK-SAME:      -> f64
// CHECK:         %[[ZERO:.*]] = llvm.mlir.constant(0.000000e+00 : f64) : f64
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%{{.*}}, %[[ZERO]] : i64, f64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64, %[[ACC:.*]]: f64):
// CHECK-NEXT:    %[[C:.*]] = llvm.icmp "slt" %[[I]], %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[C]], ^[[BODY:.*]], ^[[EXIT:.*]]
// CHECK-NEXT:  ^[[BODY]]:
// CHECK:         %[[M:.*]] = llvm.fmul %{{.*}}, %{{.*}} {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    %[[S:.*]] = llvm.fadd %[[ACC]], %[[M]] {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.add %[[I]], %{{.*}} overflow<nsw> : i64
// CHECK-NEXT:    llvm.br ^[[HEAD]](%[[NEXT]], %[[S]] : i64, f64)
// CHECK-NEXT:  ^[[EXIT]]:
// CHECK-NEXT:    llvm.return %[[ACC]] : f64

// -----

// loop.if with a result: then/else blocks branch to a merge block whose
// argument is the result.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @select_abs(%a: memref<8xf32>, %i: index) -> f32 {
    %zero = arith.constant 0.0 : f32
    %x = loop.load %a[%i] : memref<8xf32>
    %pos = arith.cmpf ogt, %x, %zero : f32
    %v = loop.if %pos -> (f32) {
      loop.yield %x : f32
    } else {
      %n = arith.negf %x : f32
      loop.yield %n : f32
    }
    loop.return %v : f32
  }
}
// CHECK-LABEL: llvm.func @select_abs(
// CHECK:         %[[POS:.*]] = llvm.fcmp "ogt" %[[X:.*]], %{{.*}} : f32
// CHECK-NEXT:    llvm.cond_br %[[POS]], ^[[THEN:.*]], ^[[ELSE:.*]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    llvm.br ^[[MERGE:.*]](%[[X]] : f32)
// CHECK-NEXT:  ^[[ELSE]]:
// CHECK-NEXT:    %[[N:.*]] = llvm.fneg %[[X]] : f32
// CHECK-NEXT:    llvm.br ^[[MERGE]](%[[N]] : f32)
// CHECK-NEXT:  ^[[MERGE]](%[[V:.*]]: f32):
// CHECK-NEXT:    llvm.return %[[V]] : f32

// -----

// loop.if without else: the false edge goes straight to the continuation.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @guarded_store(%a: memref<8xf32>, %i: index, %v: f32) {
    %c4 = arith.constant 4 : index
    %in = arith.cmpi slt, %i, %c4 : index
    loop.if %in {
      loop.store %v, %a[%i] : memref<8xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @guarded_store(
// CHECK:         %[[IN:.*]] = llvm.icmp "slt" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    llvm.cond_br %[[IN]], ^[[THEN:.*]], ^[[CONT:.*]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    llvm.mlir.constant(4) : i64
// CHECK-NEXT:    llvm.mul
// CHECK-NEXT:    %[[P:.*]] = llvm.getelementptr inbounds
// CHECK-NEXT:    llvm.store %{{.*}}, %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr
// CHECK-NEXT:    llvm.br ^[[CONT]]
// CHECK-NEXT:  ^[[CONT]]:
// CHECK-NEXT:    llvm.return

// -----

// Heap buffers come from their device's allocator (the device runtime,
// backends/llvm/device_runtime.py: slot = device index, here the default cpu:0;
// size rounded up to 64) and go back to it; a small local buffer is an
// entry-block alloca, freed by nothing. A copy within one device is a memcpy.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @temps(%a: memref<10xf32>) {
    %c0 = arith.constant 0 : index
    %g = loop.alloc : memref<10xf32>
    %l = loop.alloc {scope = "local"} : memref<4xf64>
    loop.copy %a, %g : memref<10xf32> to memref<10xf32>
    loop.free %l : memref<4xf64>
    loop.free %g : memref<10xf32>
    loop.return
  }
}
// CHECK-DAG:   llvm.func @__lamina_device_free(!llvm.ptr)
// CHECK-DAG:   llvm.func @__lamina_device_alloc(i64, i64) -> !llvm.ptr
// CHECK-LABEL: llvm.func @temps(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %{{.*}} = llvm.alloca %[[N]] x f64 {alignment = 64 : i64} : (i64) -> !llvm.ptr
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[G:.*]] = llvm.call @__lamina_device_alloc(%[[SLOT]], %[[SIZE]]) : (i64, i64) -> !llvm.ptr
// A failed allocation records its message and returns (backends/llvm/errors.py).
// CHECK-NEXT:    %[[INT:.*]] = llvm.ptrtoint %[[G]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[NULL:.*]] = llvm.icmp "eq" %[[INT]], %[[ZERO]] : i64
// CHECK-NEXT:    llvm.cond_br %[[NULL]], ^[[FAIL:\w+]], ^[[OK:\w+]]
// CHECK-NEXT:  ^[[FAIL]]:
// CHECK-NEXT:    llvm.inline_asm has_side_effects "", "~{memory}" : () -> ()
// CHECK-NEXT:    %[[MSG:.*]] = llvm.mlir.addressof @lamina_error_message_0 : !llvm.ptr
// CHECK-NEXT:    %[[MSGINT:.*]] = llvm.ptrtoint %[[MSG]] : !llvm.ptr to i64
// CHECK-NEXT:    %[[FLAG:.*]] = llvm.mlir.addressof @lamina_error : !llvm.ptr
// CHECK-NEXT:    llvm.store %[[MSGINT]], %[[FLAG]] : i64, !llvm.ptr
// CHECK-NEXT:    llvm.return
// CHECK-NEXT:  ^[[OK]]:
// The memcpy's pointers go through ptr -> ptr bitcasts (a constant global's
// address would otherwise fix the intrinsic's argument types to its array type).
// CHECK-NEXT:    %[[TO:.*]] = llvm.bitcast %[[G]] : !llvm.ptr to !llvm.ptr
// CHECK-NEXT:    %[[FROM:.*]] = llvm.bitcast %[[A]] : !llvm.ptr to !llvm.ptr
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mlir.constant(40) : i64
// CHECK-NEXT:    %[[VOL:.*]] = llvm.mlir.constant(false) : i1
// CHECK-NEXT:    llvm.call_intrinsic "llvm.memcpy.p0.p0.i64"(%[[TO]], %[[FROM]], %[[BYTES]], %[[VOL]]) : (!llvm.ptr, !llvm.ptr, i64, i1) -> ()
// CHECK-NEXT:    llvm.call @__lamina_device_free(%[[G]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return

// -----

// A buffer on cpu:1 comes from slot 1; a copy between two devices goes through
// the device runtime, which counts the bytes copied to `dst`.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @move(%a: memref<10xf32> {device = #lamina.device<"cpu", 0>}) {
    %g = loop.alloc {device = #lamina.device<"cpu", 1>} : memref<10xf32>
    loop.copy %a, %g {src = #lamina.device<"cpu", 0>, dst = #lamina.device<"cpu", 1>} : memref<10xf32> to memref<10xf32>
    loop.free %g : memref<10xf32>
    loop.return
  }
}
// CHECK-LABEL: llvm.func @move(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr
// CHECK-NEXT:    %[[SLOT:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[SIZE:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[G:.*]] = llvm.call @__lamina_device_alloc(%[[SLOT]], %[[SIZE]])
// The device allocator returns NULL when it fails: checked as for any allocation.
// CHECK-NEXT:    llvm.ptrtoint %[[G]]
// CHECK:         %[[DST:.*]] = llvm.mlir.constant(1) : i64
// CHECK-NEXT:    %[[SRC:.*]] = llvm.mlir.constant(0) : i64
// CHECK-NEXT:    %[[BYTES:.*]] = llvm.mlir.constant(40) : i64
// CHECK-NEXT:    llvm.call @__lamina_device_copy(%[[DST]], %[[SRC]], %[[G]], %[[A]], %[[BYTES]]) : (i64, i64, !llvm.ptr, !llvm.ptr, i64) -> ()
// CHECK-NEXT:    llvm.call @__lamina_device_free(%[[G]])

// -----

// Scalar integer arithmetic and conversions; fptosi truncates toward zero
// through the saturating intrinsic (xDSL's llvm dialect has no fptosi op),
// and NaN/inf/out-of-range inputs give NumPy's x86 result, INT_MIN.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @ints(%a: i32, %b: i32, %f: f32, %n: index) -> i32 {
    %s = arith.addi %a, %b : i32
    %d = arith.divsi %s, %b : i32
    %r = arith.remsi %d, %a : i32
    %fl = arith.floordivsi %r, %b : i32
    %lt = arith.cmpi slt, %fl, %a : i32
    %m = arith.select %lt, %fl, %a : i32
    %t = arith.fptosi %f : f32 to i32
    %ni = arith.index_cast %n : index to i32
    %x = arith.muli %m, %t : i32
    %y = arith.subi %x, %ni : i32
    %mx = arith.maxsi %y, %a : i32
    loop.return %mx : i32
  }
}
// CHECK-LABEL: llvm.func @ints(
// CHECK-SAME:      %[[A:[^:]*]]: i32, %[[B:[^:]*]]: i32, %[[F:[^:]*]]: f32, %[[N:[^:]*]]: i64) -> i32
// CHECK-NEXT:    %[[S:.*]] = llvm.add %[[A]], %[[B]] : i32
// CHECK-NEXT:    %[[D:.*]] = llvm.sdiv %[[S]], %[[B]] : i32
// CHECK-NEXT:    %[[R:.*]] = llvm.srem %[[D]], %[[A]] : i32
// CHECK-NEXT:    %[[Q:.*]] = llvm.sdiv %[[R]], %[[B]] : i32
// CHECK-NEXT:    %[[M:.*]] = llvm.srem %[[R]], %[[B]] : i32
// CHECK:         %[[ADJ:.*]] = llvm.zext %{{.*}} : i1 to i32
// CHECK-NEXT:    %[[FL:.*]] = llvm.sub %[[Q]], %[[ADJ]] : i32
// CHECK-NEXT:    %[[LT:.*]] = llvm.icmp "slt" %[[FL]], %[[A]] : i32
// CHECK-NEXT:    %[[SEL:.*]] = llvm.select %[[LT]], %[[FL]], %[[A]] : i1, i32
// CHECK-NEXT:    %[[SAT:.*]] = llvm.call_intrinsic "llvm.fptosi.sat.i32.f32"(%[[F]]) : (f32) -> i32
// CHECK-NEXT:    %[[LO:.*]] = llvm.mlir.constant(-2.14748365e+09 : f32) : f32
// CHECK-NEXT:    %[[GE:.*]] = llvm.fcmp "oge" %[[F]], %[[LO]] : f32
// CHECK-NEXT:    %[[HI:.*]] = llvm.mlir.constant(2.14748365e+09 : f32) : f32
// CHECK-NEXT:    %[[LT2:.*]] = llvm.fcmp "olt" %[[F]], %[[HI]] : f32
// CHECK-NEXT:    %[[OK:.*]] = llvm.and %[[GE]], %[[LT2]] : i1
// CHECK-NEXT:    %[[MIN:.*]] = llvm.mlir.constant(-2147483648 : i32) : i32
// CHECK-NEXT:    %[[T:.*]] = llvm.select %[[OK]], %[[SAT]], %[[MIN]] : i1, i32
// CHECK-NEXT:    %[[NI:.*]] = llvm.trunc %[[N]] : i64 to i32
// CHECK-NEXT:    %[[X:.*]] = llvm.mul %[[SEL]], %[[T]] : i32
// CHECK-NEXT:    %[[Y:.*]] = llvm.sub %[[X]], %[[NI]] : i32
// CHECK-NEXT:    %[[MX:.*]] = llvm.call_intrinsic "llvm.smax.i32"(%[[Y]], %[[A]]) : (i32, i32) -> i32
// CHECK-NEXT:    llvm.return %[[MX]] : i32

// -----

// Float conversions and NaN-propagating max (NumPy's maximum), as selects
// (lower-to-llvm-clamps.mlir).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @floats(%a: f32, %b: f32, %k: i64) -> f64 {
    %mx = arith.maximumf %a, %b : f32
    %q = arith.divf %mx, %b : f32
    %e = arith.extf %q : f32 to f64
    %kf = arith.sitofp %k : i64 to f64
    %s = arith.subf %e, %kf : f64
    loop.return %s : f64
  }
}
// CHECK-LABEL: llvm.func @floats(
// CHECK-SAME:      %[[A:[^:]*]]: f32, %[[B:[^:]*]]: f32, %[[K:[^:]*]]: i64) -> f64
// CHECK-NEXT:    %[[WINS:.*]] = llvm.fcmp "ogt" %[[B]], %[[A]] : f32
// CHECK-NEXT:    %[[BEST:.*]] = llvm.select %[[WINS]], %[[B]], %[[A]] : i1, f32
// CHECK-NEXT:    %[[NAN:.*]] = llvm.fcmp "uno" %[[B]], %[[B]] : f32
// CHECK-NEXT:    %[[MX:.*]] = llvm.select %[[NAN]], %[[B]], %[[BEST]] : i1, f32
// CHECK-NEXT:    %[[Q:.*]] = llvm.fdiv %[[MX]], %[[B]] : f32
// CHECK-NEXT:    %[[E:.*]] = llvm.fpext %[[Q]] : f32 to f64
// CHECK-NEXT:    %[[KF:.*]] = llvm.sitofp %[[K]] : i64 to f64
// CHECK-NEXT:    %[[S:.*]] = llvm.fsub %[[E]], %[[KF]] {fastmathFlags = #llvm.fastmath<contract>} : f64
// CHECK-NEXT:    llvm.return %[[S]] : f64

// -----

// math ops: LLVM intrinsics by their type-suffixed names (so f32 and f64
// uses can share a module), libm calls (declared once) where LLVM has no
// intrinsic, rsqrt as 1/sqrt.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @math(%x: f32, %y: f32) -> f32 {
    %e = math.exp %x : f32
    %l = math.log %e : f32
    %q = math.sqrt %l : f32
    %t = math.tanh %q : f32
    %t2 = math.tanh %t : f32
    %er = math.erf %t2 : f32
    %rs = math.rsqrt %er : f32
    %ab = math.absf %rs : f32
    %p = math.powf %ab, %y : f32
    %f = math.fma %p, %x, %y : f32
    loop.return %f : f32
  }
  loop.func @math64(%z: f64) -> f64 {
    %e = math.erf %z : f64
    %t = math.tanh %e : f64
    loop.return %t : f64
  }
}
// CHECK-DAG:   llvm.func @tanhf(f32) -> f32
// CHECK-DAG:   llvm.func @erff(f32) -> f32
// CHECK-DAG:   llvm.func @tanh(f64) -> f64
// CHECK-DAG:   llvm.func @erf(f64) -> f64
// CHECK-LABEL: llvm.func @math(
// CHECK-SAME:      %[[X:[^:]*]]: f32, %[[Y:[^:]*]]: f32) -> f32
// CHECK-NEXT:    %[[E:.*]] = llvm.call_intrinsic "llvm.exp.f32"(%[[X]]) : (f32) -> f32
// CHECK-NEXT:    %[[L:.*]] = llvm.call_intrinsic "llvm.log.f32"(%[[E]]) : (f32) -> f32
// CHECK-NEXT:    %[[Q:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[L]]) : (f32) -> f32
// CHECK-NEXT:    %[[T:.*]] = llvm.call @tanhf(%[[Q]]) : (f32) -> f32
// CHECK-NEXT:    %[[T2:.*]] = llvm.call @tanhf(%[[T]]) : (f32) -> f32
// CHECK-NEXT:    %[[ER:.*]] = llvm.call @erff(%[[T2]]) : (f32) -> f32
// CHECK-NEXT:    %[[SQ:.*]] = llvm.call_intrinsic "llvm.sqrt.f32"(%[[ER]]) : (f32) -> f32
// CHECK-NEXT:    %[[ONE:.*]] = llvm.mlir.constant(1.000000e+00 : f32) : f32
// CHECK-NEXT:    %[[RS:.*]] = llvm.fdiv %[[ONE]], %[[SQ]] : f32
// CHECK-NEXT:    %[[AB:.*]] = llvm.call_intrinsic "llvm.fabs.f32"(%[[RS]]) : (f32) -> f32
// CHECK-NEXT:    %[[P:.*]] = llvm.call_intrinsic "llvm.pow.f32"(%[[AB]], %[[Y]]) : (f32, f32) -> f32
// CHECK-NEXT:    %[[F:.*]] = llvm.intr.fma(%[[P]], %[[X]], %[[Y]]) : (f32, f32, f32) -> f32
// CHECK-NEXT:    llvm.return %[[F]] : f32
// CHECK-LABEL: llvm.func @math64(
// CHECK-SAME:      %[[Z:[^:]*]]: f64) -> f64
// CHECK-NEXT:    %[[E64:.*]] = llvm.call @erf(%[[Z]]) : (f64) -> f64
// CHECK-NEXT:    %[[T64:.*]] = llvm.call @tanh(%[[E64]]) : (f64) -> f64
// CHECK-NEXT:    llvm.return %[[T64]] : f64

// -----

// Calls: a loop.func of the module keeps its name; an external symbol is
// declared. undef and assume have direct llvm counterparts.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func private @ext_kernel(memref<4xf32>, i64)
  loop.func @kernel(%a: memref<4xf32>) {
    %c0 = arith.constant 0 : index
    %u = loop.undef : f32
    loop.store %u, %a[%c0] : memref<4xf32>
    loop.return
  }
  loop.func @host(%a: memref<4xf32>, %n: i64) {
    %c = arith.constant 0 : i64
    %ok = arith.cmpi sge, %n, %c : i64
    loop.assume %ok
    loop.call @kernel(%a) : (memref<4xf32>) -> ()
    loop.call @ext_kernel(%a, %n) : (memref<4xf32>, i64) -> ()
    loop.call @undeclared(%a) : (memref<4xf32>) -> ()
    loop.return
  }
}
// CHECK-DAG:   llvm.func @undeclared(!llvm.ptr)
// CHECK-DAG:   llvm.func @ext_kernel(!llvm.ptr, i64)
// CHECK-LABEL: llvm.func @kernel(
// CHECK:         %[[U:.*]] = llvm.mlir.undef : f32
// CHECK:         llvm.store %[[U]]
// CHECK-LABEL: llvm.func @host(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr {llvm.noalias, lamina.buffer = memref<4xf32>}, %[[N:[^:]*]]: i64)
// CHECK:         %[[OK:.*]] = llvm.icmp "sge" %[[N]], %{{.*}} : i64
// CHECK-NEXT:    llvm.call_intrinsic "llvm.assume"(%[[OK]]) : (i1) -> ()
// CHECK-NEXT:    llvm.call @kernel(%[[A]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.call @ext_kernel(%[[A]], %[[N]]) : (!llvm.ptr, i64) -> ()
// CHECK-NEXT:    llvm.call @undeclared(%[[A]]) : (!llvm.ptr) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-NOT:     builtin.unrealized_conversion_cast

// -----

// A parallel loop is outlined: the caller packs its bounds and captured values
// into i64 slots and calls GOMP_parallel with a trampoline, in which every
// thread of the team runs chunks [lo, hi) of the outlined serial loop as long
// as libgomp's dynamic schedule hands it one. The nested parallel loop is
// collapsed with it (64 x 16 iterations; see the next case).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @scale(%a: memref<64x16xf32>, %o: memref<64x16xf32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c16 = arith.constant 16 : index
    %c64 = arith.constant 64 : index
    loop.for %i = %c0 to %c64 step %c1 kind(parallel) {
      loop.for %j = %c0 to %c16 step %c1 kind(parallel) {
        %x = loop.load %a[%i, %j] : memref<64x16xf32>
        %y = arith.mulf %x, %s : f32
        loop.store %y, %o[%i, %j] : memref<64x16xf32>
      }
    }
    loop.return
  }
}
// CHECK-DAG:   llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-DAG:   llvm.func @omp_get_num_threads() -> i32
// CHECK-DAG:   llvm.func @GOMP_loop_dynamic_start(i64, i64, i64, i64, !llvm.ptr, !llvm.ptr) -> i8
// CHECK-DAG:   llvm.func @GOMP_loop_dynamic_next(!llvm.ptr, !llvm.ptr) -> i8
// CHECK-DAG:   llvm.func @GOMP_loop_end_nowait()
// CHECK-LABEL: llvm.func @scale(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr {{.*}}, %[[O:[^:]*]]: !llvm.ptr {{.*}}, %[[S:[^:]*]]: f32)
// CHECK-NEXT:    %[[N:.*]] = llvm.mlir.constant(6) : i64
// CHECK-NEXT:    %[[CTX:.*]] = llvm.alloca %[[N]] x i64 {alignment = 8 : i64} : (i64) -> !llvm.ptr
// CHECK:         %[[AI:.*]] = llvm.ptrtoint %[[A]] : !llvm.ptr to i64
// CHECK:         %[[SB:.*]] = llvm.bitcast %[[S]] : f32 to i32
// CHECK:         %[[FN:.*]] = llvm.mlir.addressof @scale_par0_omp : !llvm.ptr
// CHECK-NEXT:    %[[ZERO:.*]] = llvm.mlir.constant(0 : i32) : i32
// CHECK-NEXT:    llvm.call @GOMP_parallel(%[[FN]], %[[CTX]], %[[ZERO]], %[[ZERO]]) {lamina.iterations = 1024 : i64} : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK-NEXT:    llvm.return
// CHECK-LABEL: llvm.func internal @scale_par0(
// CHECK-SAME:      %{{[^:]*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<64x16xf32>}, %{{[^:]*}}: f32, %{{[^:]*}}: !llvm.ptr {llvm.noalias, lamina.buffer = memref<64x16xf32>}, %[[LO:[^:]*]]: i64, %[[HI:[^:]*]]: i64, %{{[^:]*}}: i64)
// CHECK:         %[[QLO:.*]] = llvm.udiv %[[LO]], %{{.*}} : i64
// CHECK:         llvm.br ^[[QHEAD:.*]](%[[QLO]] : i64)
// CHECK:         %[[STOP:.*]] = llvm.call_intrinsic "llvm.smin.i64"(%[[HI]], %{{.*}})
// CHECK-NEXT:    llvm.br ^[[HEAD:.*]](%{{.*}} : i64)
// CHECK-NEXT:  ^[[HEAD]](%[[I:.*]]: i64):
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[I]], %[[STOP]] : i64
// CHECK-NOT:     GOMP_parallel
// CHECK-LABEL: llvm.func internal @scale_par0_omp(
// CHECK:         llvm.call @omp_get_num_threads() : () -> i32
// CHECK:         %[[FIRST:.*]] = llvm.getelementptr %[[BOUNDS:.*]][0] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK-NEXT:    %[[LAST:.*]] = llvm.getelementptr %[[BOUNDS]][1] : (!llvm.ptr) -> !llvm.ptr, i64
// CHECK:         %[[GOT:.*]] = llvm.call @GOMP_loop_dynamic_start(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[FIRST]], %[[LAST]])
// CHECK:         llvm.cond_br %{{.*}}, ^[[CHUNK:.*]], ^[[DONE:.*]]
// CHECK-NEXT:  ^[[CHUNK]]:
// CHECK:         llvm.call @scale_par0(
// CHECK-NEXT:    %[[MORE:.*]] = llvm.call @GOMP_loop_dynamic_next(%[[FIRST]], %[[LAST]])
// CHECK:         llvm.cond_br %{{.*}}, ^[[CHUNK]], ^[[DONE]]
// CHECK-NEXT:  ^[[DONE]]:
// CHECK-NEXT:    llvm.call @GOMP_loop_end_nowait() : () -> ()
// CHECK-NEXT:    llvm.return

// -----

// The chunks of a parallel loop of a constant trip count are balanced for the
// module's cores: 36 iterations (a depthwise convolution's channel blocks) in
// the default chunks of ceil(36 / (2 * 4)) = 5 split 20/16 on two threads, in
// chunks of 3 they split 18/18 (`balanced_chunk`, backends/llvm/parallel.py).
// The trampoline takes 3 when the team has that many threads, else the
// default; 64 iterations split evenly by default and keep it (no select).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>, lamina.targets = {cpu = #lamina.target<"cpu", {cores = 2 : i64}>}} {
  loop.func @blocks(%a: memref<36xf32>, %o: memref<36xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c36 = arith.constant 36 : index
    loop.for %i = %c0 to %c36 step %c1 kind(parallel) {
      %x = loop.load %a[%i] : memref<36xf32>
      loop.store %x, %o[%i] : memref<36xf32>
    }
    loop.return
  }
  loop.func @even(%a: memref<64xf32>, %o: memref<64xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c64 = arith.constant 64 : index
    loop.for %i = %c0 to %c64 step %c1 kind(parallel) {
      %x = loop.load %a[%i] : memref<64xf32>
      loop.store %x, %o[%i] : memref<64xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func internal @blocks_par0_omp(
// CHECK:         %[[T:.*]] = llvm.call @omp_get_num_threads() : () -> i32
// CHECK:         %[[DEFAULT:.*]] = llvm.call_intrinsic "llvm.smax.i64"
// CHECK-NEXT:    %[[TWO:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[SAME:.*]] = llvm.icmp "eq" %{{.*}}, %[[TWO]] : i64
// CHECK-NEXT:    %[[THREE:.*]] = llvm.mlir.constant(3) : i64
// CHECK-NEXT:    %[[CHUNK:.*]] = llvm.select %[[SAME]], %[[THREE]], %[[DEFAULT]] : i1, i64
// CHECK:         llvm.call @GOMP_loop_dynamic_start(%{{.*}}, %{{.*}}, %{{.*}}, %[[CHUNK]], %{{.*}}, %{{.*}})
// CHECK-LABEL: llvm.func internal @even_par0_omp(
// CHECK-NOT:     llvm.select
// CHECK:         llvm.call @GOMP_loop_dynamic_start(

// -----

// A parallel loop holding one parallel loop of constant bounds (what
// `schedule` makes of a convolution's 6 output-channel blocks over its rows)
// is collapsed with it: the threads share the 6 x 28 (block, row) pairs. A
// chunk [lo, hi) of flat indices runs as a loop over the blocks it touches
// (%q, from lo / 28 to ceil(hi / 28)) around a loop over that block's flat
// indices, so that the block stays a loop variable (LLVM relates `q` and
// `q + 1`; from a division of the flat index it did not, docs/performance.md). The vectorized loop inside keeps its kind; a parallel loop
// holding a serial loop (@kept) or a vectorized one (@two) is not collapsed.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @blocks(%o: memref<6x28x16xf32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %c56 = arith.constant 56 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %r2 = %c0 to %c56 step %c2 kind(parallel) {
        %r = arith.divui %r2, %c2 : index
        loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %s, %o[%b, %r, %l] : memref<6x28x16xf32>
        }
      }
    }
    loop.return
  }
  loop.func @kept(%o: memref<6x28x16xf32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    %c28 = arith.constant 28 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %r = %c0 to %c28 step %c1 {
        loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
          loop.store %s, %o[%b, %r, %l] : memref<6x28x16xf32>
        }
      }
    }
    loop.return
  }
  loop.func @two(%o: memref<6x16xf32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    loop.for %b = %c0 to %c6 step %c1 kind(parallel) {
      loop.for %l = %c0 to %c16 step %c1 kind(vectorized) {
        loop.store %s, %o[%b, %l] : memref<6x16xf32>
      }
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @blocks(
// CHECK:         llvm.call @GOMP_parallel(%{{.*}}) {lamina.iterations = 168 : i64}
// CHECK-LABEL: llvm.func @kept(
// CHECK:         llvm.call @GOMP_parallel(%{{.*}}) {lamina.iterations = 6 : i64}
// CHECK-LABEL: llvm.func @two(
// CHECK:         llvm.call @GOMP_parallel(%{{.*}}) {lamina.iterations = 6 : i64}
// CHECK-LABEL: llvm.func internal @blocks_par0(
// CHECK-SAME:      %[[LO:[^:]*]]: i64, %[[HI:[^:]*]]: i64, %{{[^:]*}}: i64)
// CHECK:         %[[W:.*]] = llvm.mlir.constant(28) : i64
// CHECK-NEXT:    %[[W1:.*]] = llvm.mlir.constant(27) : i64
// CHECK-NEXT:    %[[QLO:.*]] = llvm.udiv %[[LO]], %[[W]] : i64
// CHECK-NEXT:    %[[ROUND:.*]] = llvm.add %[[HI]], %[[W1]] : i64
// CHECK-NEXT:    %[[QHI:.*]] = llvm.udiv %[[ROUND]], %[[W]] : i64
// CHECK-NEXT:    llvm.br ^[[QHEAD:.*]](%[[QLO]] : i64)
// CHECK-NEXT:  ^[[QHEAD]](%[[Q:.*]]: i64):
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[Q]], %[[QHI]] : i64
// CHECK:         %[[BASE:.*]] = llvm.mul %[[Q]], %[[W]] : i64
// CHECK-NEXT:    %[[TOP:.*]] = llvm.add %[[BASE]], %[[W]] : i64
// CHECK-NEXT:    %[[START:.*]] = llvm.call_intrinsic "llvm.smax.i64"(%[[LO]], %[[BASE]])
// CHECK-NEXT:    %[[STOP:.*]] = llvm.call_intrinsic "llvm.smin.i64"(%[[HI]], %[[TOP]])
// CHECK-NEXT:    llvm.br ^[[FHEAD:.*]](%[[START]] : i64)
// CHECK-NEXT:  ^[[FHEAD]](%[[FLAT:.*]]: i64):
// CHECK-NEXT:    %{{.*}} = llvm.icmp "slt" %[[FLAT]], %[[STOP]] : i64
// CHECK-NOT:     llvm.udiv %[[FLAT]]
// CHECK-NOT:     llvm.urem
// CHECK:         %[[REM:.*]] = llvm.sub %[[FLAT]], %[[BASE]] : i64
// CHECK:         %{{.*}} = llvm.mul %[[Q]], %{{.*}} : i64
// CHECK:         %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %{{.*}} = llvm.mul %[[REM]], %[[STEP]] : i64
// CHECK:         llvm.br ^{{.*}} {lamina.loop_kind = "vectorized"}
// CHECK-LABEL: llvm.func internal @two_par0(
// CHECK-NOT:     llvm.udiv
// CHECK:         llvm.return

// -----

// Two channel blocks per step (`jam_channel_blocks`: blocks %b and %b + 1 in
// a loop of step 2) collapsed with 32 rows, a power of two. The pair's block
// is `q * 2` for a loop variable %q of the chunk, and the second block that
// plus 1: derived from the flat index (`(flat / 32) * 2`), LLVM folded them
// to `(flat >> 4) & -2` and `(flat >> 4) | 1`, could not tell the two
// blocks' rows apart, and kept a jammed convolution's accumulators in memory.
// The second block's address is the first's plus a constant (the `+ 1` of
// its index times the block's stride in bytes, 1024), so the two never need
// telling apart.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @pair(%o: memref<4x32x8xf32>, %s: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    loop.for %bo = %c0 to %c4 step %c2 kind(parallel) {
      %b0 = arith.addi %bo, %c0 : index
      %b1 = arith.addi %bo, %c1 : index
      loop.for %r = %c0 to %c32 step %c1 kind(parallel) {
        loop.for %l = %c0 to %c8 step %c1 kind(vectorized) {
          loop.store %s, %o[%b0, %r, %l] : memref<4x32x8xf32>
          loop.store %s, %o[%b1, %r, %l] : memref<4x32x8xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @pair(
// CHECK:         llvm.call @GOMP_parallel(%{{.*}}) {lamina.iterations = 64 : i64}
// CHECK-LABEL: llvm.func internal @pair_par0(
// CHECK:         %[[W:.*]] = llvm.mlir.constant(32) : i64
// CHECK:         ^{{.*}}(%[[Q:.*]]: i64):
// CHECK:         ^{{.*}}(%[[FLAT:.*]]: i64):
// CHECK-NOT:     llvm.udiv
// CHECK:         %[[STEP:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[SCALED:.*]] = llvm.mul %[[Q]], %[[STEP]] : i64
// CHECK-NOT:     llvm.urem
// CHECK:         %[[BLOCK:.*]] = llvm.mlir.constant(1024) : i64
// CHECK-NEXT:    %{{.*}} = llvm.mul %[[SCALED]], %[[BLOCK]] overflow<nsw> : i64
// CHECK:         %{{.*}} = llvm.mul %l, %{{.*}} overflow<nsw> : i64
// CHECK-NEXT:    %[[ADDR0:.*]] = llvm.getelementptr inbounds %{{.*}}[%{{.*}}] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %{{.*}}, %[[ADDR0]]
// CHECK-NEXT:    %[[NEXT:.*]] = llvm.mlir.constant(1024) : i64
// CHECK-NEXT:    %[[ADDR1:.*]] = llvm.getelementptr inbounds %[[ADDR0]][%[[NEXT]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %{{.*}}, %[[ADDR1]]

// -----

// vectorized / unrolled loops mark their back edge; codegen turns the mark
// into !llvm.loop metadata (the llvm dialect has no loop metadata). A
// vectorized loop whose trip count is not known to be whole vectors (42, or
// a bound only known at run time) is marked `vectorized-tail`, one shorter
// than a whole vector (7) `vectorized-short`.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @hinted(%a: memref<64xf32>, %n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %c7 = arith.constant 7 : index
    %c42 = arith.constant 42 : index
    %c64 = arith.constant 64 : index
    %zero = arith.constant 0.0 : f32
    %r = loop.for %i = %c0 to %c64 step %c1 kind(vectorized) iter_args(%acc = %zero) -> (f32) {
      %x = loop.load %a[%i] : memref<64xf32>
      %s = arith.addf %acc, %x : f32
      loop.yield %s : f32
    }
    loop.for %j = %c0 to %c4 step %c1 kind(unrolled) {
      loop.store %r, %a[%j] : memref<64xf32>
    }
    loop.for %k = %c0 to %c42 step %c1 kind(vectorized) {
      loop.store %r, %a[%k] : memref<64xf32>
    }
    loop.for %m = %c0 to %n step %c1 kind(vectorized) {
      loop.store %r, %a[%m] : memref<64xf32>
    }
    loop.for %s = %c0 to %c7 step %c1 kind(vectorized) {
      loop.store %r, %a[%s] : memref<64xf32>
    }
    loop.return %r : f32
  }
}
// CHECK-LABEL: llvm.func @hinted(
// CHECK:         llvm.br ^{{.*}}(%{{.*}}, %{{.*}} : i64, f32) {lamina.loop_kind = "vectorized"}
// CHECK:         llvm.br ^{{.*}}(%{{.*}} : i64) {lamina.loop_kind = "unrolled"}
// CHECK:         llvm.br ^{{.*}}(%{{.*}} : i64) {lamina.loop_kind = "vectorized-tail"}
// CHECK:         llvm.br ^{{.*}}(%{{.*}} : i64) {lamina.loop_kind = "vectorized-tail"}
// CHECK:         llvm.br ^{{.*}}(%{{.*}} : i64) {lamina.loop_kind = "vectorized-short"}

// -----

// A select between loads with a store between them keeps its loads: one load
// moved to the select would read the stored value instead of the old one.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @select_after_store(%a: memref<4xf32>, %b: memref<4xf32>, %c: i1) {
    %c0 = arith.constant 0 : index
    %x = arith.constant 1.0 : f32
    %va = loop.load %a[%c0] : memref<4xf32>
    %vb = loop.load %b[%c0] : memref<4xf32>
    loop.store %x, %a[%c0] : memref<4xf32>
    %v = arith.select %c, %va, %vb : f32
    loop.store %v, %b[%c0] : memref<4xf32>
    loop.return
  }
}
// CHECK-LABEL: llvm.func @select_after_store(
// CHECK:         %[[VA:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         %[[VB:.*]] = llvm.load %{{.*}} {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK:         llvm.store
// CHECK:         %{{.*}} = llvm.select %{{.*}}, %[[VA]], %[[VB]] : i1, f32

// -----

// A concatenation's select chain (`build_concat`: each input read at a
// clamped index, the value selected by the axis index) selects addresses,
// then loads once: each input's base (its clamped block index, which differs
// between the inputs) is selected by the same conditions, and the terms all
// inputs share (`%j`, `%k`) are chained onto the selected base. Constant indices
// (`%y[0, ...]`) fold into the constant offset: no multiply by zero.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @concat2(%a: memref<4x3x16xf32>, %b: memref<2x3x16xf32>, %y: memref<1x6x3x16xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c6 = arith.constant 6 : index
    %c16 = arith.constant 16 : index
    loop.for %i = %c0 to %c6 step %c1 {
      loop.for %j = %c0 to %c3 step %c1 {
        loop.for %k = %c0 to %c16 step %c1 {
          %m4 = arith.constant -4 : index
          %z = arith.constant 0 : index
          %ib = arith.addi %i, %m4 : index
          %n = arith.cmpi slt, %ib, %z : index
          %lb = arith.select %n, %z, %ib : index
          %vb = loop.load %b[%lb, %j, %k] : memref<2x3x16xf32>
          %three = arith.constant 3 : index
          %g = arith.cmpi sgt, %i, %three : index
          %la = arith.select %g, %three, %i : index
          %va = loop.load %a[%la, %j, %k] : memref<4x3x16xf32>
          %four = arith.constant 4 : index
          %s = arith.cmpi slt, %i, %four : index
          %v = arith.select %s, %va, %vb : f32
          loop.store %v, %y[%z, %i, %j, %k] : memref<1x6x3x16xf32>
        }
      }
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @concat2(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr {{.*}}, %[[B:[^:]*]]: !llvm.ptr {{.*}}, %[[Y:[^:]*]]: !llvm.ptr
// CHECK:         %[[LB:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i64
// CHECK:         %[[LA:.*]] = llvm.select %{{.*}}, %{{.*}}, %{{.*}} : i1, i64
// CHECK:         %[[S:.*]] = llvm.icmp "slt" %{{.*}}, %{{.*}} : i64
// CHECK-NEXT:    %[[SA:.*]] = llvm.mlir.constant(192) : i64
// CHECK-NEXT:    %[[OA:.*]] = llvm.mul %[[LA]], %[[SA]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PA:.*]] = llvm.getelementptr inbounds %[[A]][%[[OA]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[SB:.*]] = llvm.mlir.constant(192) : i64
// CHECK-NEXT:    %[[OB:.*]] = llvm.mul %[[LB]], %[[SB]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PB:.*]] = llvm.getelementptr inbounds %[[B]][%[[OB]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[P:.*]] = llvm.select %[[S]], %[[PA]], %[[PB]] : i1, !llvm.ptr
// CHECK-NEXT:    %[[SJ:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[OJ:.*]] = llvm.mul %[[J:.*]], %[[SJ]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PJ:.*]] = llvm.getelementptr inbounds %[[P]][%[[OJ]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[SK:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[OK:.*]] = llvm.mul %[[K:.*]], %[[SK]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PE:.*]] = llvm.getelementptr inbounds %[[PJ]][%[[OK]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[PE]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NOT:     llvm.load
// CHECK-NEXT:    %[[SI:.*]] = llvm.mlir.constant(192) : i64
// CHECK-NEXT:    %[[OI:.*]] = llvm.mul %{{.*}}, %[[SI]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PI:.*]] = llvm.getelementptr inbounds %[[Y]][%[[OI]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[SJ2:.*]] = llvm.mlir.constant(64) : i64
// CHECK-NEXT:    %[[OJ2:.*]] = llvm.mul %[[J]], %[[SJ2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PIJ:.*]] = llvm.getelementptr inbounds %[[PI]][%[[OJ2]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[SK2:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[OK2:.*]] = llvm.mul %[[K]], %[[SK2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PY:.*]] = llvm.getelementptr inbounds %[[PIJ]][%[[OK2]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[V]], %[[PY]] {alignment = 4 : i64} : f32, !llvm.ptr

// -----

// A reshape is the source's pointer: the access through it is one GEP by its
// own row-major index (pixel 9 of a 1 x 12 row of 4 lanes: 9 * 4 + 1 = 37,
// 148 bytes; constant indices are all offset).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @flat_view(%a: memref<1x3x4x4xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c9 = arith.constant 9 : index
    %flat = loop.reshape %a : memref<1x3x4x4xf32> to memref<1x1x12x4xf32>
    %v = loop.load %flat[%c0, %c0, %c9, %c1] : memref<1x1x12x4xf32>
    loop.store %v, %flat[%c0, %c0, %c0, %c0] : memref<1x1x12x4xf32>
    loop.return
  }
}
// CHECK-LABEL: llvm.func @flat_view(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr
// CHECK-NOT:     loop.reshape
// CHECK:         %[[C148:.*]] = llvm.mlir.constant(148) : i64
// CHECK-NEXT:    %[[ADDR:.*]] = llvm.getelementptr inbounds %[[A]][%[[C148]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[ADDR]]
// CHECK-NEXT:    llvm.store %[[V]], %[[A]]

// -----

// The accesses of one block share their address arithmetic: the load of
// another buffer with the same strides reuses the scaled index and the constant
// offset, and the store to the element just loaded reuses its getelementptr
// (LLVM's EarlyCSE removed these repeats; now they are never built).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @shared_address(%a: memref<4x8xf32>, %b: memref<4x8xf32>) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    loop.for %i = %c0 to %c4 step %c1 {
      %x = loop.load %a[%i, %c3] : memref<4x8xf32>
      %y = loop.load %b[%i, %c3] : memref<4x8xf32>
      %s = arith.addf %x, %y : f32
      loop.store %s, %a[%i, %c3] : memref<4x8xf32>
    }
    loop.return
  }
}
// CHECK-LABEL: llvm.func @shared_address(
// CHECK-SAME:      %[[A:[^:]*]]: !llvm.ptr {{.*}}, %[[B:[^:]*]]: !llvm.ptr
// CHECK:       ^{{.*}}(%[[I:.*]]: i64):
// CHECK:         %[[S:.*]] = llvm.mlir.constant(32) : i64
// CHECK-NEXT:    %[[R:.*]] = llvm.mul %[[I]], %[[S]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PA0:.*]] = llvm.getelementptr inbounds %[[A]][%[[R]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[C12:.*]] = llvm.mlir.constant(12) : i64
// CHECK-NEXT:    %[[PA:.*]] = llvm.getelementptr inbounds %[[PA0]][%[[C12]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[PA]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[PB0:.*]] = llvm.getelementptr inbounds %[[B]][%[[R]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[PB:.*]] = llvm.getelementptr inbounds %[[PB0]][%[[C12]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[Y:.*]] = llvm.load %[[PB]] {alignment = 4 : i64} : !llvm.ptr -> f32
// CHECK-NEXT:    %[[SUM:.*]] = llvm.fadd %[[X]], %[[Y]] {{.*}} : f32
// CHECK-NEXT:    llvm.store %[[SUM]], %[[PA]] {alignment = 4 : i64} : f32, !llvm.ptr

// -----

// Sharing stops at the block: the store in the `loop.if` and the store after
// it (a block of its own once the `if` is lowered) compute their address again.
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @per_block(%a: memref<4x8xf32>, %i: index, %v: f32) {
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %x = loop.load %a[%i, %c3] : memref<4x8xf32>
    %in = arith.cmpi slt, %i, %c4 : index
    loop.if %in {
      loop.store %v, %a[%i, %c3] : memref<4x8xf32>
    }
    loop.store %x, %a[%i, %c3] : memref<4x8xf32>
    loop.return
  }
}
// CHECK-LABEL: llvm.func @per_block(
// CHECK:         llvm.mlir.constant(12) : i64
// CHECK-NEXT:    %[[P0:.*]] = llvm.getelementptr inbounds
// CHECK-NEXT:    %[[X:.*]] = llvm.load %[[P0]]
// CHECK:         llvm.cond_br %{{.*}}, ^[[THEN:.*]], ^[[CONT:.*]]
// CHECK-NEXT:  ^[[THEN]]:
// CHECK-NEXT:    llvm.mlir.constant(32) : i64
// CHECK-NEXT:    llvm.mul
// CHECK-NEXT:    llvm.getelementptr inbounds
// CHECK-NEXT:    llvm.mlir.constant(12) : i64
// CHECK-NEXT:    %[[P1:.*]] = llvm.getelementptr inbounds
// CHECK-NEXT:    llvm.store %{{.*}}, %[[P1]]
// CHECK-NEXT:    llvm.br ^[[CONT]]
// CHECK-NEXT:  ^[[CONT]]:
// CHECK-NEXT:    llvm.mlir.constant(32) : i64
// CHECK-NEXT:    llvm.mul
// CHECK-NEXT:    llvm.getelementptr inbounds
// CHECK-NEXT:    llvm.mlir.constant(12) : i64
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds
// CHECK-NEXT:    llvm.store %[[X]], %[[P2]]

// -----

// Address forms: `x[c / 16, c % 16]` of a blocked buffer is the one term
// `c * 4` (a chain of two links would hide from LLVM that it is `c`, and
// the copy would not become a memcpy); `%i - 1` keeps its negative constant
// (`%i * 4 - 4` could start below the buffer, an out-of-bounds link), and
// `%i + 2` puts its constant into the last link; a stack buffer is indexed in
// elements (llvmlite types an alloca's pointer: no byte GEP through it).
builtin.module attributes {lamina.phase = #lamina.phase<lowering>} {
  loop.func @forms(%x: memref<4x16xf32>, %y: memref<64xf32>, %c: index, %i: index) {
    %c16 = arith.constant 16 : index
    %m1 = arith.constant -1 : index
    %c2 = arith.constant 2 : index
    %q = arith.divui %c, %c16 : index
    %r = arith.remui %c, %c16 : index
    %v = loop.load %x[%q, %r] : memref<4x16xf32>
    loop.store %v, %y[%c] : memref<64xf32>
    %im1 = arith.addi %i, %m1 : index
    %w = loop.load %y[%im1] : memref<64xf32>
    %ip2 = arith.addi %i, %c2 : index
    loop.store %w, %y[%ip2] : memref<64xf32>
    %t = loop.alloc {scope = "local"} : memref<8xf32>
    loop.store %w, %t[%ip2] : memref<8xf32>
    loop.return
  }
}
// CHECK-LABEL: llvm.func @forms(
// CHECK-SAME:      %[[X:[^:]*]]: !llvm.ptr {{.*}}, %[[Y:[^:]*]]: !llvm.ptr {{.*}}, %[[C:[^:]*]]: i64, %[[I:[^:]*]]: i64)
// CHECK:         %[[T:.*]] = llvm.alloca %{{.*}} x f32
// CHECK-NOT:     llvm.udiv
// CHECK-NOT:     llvm.urem
// CHECK:         %[[C4:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[OC:.*]] = llvm.mul %[[C]], %[[C4]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PX:.*]] = llvm.getelementptr inbounds %[[X]][%[[OC]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[V:.*]] = llvm.load %[[PX]]
// CHECK-NEXT:    %[[PY:.*]] = llvm.getelementptr inbounds %[[Y]][%[[OC]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[V]], %[[PY]]
// CHECK:         %[[IM1:.*]] = llvm.add %[[I]], %{{.*}} : i64
// CHECK-NEXT:    %[[S1:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[OM1:.*]] = llvm.mul %[[IM1]], %[[S1]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PM1:.*]] = llvm.getelementptr inbounds %[[Y]][%[[OM1]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[W:.*]] = llvm.load %[[PM1]]
// CHECK:         %[[S2:.*]] = llvm.mlir.constant(4) : i64
// CHECK-NEXT:    %[[OI:.*]] = llvm.mul %[[I]], %[[S2]] overflow<nsw> : i64
// CHECK-NEXT:    %[[PI:.*]] = llvm.getelementptr inbounds %[[Y]][%[[OI]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    %[[C8:.*]] = llvm.mlir.constant(8) : i64
// CHECK-NEXT:    %[[P2:.*]] = llvm.getelementptr inbounds %[[PI]][%[[C8]]] : (!llvm.ptr, i64) -> !llvm.ptr, i8
// CHECK-NEXT:    llvm.store %[[W]], %[[P2]]
// CHECK:         %[[PT:.*]] = llvm.getelementptr inbounds %[[T]][%[[I]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    %[[C2:.*]] = llvm.mlir.constant(2) : i64
// CHECK-NEXT:    %[[PT2:.*]] = llvm.getelementptr inbounds %[[PT]][%[[C2]]] : (!llvm.ptr, i64) -> !llvm.ptr, f32
// CHECK-NEXT:    llvm.store %[[W]], %[[PT2]]
