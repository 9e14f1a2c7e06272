"""Kernels lowered once: a kernel seen before skips the Python lowering, not only LLVM.

`kernel_cache` keys a kernel's object code by its LLVM IR, which exists only
after the whole Python pipeline (`lower-te`, `schedule`, `simplify`,
`lower-to-llvm`, the verifier after each) has run on it: most of a cold
compile. This module keys a kernel where it is born, as a `te.func`:

* **The key** (`te_key`) is a SHA-256 of the te.func's printed text (its
  name replaced, so that `@conv_1x64x56x56` and `@conv_1x64x56x56_1` of two
  models match) and of a *context* the driver supplies: the passes still to
  run (with their options), the module's attributes, the toolchain and
  Lamina's source digest (driver/lowering.py). A kernel's lowering depends
  on nothing else: the lowering passes work one function at a time.
* **Recording.** A compile that lowered a kernel in full records, after its
  code generation (`record_split`), what the host needs from it: the kernel
  unit's key and symbol, the host's declaration of its entry, its error
  messages, and whether it can fail or uses OpenMP. Records live in memory
  and in the disk cache's `kernels/` folder beside the object code.
* **Reuse** (`ReuseKernelsPass`, right before `lower-te`). A te.func whose
  record is known and whose object code is found becomes a body-less
  declaration (the output layouts its body would have declared kept, so the
  host plans the same buffers); `lower-te` turns it into a declared
  `loop.func` and the host's calls as usual. The module remembers the
  declarations (`REUSED_ATTR`); `backends/llvm/errors.py` checks calls of
  those that can fail (`FAILING_DECLARATIONS_ATTR`), and `kernel_split`
  puts the recorded unit in the place the kernel would have had, so the
  host unit's text, hence its object code, is what a full lowering gives.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from dataclasses import asdict, dataclass
from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.printer import Printer

from lamina.backends.llvm.errors import FAILING_DECLARATIONS_ATTR, defer_failing_declarations
from lamina.dialects import te
from lamina.dialects.lamina import CONSTRAINT_ATTR_NAME, PHASE_ATTR_NAME
from lamina.passes.lower_te import loop_func_name, symbol_names
from lamina.runtime import cache as disk
from lamina.runtime.env import env_flag

REUSED_ATTR = "lamina.reused_kernels"
"""Module attribute: declared kernel (its loop-function name) → its te key."""

LOWERED_ATTR = "lamina.kernel_keys"
"""Module attribute: kernel lowered in full here (loop-function name) → its te key."""

PENDING_ATTR = "lamina.kernel_base_keys"
"""Module attribute: kernel lowered in full (loop-function name) → its te key before its
tuning record's knobs are known (`KeyRecordsPass` completes it after `apply-records`)."""

SCOPES_ATTR = "lamina.kernel_family_scopes"
"""Module attribute: kernel lowered in full (loop-function name) → its family scope
(`family_scopes`): only kernels of one scope make a family (backends/kernel_families.py)."""

PROFILED_ATTR = "lamina.kernel_profile"
"""Module attribute of a profiling build: kernel (LLVM name) → "regions<TAB>iterations"
(passes/profile_kernels.py writes the lowered ones', `reuse-kernels` the reused ones')."""

REUSE_ENV = "LAMINA_REUSE_KERNELS"
"""Environment variable: `0` lowers every kernel in full (no reuse before lowering)."""

_RECORD_PREFIX = b"lamina kernel record 1\n"


def reuse_enabled() -> bool:
    return env_flag(REUSE_ENV, True)


@dataclass(frozen=True)
class Record:
    """What a host needs from a kernel lowered and compiled by an earlier compile."""

    unit_key: str
    symbol: str
    root: str
    """The kernel's name in the module it was recorded from (its messages name it)."""
    declaration: str
    """The host's `declare` line of the entry (with `symbol`)."""
    messages: tuple[str, ...]
    """Definitions of its error messages (after `= internal constant `), naming `root`."""
    may_fail: bool
    openmp: bool
    runtime: tuple[str, ...] = ()
    """Its `declare` lines of the device runtime (the host defines the runtime)."""
    regions: int = -1
    """Parallel regions per call and the fewest iterations of one, for a profiling
    build's table (passes/profile_kernels.py); -1: recorded from a build that did not
    profile (such a record is never reused by one: their keys differ anyway)."""
    iterations: int = 0
    family: tuple[tuple[str, str], ...] = ()
    """The generic unit (key, symbol) of the kernel's family, whose object is loaded
    with the kernel's (backends/kernel_families.py); () for a kernel of its own."""

    def messages_for(self, root: str) -> tuple[str, ...]:
        """The messages naming `root` instead (`[N x i8] c"kernel @root: ..."`, or
        `kernel @root_par0: ...` for a parallel part of it)."""
        if root == self.root:
            return self.messages
        grow = len(root.encode()) - len(self.root.encode())
        name = re.compile(f"kernel @{re.escape(self.root)}(?=[:_])")
        out = []
        for text in self.messages:
            head, _, rest = text.partition(" x i8] ")
            renamed, count = name.subn(f"kernel @{root}", rest)
            out.append(f"[{int(head.lstrip('[')) + grow * count} x i8] {renamed}")
        return tuple(out)


_records: dict[str, Record] = {}
_lock = threading.Lock()


def clear() -> None:
    """Forget the records of this process (the disk cache keeps its own)."""
    with _lock:
        _records.clear()
        _record_keys.clear()


class _TextPrinter(Printer):
    """xDSL's printer writing each piece with the stream's `write`: its `print_string`
    calls `print(text, end="", file=stream)`, 150,000 times for DenseNet-121's 137
    kernels, before the lowering process is forked. The same text (`printed`)."""

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        if "\n" in text or self.stream is None:
            super().print_string(text, indent=indent)
            return
        self._current_column += len(text)
        self.stream.write(text)


def printed(op: Operation) -> str:
    """`str(op)`, a quarter faster (`_TextPrinter`)."""
    stream = StringIO()
    _TextPrinter(stream=stream).print_op(op)
    return stream.getvalue()


def te_key(func: te.FuncOp, context: str, families: dict[str, str] | None = None) -> str:
    """The kernel's key: its text with its name replaced, and the lowering's context.
    `families`: gets the kernel's te-level family (`kernel_families.te_family`)."""
    name = func.sym_name.data
    text = printed(func).replace(f"@{name}(", "@__lamina_kernel(", 1)
    if families is not None:
        from lamina.backends.kernel_families import te_family

        families[name] = te_family(text)
    return hashlib.sha256(f"{context}\n{text}".encode()).hexdigest()


def with_knobs(key: str, knobs: str) -> str:
    """The te key of a kernel scheduled with tuning-record knobs `knobs` (the printed
    `lamina.knobs` attribute; "": none, the key itself)."""
    if not knobs:
        return key
    return hashlib.sha256(f"{key}\nknobs={knobs}".encode()).hexdigest()


_record_keys: dict[str, str] = {}
"""te key (without knobs) → the kernel's tuning-record key (passes/apply_records.py)."""


def record_key(key: str) -> str | None:
    """The tuning-record key of the kernel of te key `key` (learned when one was lowered)."""
    with _lock:
        found = _record_keys.get(key)
    if found is None and disk.enabled():
        entry = disk.read(_disk_key("record-key\n" + key), folder=disk.kernel_directory())
        code = b"" if entry is None else bytes(entry.object_code)
        if code.startswith(_RECORD_PREFIX):
            found = code[len(_RECORD_PREFIX) :].decode()
            with _lock:
                _record_keys[key] = found
    return found


def learn_record_key(key: str, kernel: str) -> None:
    with _lock:
        if _record_keys.get(key) == kernel:
            return
        _record_keys[key] = kernel
    if disk.enabled():
        data = _RECORD_PREFIX + kernel.encode()
        entry = disk.Entry(data, {"kernel-record-key": key})
        disk.write(_disk_key("record-key\n" + key), entry, folder=disk.kernel_directory())


def _disk_key(key: str) -> str:
    return hashlib.sha256(b"record\n" + key.encode()).hexdigest()


def lookup(key: str) -> Record | None:
    """The record of te key `key` whose object code is at hand (now in memory), or None."""
    from lamina.backends import kernel_cache

    with _lock:
        record = _records.get(key)
    if record is None and disk.enabled():
        entry = disk.read(_disk_key(key), folder=disk.kernel_directory())
        code = b"" if entry is None else bytes(entry.object_code)
        if code.startswith(_RECORD_PREFIX):
            try:
                fields = json.loads(code[len(_RECORD_PREFIX) :])
                fields["messages"] = tuple(fields["messages"])
                fields["runtime"] = tuple(fields.get("runtime", ()))
                fields["family"] = tuple(tuple(n) for n in fields.get("family", ()))
                record = Record(**fields)
            except (ValueError, TypeError, KeyError):
                record = None
    if record is None or not kernel_cache.preload(record.unit_key, record.symbol):
        return None
    if not all(kernel_cache.preload(key, symbol) for key, symbol in record.family):
        return None
    with _lock:
        _records[key] = record
    return record


def store(key: str, record: Record, *, on_disk: bool = True) -> None:
    """Remember `record` in this process and (`on_disk`, the cache on) in the disk cache.
    A lowering process's records are on disk already (it stored them itself): the
    compile's process only remembers them (`parallel_lowering.Delegation.finish`)."""
    with _lock:
        _records[key] = record
    if on_disk and disk.enabled():
        data = _RECORD_PREFIX + json.dumps(asdict(record), sort_keys=True).encode()
        disk.write(
            _disk_key(key), disk.Entry(data, {"kernel-record": key}), folder=disk.kernel_directory()
        )


def known(key: str) -> Record | None:
    """The record of te key `key` in this process, if any."""
    with _lock:
        return _records.get(key)


def declaration(func: te.FuncOp) -> te.FuncOp:
    """`func` without its body; an output a constrained te.compute returns keeps that
    layout in its result attributes (what `lower-te` would write on the buffer)."""
    ret = func.get_return_op()
    res_attrs = list(func.res_attrs.data) if func.res_attrs else None
    if ret is not None:
        for j, value in enumerate(ret.arguments):
            owner = value.owner
            if not isinstance(owner, te.ComputeOp) or owner.constraint is None:
                continue
            if res_attrs is None:
                res_attrs = [DictionaryAttr({})] * len(ret.arguments)
            entry = dict(res_attrs[j].data)
            entry.setdefault(CONSTRAINT_ATTR_NAME, owner.constraint)
            res_attrs[j] = DictionaryAttr(entry)
    return te.FuncOp(
        func.sym_name.data,
        func.function_type,
        None,
        func.sym_visibility,
        arg_attrs=func.arg_attrs,
        res_attrs=ArrayAttr(res_attrs) if res_attrs is not None else None,
    )


@dataclass
class Delegating:
    """The passes a lowering process runs, and the child once forked (shared by the
    `reuse-kernels` and `await-kernels` passes of one compile)."""

    passes: list
    delegation: object = None
    jit: bool = True
    """False: the kernels are built as position-independent code for a library."""


class ReuseKernelsPass(ModulePass):
    """Declare the kernels lowered before (right before `lower-te`); key the others;
    with `parallel`, hand about half of those to a lowering process.

    `records` (path, ignore errors): a tuning-records compile. A kernel's key is
    then its te key with the knobs its record gives it (`with_knobs`): a kernel
    whose record key is known (`record_key`, learned when it was lowered) is
    reused whenever its knobs are the same, whatever the other kernels' records
    say; one whose record key is not known yet is lowered here, and
    `KeyRecordsPass` keys it once `apply-records` has given it its knobs.
    `profile`: a profiling build; only kernels recorded by one are reused (the
    context holds `profile-kernels`), with their parallel regions for its table."""

    name = "reuse-kernels"
    replayable = False  # a driver step, not a registered pass (no reproducer names it)
    context: str  # set in __init__, not dataclass fields (the class is no dataclass)
    parallel: Delegating | None
    records: tuple[str, bool] | None
    profile: bool
    families: dict[str, str]

    def __init__(
        self,
        context: str = "",
        parallel: Delegating | None = None,
        records: tuple[str, bool] | None = None,
        profile: bool = False,
    ):
        # Not dataclass fields: a reproducer's pipeline spec has no place for them.
        object.__setattr__(self, "context", context)
        object.__setattr__(self, "parallel", parallel)
        object.__setattr__(self, "records", records)
        object.__setattr__(self, "profile", profile)
        object.__setattr__(self, "families", {})  # kernel → te-level family (`_delegate`)

    def _keys(self, funcs: list[te.FuncOp], context: str) -> tuple[dict, dict, set]:
        """Each kernel's te key (with its record's knobs), its te key without them, and the
        kernels whose knobs are not known yet (keyed by `KeyRecordsPass`)."""
        base = {f.sym_name.data: te_key(f, context, self.families) for f in funcs}
        if self.records is None:
            return base, base, set()
        from lamina.passes.apply_records import cached_records
        from lamina.target.function_knobs import knobs_attr
        from lamina.target.tuning_records import RecordsError

        try:
            record_set = cached_records(*self.records)
        except (OSError, RecordsError):  # `apply-records` reports it, located
            return base, base, set(base)
        keys, pending = {}, set()
        for name, key in base.items():
            kernel = record_key(key)
            if kernel is None:
                keys[name] = key
                pending.add(name)
                continue
            knobs = record_set.knobs_for(kernel)
            keys[name] = with_knobs(key, str(knobs_attr(knobs)) if knobs else "")
        return keys, base, pending

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        funcs = [  # a public te.func is an entry point of its own: always lowered here
            f for f in op.ops if isinstance(f, te.FuncOp) and not f.is_declaration and _private(f)
        ]
        attributes = {k: str(v) for k, v in op.attributes.items() if k != PHASE_ATTR_NAME}
        context = f"{self.context}\n{sorted(attributes.items())}"
        keys, base, pending = self._keys(funcs, context)
        reused: dict[str, str] = {}
        failing: list[str] = []
        weights: dict[str, int] = {}
        windowed: set[str] = set()
        profiled: dict[str, str] = {}
        for func in funcs:
            name = func.sym_name.data
            record = None if name in pending else lookup(keys[name])
            if record is not None and self.profile and record.regions < 0:
                record = None  # no parallel regions known for the table
            if record is not None:
                op.body.block.insert_op_before(declaration(func), func)
                op.body.block.erase_op(func)
                reused[name] = record.symbol
            elif name not in pending:  # a pending kernel's key is known after lowering
                weights[name] = _weight(func)
                if _has_window(func):
                    windowed.add(name)
        # The loop functions' names, as lower-te will choose them (module order).
        taken = symbol_names(op)
        loop_names: dict[str, str] = {}
        for func in op.ops:
            if isinstance(func, te.FuncOp):
                loop_names[func.sym_name.data] = name = loop_func_name(func.sym_name.data, taken)
                taken.add(name)
        declared = {loop_names[n]: StringAttr(keys[n]) for n in reused}
        lowered = {loop_names[n]: StringAttr(k) for n, k in keys.items() if n not in reused}
        for name in reused:
            record = lookup(keys[name])
            if record is not None and record.may_fail:
                failing.append(loop_names[name])
            if record is not None and self.profile:
                profiled[loop_names[name]] = f"{record.regions}\t{record.iterations}"
        if declared:
            op.attributes[REUSED_ATTR] = DictionaryAttr(declared)
        if failing:
            op.attributes[FAILING_DECLARATIONS_ATTR] = ArrayAttr([StringAttr(n) for n in failing])
        if lowered:
            op.attributes[LOWERED_ATTR] = DictionaryAttr(lowered)
        if self.records is not None or self.profile:  # learn the lowered ones' record keys
            op.attributes[PENDING_ATTR] = DictionaryAttr(
                {loop_names[n]: StringAttr(k) for n, k in base.items() if n not in reused}
            )
        if profiled:
            op.attributes[PROFILED_ATTR] = DictionaryAttr(
                {k: StringAttr(v) for k, v in profiled.items()}
            )
        scopes: dict[str, str] = {}
        from lamina.backends import kernel_families

        if kernel_families.enabled():
            scopes = family_scopes(weights, self.families)
            op.attributes[SCOPES_ATTR] = DictionaryAttr(
                {loop_names[n]: StringAttr(v) for n, v in scopes.items()}
            )
        if self.parallel is not None:
            deal_weights = {  # the deal's only: the families' scopes keep `_weight`
                n: w * WINDOW_WEIGHT if n in windowed else w for n, w in weights.items()
            }
            self._delegate(op, deal_weights, keys, loop_names, scopes)

    def _delegate(
        self,
        op: ModuleOp,
        weights: dict[str, float],
        keys: dict[str, str],
        loop_names: dict,
        scopes: dict[str, str],
    ) -> None:
        """Fork a lowering process for about half of the kernels left; declare them here."""
        from lamina.backends import parallel_lowering

        assert self.parallel is not None
        if len(weights) < parallel_lowering.MIN_KERNELS or not parallel_lowering.enabled():
            return
        names = parallel_lowering.deal(weights, families=scopes)
        delegated = {name: keys[name] for name in names}
        self.parallel.delegation = parallel_lowering.start(
            op, delegated, self.parallel.passes, self.parallel.jit
        )
        for func in [f for f in op.ops if isinstance(f, te.FuncOp) and f.sym_name.data in names]:
            op.body.block.insert_op_before(declaration(func), func)
            op.body.block.erase_op(func)
        declared = module_keys(op, REUSED_ATTR)
        declared |= {loop_names[n]: keys[n] for n in names}
        op.attributes[REUSED_ATTR] = DictionaryAttr({k: StringAttr(v) for k, v in declared.items()})
        lowered = module_keys(op, LOWERED_ATTR)
        op.attributes[LOWERED_ATTR] = DictionaryAttr(
            {k: StringAttr(v) for k, v in lowered.items() if v not in delegated.values()}
        )


class AwaitKernelsPass(ModulePass):
    """Right before `lower-to-llvm`: arrange for the lowering process to be awaited
    inside it, right before its error exits (the first step that needs to know which
    delegated kernels can fail), and mark those that can fail (the host checks after
    calling them). Until then this process lowers its own kernels and the host to
    the llvm dialect while the other one works; the kernels' records come later
    (`reused_records`, when code generation starts)."""

    name = "await-kernels"
    replayable = False  # a driver step, not a registered pass (no reproducer names it)
    parallel: Delegating  # set in __init__, not a dataclass field

    def __init__(self, parallel: Delegating):
        object.__setattr__(self, "parallel", parallel)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.parallel.delegation is not None:
            defer_failing_declarations(op, self._finish)

    def _finish(self, op: ModuleOp) -> None:
        may_fail = self.parallel.delegation.failing()  # type: ignore[attr-defined]
        failing = op.attributes.get(FAILING_DECLARATIONS_ATTR)
        names = [a.data for a in failing.data] if isinstance(failing, ArrayAttr) else []
        for name, key in module_keys(op, REUSED_ATTR).items():
            if may_fail.get(key) and name not in names:
                names.append(name)
        if names:
            op.attributes[FAILING_DECLARATIONS_ATTR] = ArrayAttr([StringAttr(n) for n in names])


class KeyRecordsPass(ModulePass):
    """Right after `apply-records` (or `lower-te`) in a compile that reuses kernels with
    records or a profile: learn the tuning-record key of each kernel lowered in full
    (`learn_record_key`, for the next compile's `reuse-kernels`) and key it with the
    knobs its record gave it (`with_knobs`; the knobs are on it as `lamina.knobs`)."""

    name = "key-records"
    replayable = False  # a driver step, not a registered pass (no reproducer names it)

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from lamina.passes.apply_records import kernel_key, kernels
        from lamina.target.function_knobs import KNOBS_ATTR

        base = module_keys(op, PENDING_ATTR)
        op.attributes.pop(PENDING_ATTR, None)
        lowered = module_keys(op, LOWERED_ATTR)
        for func in kernels(op):
            name = func.sym_name.data
            if name not in base or name not in lowered:
                continue
            if record_key(base[name]) is None:  # known: the same kernel, the same key
                learn_record_key(base[name], kernel_key(func, op))
            knobs = func.attributes.get(KNOBS_ATTR)
            lowered[name] = with_knobs(base[name], str(knobs) if knobs is not None else "")
        if lowered:
            op.attributes[LOWERED_ATTR] = DictionaryAttr(
                {k: StringAttr(v) for k, v in lowered.items()}
            )


FAMILY_SPLIT = 0.2
"""A te-level family heavier than this part of the kernels' weight is two scopes."""


def family_scopes(weights: dict[str, int], families: dict[str, str]) -> dict[str, str]:
    """Kernel (of `weights`, those lowered here) → its family scope: its te-level
    family (`kernel_families.te_family`), in two halves (by name) if heavier than
    `FAMILY_SPLIT` of all: DenseNet-121's 57 1x1 convolutions are one te-level family,
    which one process would lower alone. A scope is dealt whole
    (`parallel_lowering.deal`), and units make families within their scope only,
    so the same families form whether a lowering process is forked or not."""
    groups: dict[str, list[str]] = {}
    for name in sorted(weights):
        groups.setdefault(families.get(name, name), []).append(name)
    total = sum(weights.values())
    scopes: dict[str, str] = {}
    for family, members in groups.items():
        halves = len(members) > 3 and sum(weights[n] for n in members) > FAMILY_SPLIT * total
        for i, name in enumerate(members):
            scopes[name] = f"{family}:{int(halves and i >= len(members) // 2)}"
    return scopes


def _private(func: te.FuncOp) -> bool:
    visibility = func.sym_visibility
    return visibility is not None and visibility.data == "private"


REDUCTION_OP_WEIGHT = 10
"""What an op inside a reducing `te.compute` weighs against any other op (`_weight`)."""


def _weight(func: te.FuncOp) -> int:
    """What lowering and compiling a kernel costs, predicted from its te ops: every op
    counts one, and an op in the body of a `te.compute` with a reduction (a
    convolution's or matmul's multiply-add, a pool's window) `REDUCTION_OP_WEIGHT`
    more, since `schedule` copies those bodies into register blocks and unrolled
    windows: the loop IR, the llvm ops and LLVM's work grow with them, not with the
    te ops. Fitted on the kernels of five torchvision networks (per kernel: its
    LLVM build's CPU time plus its share of the Python lowering, by LLVM IR size):
    the correlation of the prediction with the cost went from 0.09-0.78 (ops alone;
    DenseNet-121's concatenations have many cheap select ops) to 0.59-0.91
    (docs/compile-speed.md, "Dealing the kernels by predicted cost")."""
    weight = 0
    for op in func.walk():
        weight += 1
        if isinstance(op, te.ComputeOp) and op.reduce_extents and op.reduce_extents.get_values():
            weight += REDUCTION_OP_WEIGHT * sum(1 for _ in op.body.walk())
    return weight


WINDOW_WEIGHT = 1.5
"""What a kernel reducing over a spatial window (a 3x3 or 7x7 convolution: reduce
extents `[c, kh, kw, lanes]` with `kh * kw > 1`) weighs in the deal of
`parallel_lowering.deal` against `_weight`: `schedule` unrolls the window's taps into
its register blocks, so such a kernel's LLVM IR (the Python lowering's and LLVM's
work) is about twice a 1x1 convolution's at the same channels (ResNet-50's 3x3
convolutions: 70-82 KB of IR against 37-45 KB). With `_weight` alone the lowering
process got 0.67-0.71 of ResNet-50's kernel cost for 0.55 of the weight, and the
compile's process waited for it (docs/compile-speed.md)."""


def _has_window(func: te.FuncOp) -> bool:
    """Does a reducing `te.compute` of `func` reduce over a spatial window (`WINDOW_WEIGHT`)?"""
    for op in func.walk():
        if isinstance(op, te.ComputeOp) and op.reduce_extents:
            extents = list(op.reduce_extents.get_values())
            if len(extents) >= 3 and math.prod(extents[1:-1]) > 1:
                return True
    return False


def module_keys(module: ModuleOp, attr: str) -> dict[str, str]:
    """The name → te key map `attr` (`REUSED_ATTR` or `LOWERED_ATTR`) of `module`."""
    found = module.attributes.get(attr)
    if not isinstance(found, DictionaryAttr):
        return {}
    return {k: v.data for k, v in found.data.items() if isinstance(v, StringAttr)}


def reused_records(module: ModuleOp) -> dict[str, Record]:
    """Declared kernel (LLVM name) → its record, for the code generator (which waits
    here for a lowering process's records)."""
    from lamina.backends import parallel_lowering

    parallel_lowering.finish_all()
    out = {}
    for name, key in module_keys(module, REUSED_ATTR).items():
        with _lock:
            record = _records.get(key)
        assert record is not None, f"kernel {name} was declared from a record of this process"
        out[name] = record
    return out


def record_split(module: ModuleOp, split) -> None:
    """After code generation: record every kernel lowered in full (a `kernel_split.Split`)."""
    lowered = module_keys(module, LOWERED_ATTR)
    if not lowered:
        return
    profiled = module_keys(module, PROFILED_ATTR)
    texts = {unit.key: unit.text for unit in split.kernels}
    for unit in split.kernels:
        if not unit.text:
            continue  # reused itself
        text = "\n".join([unit.text, *(texts.get(key, "") for key, _ in unit.needs)])
        for root in unit.names:
            key = lowered.get(root)
            if key is None:
                continue
            regions, _, iterations = profiled.get(root, "-1\t0").partition("\t")
            store(
                key,
                Record(
                    unit.key,
                    unit.symbol,
                    root,
                    split.declarations[root],
                    tuple(split.message_definitions[m] for m in unit.messages),
                    may_fail='@"lamina_error"' in text,
                    openmp='@"GOMP_parallel"' in text,
                    runtime=_runtime_declarations(text),
                    regions=int(regions),
                    iterations=int(iterations),
                    family=unit.needs,
                ),
            )


def _runtime_declarations(text: str) -> tuple[str, ...]:
    """The distinct `declare` lines of the device runtime in `text` (a unit's, with its
    generic unit's)."""
    from lamina.backends.kernel_split import RUNTIME_PREFIX

    lines = (line for line in text.splitlines() if line.startswith("declare "))
    return tuple(dict.fromkeys(line for line in lines if f'@"{RUNTIME_PREFIX}' in line))


__all__ = [
    "LOWERED_ATTR",
    "PENDING_ATTR",
    "PROFILED_ATTR",
    "SCOPES_ATTR",
    "REUSED_ATTR",
    "REUSE_ENV",
    "AwaitKernelsPass",
    "Delegating",
    "KeyRecordsPass",
    "Record",
    "ReuseKernelsPass",
    "clear",
    "declaration",
    "family_scopes",
    "known",
    "learn_record_key",
    "record_key",
    "lookup",
    "module_keys",
    "printed",
    "record_split",
    "reuse_enabled",
    "reused_records",
    "store",
    "te_key",
    "with_knobs",
]
