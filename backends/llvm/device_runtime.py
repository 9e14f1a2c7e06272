"""Per-device memory at run time: one allocator and one set of counters per device.

`lower-to-llvm` turns every heap `loop.alloc {device}` into
`__lamina_device_alloc(slot, bytes)`, every `loop.free` into
`__lamina_device_free(ptr)` and a `loop.copy` between two different devices
into `__lamina_device_copy(dst_slot, src_slot, to, from, bytes)`. This module
holds those three functions as LLVM IR (so they are part of every JIT module,
`.o` and `.so` that needs them — no separate library to ship), linked in by
the code generator; runtime/device_stats.py reads their counters back for
the user.

The slot of a device is its index (`cpu:1` → 1): only the `cpu` kind is
compiled today (other kinds are refused at compile time), so the index
identifies the device. Each slot has its own counters — bytes allocated in
total, bytes live now, peak live bytes, bytes copied *to* it — updated with
atomic instructions (kernels may allocate temporaries on several threads).
Each allocation carries a 64-byte header recording its slot, size and
capacity, so a free is accounted to the device that allocated it.

Freed blocks of at least `CACHE_MIN_BYTES` are kept for reuse in a small
lock-free table (`CACHE_SLOTS` entries, claimed and filled with atomic
compare-and-swap) instead of going back to `free`: a model's temporaries
are allocated and freed on every call, and glibc hands large blocks back to
the kernel (mmap/munmap, heap trimming), so each call page-faulted its
temporaries in again — 1,100 faults per call of the transformer encoder,
17 % of its time. A block is reused for a request of at most its capacity
and at least half of it. `__lamina_release_blocks` frees the table
(`Executable.release_memory()`).

`cpu:0` and `cpu:1` share the host's physical memory, but every buffer
belongs to exactly one device's allocator and a copy between them is a real
copy (a `memcpy` into the other device's buffer), counted on the destination.
"""

from __future__ import annotations

import llvmlite.binding as llvm
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from lamina.core.devices import arg_device
from lamina.core.diagnostics import op_error
from lamina.dialects.lamina import DeviceAttr, get_default_device
from lamina.runtime.device_stats import COUNTERS, MAX_DEVICES, RELEASE_SYMBOL, STATS_SYMBOL

ALLOC_SYMBOL = "__lamina_device_alloc"
FREE_SYMBOL = "__lamina_device_free"
COPY_SYMBOL = "__lamina_device_copy"
HEADER_BYTES = 64
CACHE_SLOTS = 32
CACHE_MIN_BYTES = 16384

RUNTIME_IR = f"""
@{STATS_SYMBOL} = linkonce_odr hidden global [{MAX_DEVICES * len(COUNTERS)} x i64] zeroinitializer, align 64

declare ptr @aligned_alloc(i64, i64)
declare void @free(ptr)
declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)

@__lamina_block_cache = linkonce_odr hidden global [{CACHE_SLOTS} x ptr] zeroinitializer, align 64
@__lamina_block_caps = linkonce_odr hidden global [{CACHE_SLOTS} x i64] zeroinitializer, align 64

; A cached block for `size` bytes (NULL: none). The capacities table is a hint read
; before claiming a slot; the claimed block's own header is checked afterwards.
define linkonce_odr hidden ptr @__lamina_cache_take(i64 %size) {{
entry:
  %small = icmp ult i64 %size, {CACHE_MIN_BYTES}
  %limit = shl i64 %size, 1
  br i1 %small, label %miss, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %continue ]
  %capp = getelementptr [{CACHE_SLOTS} x i64], ptr @__lamina_block_caps, i64 0, i64 %i
  %cap = load atomic i64, ptr %capp monotonic, align 8
  %big = icmp uge i64 %cap, %size
  %tight = icmp ule i64 %cap, %limit
  %fits = and i1 %big, %tight
  br i1 %fits, label %try, label %continue
try:
  %slotp = getelementptr [{CACHE_SLOTS} x ptr], ptr @__lamina_block_cache, i64 0, i64 %i
  %p = load atomic ptr, ptr %slotp acquire, align 8
  %empty = icmp eq ptr %p, null
  br i1 %empty, label %continue, label %claim
claim:
  %pair = cmpxchg ptr %slotp, ptr %p, ptr null acq_rel monotonic
  %won = extractvalue {{ ptr, i1 }} %pair, 1
  br i1 %won, label %check, label %continue
check:
  %pcapp = getelementptr i8, ptr %p, i64 16
  %pcap = load i64, ptr %pcapp
  %big2 = icmp uge i64 %pcap, %size
  %tight2 = icmp ule i64 %pcap, %limit
  %ok = and i1 %big2, %tight2
  br i1 %ok, label %hit, label %giveback
giveback:
  call void @__lamina_cache_put(ptr %p)
  br label %continue
hit:
  ret ptr %p
continue:
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, {CACHE_SLOTS}
  br i1 %done, label %miss, label %loop
miss:
  ret ptr null
}}

; Keep a freed block (its raw pointer) in an empty slot, or free it.
define linkonce_odr hidden void @__lamina_cache_put(ptr %raw) {{
entry:
  %capp = getelementptr i8, ptr %raw, i64 16
  %cap = load i64, ptr %capp
  %small = icmp ult i64 %cap, {CACHE_MIN_BYTES}
  br i1 %small, label %release, label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %continue ]
  %slotp = getelementptr [{CACHE_SLOTS} x ptr], ptr @__lamina_block_cache, i64 0, i64 %i
  %pair = cmpxchg ptr %slotp, ptr null, ptr %raw acq_rel monotonic
  %won = extractvalue {{ ptr, i1 }} %pair, 1
  br i1 %won, label %stored, label %continue
stored:
  %hintp = getelementptr [{CACHE_SLOTS} x i64], ptr @__lamina_block_caps, i64 0, i64 %i
  store atomic i64 %cap, ptr %hintp monotonic, align 8
  ret void
continue:
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, {CACHE_SLOTS}
  br i1 %done, label %release, label %loop
release:
  call void @free(ptr %raw)
  ret void
}}

; Free every cached block (between runs, when memory should go back); kept in the
; object by llvm.used so that Executable.release_memory() can call it.
@llvm.used = appending global [1 x ptr] [ptr @{RELEASE_SYMBOL}], section "llvm.metadata"

define linkonce_odr hidden void @{RELEASE_SYMBOL}() {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %slotp = getelementptr [{CACHE_SLOTS} x ptr], ptr @__lamina_block_cache, i64 0, i64 %i
  %p = atomicrmw xchg ptr %slotp, ptr null acq_rel
  call void @free(ptr %p)
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, {CACHE_SLOTS}
  br i1 %done, label %exit, label %loop
exit:
  ret void
}}

; `noalias` as malloc's: the block is no one else's (fresh, or freed back to the
; cache). `noinline` keeps that fact at every call site (inlining drops it):
; with it LLVM keeps a kernel's accumulators in registers even when they live
; in a temporary next to the temporaries it reads (tests/test_codegen.py).
define linkonce_odr hidden noalias ptr @{ALLOC_SYMBOL}(i64 %slot, i64 %size) noinline {{
entry:
  %cached = call ptr @__lamina_cache_take(i64 %size)
  %hit = icmp ne ptr %cached, null
  br i1 %hit, label %ok, label %fresh
fresh:
  %total = add i64 %size, {HEADER_BYTES}
  %new = call ptr @aligned_alloc(i64 {HEADER_BYTES}, i64 %total)
  %failed = icmp eq ptr %new, null
  br i1 %failed, label %oom, label %fill
oom:                                      ; the caller reports it (backends/llvm/errors.py)
  ret ptr null
fill:
  %capp = getelementptr i8, ptr %new, i64 16
  store i64 %size, ptr %capp
  br label %ok
ok:
  %raw = phi ptr [ %cached, %entry ], [ %new, %fill ]
  store i64 %slot, ptr %raw
  %sizep = getelementptr i8, ptr %raw, i64 8
  store i64 %size, ptr %sizep
  %base = mul i64 %slot, {len(COUNTERS)}
  %allocp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %base
  %a = atomicrmw add ptr %allocp, i64 %size monotonic
  %livei = add i64 %base, 1
  %livep = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %livei
  %old = atomicrmw add ptr %livep, i64 %size monotonic
  %now = add i64 %old, %size
  %peaki = add i64 %base, 2
  %peakp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %peaki
  %p = atomicrmw umax ptr %peakp, i64 %now monotonic
  %user = getelementptr i8, ptr %raw, i64 {HEADER_BYTES}
  ret ptr %user
}}

; `nocapture` as free's: the block goes back to the cache, which only a later
; alloc hands out again (as new). `noinline` keeps that fact at every call site.
; With it and the alloc's `noalias`, LLVM knows that a panel packed into a block
; freed in the same loop iteration is no view of the kernel's arguments: a
; matmul whose row blocks compute several column blocks of one packed panel
; keeps its accumulators in registers instead of versioning the loop on runtime
; alias checks (tests/test_small_m_matmul.py).
define linkonce_odr hidden void @{FREE_SYMBOL}(ptr nocapture %user) noinline {{
  %raw = getelementptr i8, ptr %user, i64 -{HEADER_BYTES}
  %slot = load i64, ptr %raw
  %sizep = getelementptr i8, ptr %raw, i64 8
  %size = load i64, ptr %sizep
  %base = mul i64 %slot, {len(COUNTERS)}
  %livei = add i64 %base, 1
  %livep = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %livei
  %old = atomicrmw sub ptr %livep, i64 %size monotonic
  call void @__lamina_cache_put(ptr %raw)
  ret void
}}

define linkonce_odr hidden void @{COPY_SYMBOL}(i64 %dst, i64 %src, ptr %to, ptr %from, i64 %size) {{
  call void @llvm.memcpy.p0.p0.i64(ptr %to, ptr %from, i64 %size, i1 false)
  %base = mul i64 %dst, {len(COUNTERS)}
  %copiedi = add i64 %base, 3
  %copiedp = getelementptr i64, ptr @{STATS_SYMBOL}, i64 %copiedi
  %c = atomicrmw add ptr %copiedp, i64 %size monotonic
  ret void
}}
"""


def device_slot(op: Operation, device: DeviceAttr | None) -> int:
    """The runtime slot of the device an allocation belongs to: its own `device`,
    else the device its kernel learned (`device` of the enclosing function's
    first parameter), else the module's default device."""
    func = op.parent_op()
    while device is None and func is not None:
        if func.name in ("loop.func", "llvm.func") and func.properties.get("arg_attrs"):
            device = arg_device(func, 0)
            break
        func = func.parent_op()
    if device is None:
        module = op.get_toplevel_object()
        device = get_default_device(module) if isinstance(module, ModuleOp) else None
    index = device.index.data if device is not None else 0
    if index >= MAX_DEVICES:
        raise op_error(op, f"device index {index} is out of range (at most {MAX_DEVICES} devices)")
    return index


def link_device_runtime(ref: llvm.ModuleRef) -> None:
    """Link the device runtime into `ref` if its code calls it (before optimization,
    so LLVM can inline the accounting into the host code)."""
    if not _declared(ref):
        return
    runtime = llvm.parse_assembly(RUNTIME_IR)
    runtime.triple = ref.triple
    runtime.data_layout = ref.data_layout
    ref.link_in(runtime)


def _declared(ref: llvm.ModuleRef) -> list[str]:
    names = {f.name for f in ref.functions}
    return [n for n in (ALLOC_SYMBOL, FREE_SYMBOL, COPY_SYMBOL) if n in names]


__all__ = [
    "device_slot",
    "ALLOC_SYMBOL",
    "COPY_SYMBOL",
    "FREE_SYMBOL",
    "MAX_DEVICES",
    "link_device_runtime",
]
