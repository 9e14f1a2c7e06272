"""Both cores for the Python lowering: a forked process lowers and compiles part of the kernels.

The Python pipeline from `lower-te` on (`schedule`, `simplify`, `lower-to-llvm`
and the verifier after each) works one kernel at a time and holds the GIL:
threads would take turns. So, when a module has at least `MIN_KERNELS`
kernels left to lower, `reuse-kernels` (backends/kernel_reuse.py) forks
once, right before `lower-te`:

* the **child** takes part of the work (`CHILD_SHARE` of the kernels by predicted
  cost, `kernel_reuse._weight`, dealt largest first to the lighter side), declares the other kernels, drops the
  host's graph functions (the parent lowers the host), runs the same passes,
  sends which of its kernels can fail (all the parent's error checks need),
  then translates and splits its kernels into units, records them as a compile
  that lowered them would (`kernel_reuse.record_split`) and sends the records
  through a pipe; then it compiles the units to object code (their LLVM work
  on threads, like any build) and sends that;
* the **parent** declares the child's kernels, as if an earlier compile had
  recorded them, and lowers the rest, the host included, down to the llvm
  dialect. Right before `lower-to-llvm` inserts the error checks after calls
  (which need to know which callees can fail), it reads which of the child's
  kernels can fail (`Delegation.failing`: the child sends that before it
  translates and splits its kernels, so the parent does not wait for those
  steps; while the answer has not come, the parent collects its garbage,
  `collect_while_idle`); when code generation starts (after the error exits and the
  verifier of the llvm-dialect module), it reads the child's records
  (`Delegation.finish`, from `kernel_reuse.reused_records`), which must say
  the same of every kernel; code generation then treats those kernels as reused
  ones, compiles its own units while the child compiles its, and reads the
  child's object code once its own build is done (`collect_all`, from
  `kernel_cache.build_split`).

A kernel's unit does not depend on the module it is lowered in (that is what
makes it reusable), so the host unit and every kernel unit are the same text
as a serial compile's, hence the same object code
(`tests/test_parallel_lowering.py`). A child that fails sends its error
(instead of its records or of its object code); the driver then compiles
serially (`ParallelLoweringFailed`).
`LAMINA_LOWER_PROCESSES=1` turns the fork off.
"""

from __future__ import annotations

import functools
import gc
import os
import pickle
import select
import signal
import threading
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any

from xdsl.dialects import llvm
from xdsl.dialects.builtin import ModuleOp

from lamina.dialects import graph, te
from lamina.runtime.env import env_int
from lamina.runtime.host import usable_cores

PROCESSES_ENV = "LAMINA_LOWER_PROCESSES"
"""Environment variable: `1` lowers every kernel in this process (default: 2 on 2+ cores)."""

MIN_KERNELS = 6
"""Fewest kernels left to lower for which a fork pays (it costs ~20-50 ms)."""


class ParallelLoweringFailed(Exception):
    """The child failed; the message is its traceback. The compile is redone serially."""


WAIT_SECONDS = 900.0
"""A child silent for this long is stopped and the compile redone in one process."""


def enabled() -> bool:
    """Fork for this compile? Not with other Python threads running: one of them could
    hold a lock the child would then wait for forever (say, a compile in another thread)."""
    if threading.active_count() > 1:
        return False
    explicit = env_int(PROCESSES_ENV, None, minimum=0)
    if explicit is not None:
        return explicit > 1
    if not hasattr(os, "fork"):
        return False
    return usable_cores() > 1


CHILD_SHARE = 0.55
"""The child's part of the kernels' weight (their predicted cost,
`kernel_reuse._weight`). The parent also lowers the host, inserts its error
exits, translates and compiles it, links and stores the model: with half of the
kernels' predicted cost each, it did about 1 s more CPU time after the fork than
the child on ResNet-50, GoogLeNet and MobileNet-V2 (2-core machine, load 5-9);
0.55 left it 0.7, -0.75 and 0.16 s (0.5: 1.19, 0.49, 0.81 s in the same
rounds). With op counts as the weights, measured before: 0.4 gave the parent
4.7 s against the child's 3.1 s on ResNet-50, 20.1 s against 12.6 s on
DenseNet-121 (0.5: 17.2 against 16.6)."""


FAMILY_PYTHON_SHARE = 0.6
"""The part of a family member's predicted cost (`deal`) that is its Python lowering:
a family's members (backends/kernel_families.py) share one LLVM build of their loops,
not their lowering (DenseNet-121's 57 1x1 convolutions: 10.3 s of LLVM CPU alone,
1.4 s as four families)."""


def deal(
    weights: dict[str, float], share: float = CHILD_SHARE, families: dict[str, str] | None = None
) -> set[str]:
    """The child's kernels: dealt largest first to the side furthest below its share
    of the weight dealt so far. Deterministic for the same weights.

    `families`: kernel → its family scope (`kernel_reuse.family_scopes`): the
    kernels of one scope go to the same side, weighing their Python lowering each
    and their LLVM build once (`FAMILY_PYTHON_SHARE`). Their units then make the
    same families there as in one process (a family's generic unit depends on its
    members), so the code does not depend on the fork."""
    groups: dict[str, list[str]] = {}
    for name in sorted(weights):
        groups.setdefault((families or {}).get(name, name), []).append(name)
    items = []
    for members in groups.values():
        weight = float(sum(weights[n] for n in members))
        if len(members) > 1:
            largest = max(weights[n] for n in members)
            weight = weight * FAMILY_PYTHON_SHARE + largest * (1 - FAMILY_PYTHON_SHARE)
        items.append((weight, members[0], members))
    child: set[str] = set()
    loads = [0.0, 0.0]  # parent, child
    for weight, _, members in sorted(items, key=lambda item: (-item[0], item[1])):
        side = 1 if loads[1] / share <= loads[0] / (1 - share) else 0
        loads[side] += weight
        if side:
            child.update(members)
    return child


@dataclass
class Delegation:
    """A child lowering some kernels: its pid and pipe, and their te keys by name."""

    pid: int
    read_fd: int
    keys: dict[str, str]
    may_fail: dict[str, bool] | None = None
    """te key → whether the kernel can fail (`failing`)."""
    records: dict = field(default_factory=dict)
    done: bool = False
    """The records arrived (`finish`)."""
    collected: bool = False
    """The object code arrived too (`collect`), or the child was stopped."""

    def failing(self) -> dict[str, bool]:
        """Wait for the child's first message: te key → whether that kernel can fail
        (whether its code refers to the error flag, `backends/llvm/errors.py`)."""
        if self.may_fail is None:
            if not self._ready():
                collect_while_idle()
            may_fail = self._receive()["may_fail"]
            if set(may_fail) != set(self.keys.values()):
                self.abandon()
                raise ParallelLoweringFailed(
                    "the lowering process did not say which of its kernels can fail"
                )
            self.may_fail = may_fail
            return may_fail
        return self.may_fail

    def finish(self) -> dict:
        """Wait for the child's records (sent before it compiles its units); store them;
        te key → record. The object code comes later (`collect`). A record must say
        what `failing` said: the parent's error checks were placed by that."""
        if self.done:
            return self.records
        may_fail = self.failing()
        self.done = True
        payload = self._receive()
        from lamina.backends import kernel_reuse

        for key, fields in payload["records"]:
            record = kernel_reuse.Record(**fields)
            kernel_reuse.store(key, record, on_disk=False)  # the child wrote it there
            self.records[key] = record
        missing = set(self.keys.values()) - set(self.records)
        if missing:
            self.abandon()
            raise ParallelLoweringFailed(
                f"the lowering process did not send {len(missing)} kernels"
            )
        if any(r.may_fail != may_fail[key] for key, r in self.records.items()):
            self.abandon()
            raise ParallelLoweringFailed(
                "the lowering process's records disagree on which kernels can fail"
            )
        return self.records

    def collect(self) -> None:
        """Wait for the child's object code (code generation, once this process has built
        its own units) and put it in the kernel cache."""
        if self.collected:
            return
        self.finish()
        payload = self._receive()
        self.collected = True
        os.close(self.read_fd)
        os.waitpid(self.pid, 0)
        _live.pop(self.pid, None)
        from lamina.backends import kernel_cache

        objects: dict[str, bytes] = payload["objects"]
        for record in self.records.values():  # a family member's generic unit too
            for key, symbol in ((record.unit_key, record.symbol), *record.family):
                if key not in objects:
                    raise ParallelLoweringFailed(
                        f"the lowering process did not send the code of {record.root}"
                    )
                kernel_cache.insert(key, symbol, objects[key])

    def _ready(self) -> bool:
        """Has the child's next message (at least its first byte) arrived?"""
        return bool(select.select([self.read_fd], [], [], 0)[0])

    def _receive(self) -> dict[str, Any]:
        """The child's next message (a length-prefixed pickle); its error raised."""
        header = self._read(8)
        data = None if header is None else self._read(int.from_bytes(header, "little"))
        if data is None:
            self.abandon()
            raise ParallelLoweringFailed("the lowering process ended without answering")
        try:
            payload = pickle.loads(data)
        except Exception:  # noqa: BLE001 - a message the child could not finish
            payload = {"error": "the lowering process sent an unreadable message"}
        if "error" in payload:
            self.abandon()
            raise ParallelLoweringFailed(payload["error"])
        return payload

    def _read(self, size: int) -> bytes | None:
        """`size` bytes from the pipe, or None at its end; a child silent for
        `WAIT_SECONDS` is stopped."""
        chunks, left = [], size
        while left:
            if not select.select([self.read_fd], [], [], WAIT_SECONDS)[0]:
                self.abandon()
                raise ParallelLoweringFailed(
                    f"the lowering process was silent for {WAIT_SECONDS} s"
                )
            chunk = os.read(self.read_fd, min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def abandon(self) -> None:
        """Stop the child (the compile failed, or does not need it any more)."""
        if self.collected:
            return
        self.done = self.collected = True
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.read_fd)
        _live.pop(self.pid, None)


_live: dict[int, Delegation] = {}

IDLE_COLLECTION_GENERATION = 1
"""The generations collected while the parent waits for the child (`collect_while_idle`)."""


def collect_while_idle() -> None:
    """Collect the young and middle generations while this process would wait for the
    child anyway (the garbage of its own lowering, erased IR in reference cycles).

    A compile collects rarely (core/gc_pauses.py), so that garbage piles up and was
    collected after the wait, on the compile's critical path: by the young
    collections of translation and code generation, and by the middle-generation
    collection that restoring the thresholds at the end of the compile set off
    (ResNet-50: 0.17-0.19 s of this process's CPU time after the wait, 0.02 s once
    collected during it; the collection itself costs about the same, 0.15 s, in
    time the process spent blocked). Only the cost moves: the same objects are
    collected either way. A full collection would traverse all of the live IR:
    not done here."""
    gc.collect(IDLE_COLLECTION_GENERATION)


def start(
    module: ModuleOp, delegated: dict[str, str], passes: list, jit: bool = True
) -> Delegation:
    """Fork a child lowering the te.funcs named in `delegated` (name → te key) of
    `module` with `passes` (from `lower-te` on), compiling and sending them back
    (`jit=False`: as position-independent code for a library)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read_fd)
        try:
            with os.fdopen(write_fd, "wb") as pipe:
                send = functools.partial(_send, pipe)
                try:
                    _lower_in_child(module, delegated, passes, send, jit)
                except BaseException:  # noqa: BLE001 - everything goes back to the parent
                    send({"error": traceback.format_exc()})
        finally:
            os._exit(0)
    os.close(write_fd)
    _live[pid] = delegation = Delegation(pid, read_fd, dict(delegated))
    return delegation


def _send(pipe, payload: dict) -> None:
    """One message to the parent: its length, then its pickle."""
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(len(data).to_bytes(8, "little") + data)
    pipe.flush()


def _lower_in_child(
    module: ModuleOp, delegated: dict[str, str], passes: list, send, jit: bool = True
) -> None:
    """Lower the delegated kernels, send their records (what the parent's host needs:
    which can fail, their declarations), then compile them and send their object
    code. The parent goes on with its own units between the two messages."""
    from lamina.backends import codegen, kernel_cache, kernel_reuse, kernel_split, parallel_build
    from lamina.backends.compile_worker import own_process
    from lamina.core.context import make_context
    from lamina.core.pass_manager import PassManager, compile_verify_policy

    own_process()  # a process of Lamina's: its units get the LLVM options (compile_worker.py)

    names = set(delegated)
    for func in list(module.ops):
        if isinstance(func, te.FuncOp) and not func.is_declaration:
            if func.sym_name.data not in names:
                module.body.block.insert_op_before(kernel_reuse.declaration(func), func)
                module.body.block.erase_op(func)
        elif isinstance(func, graph.FuncOp):  # the host is the parent's: not lowered twice
            module.body.block.erase_op(func)
    module.attributes.pop(kernel_reuse.REUSED_ATTR, None)
    lowered = kernel_reuse.module_keys(module, kernel_reuse.LOWERED_ATTR)
    PassManager(passes, **compile_verify_policy()).run(make_context(), module)
    defined = {f.sym_name.data for f in module.ops if isinstance(f, llvm.FuncOp) and f.body.blocks}
    roots = [name for name in lowered if name in defined]  # the delegated kernels
    send({"may_fail": {lowered[name]: fails for name, fails in may_fail(module, roots).items()}})
    codegen._ensure_llvm()
    target = codegen.CodeTarget.of(module)  # the module's `isa`, as the parent builds for
    tm = codegen._target_machine(jit=jit, target=target)
    ir_module, blobs = codegen._translate(
        module, tm, bits=target.vector_bits, attach_limit=kernel_split.BLOB_MIN_BYTES
    )
    facts = kernel_cache.facts(target, jit)
    scopes = kernel_reuse.module_keys(module, kernel_reuse.SCOPES_ATTR)
    split = kernel_split.split_module(ir_module, blobs, facts, roots=roots, scopes=scopes)
    if split is None:
        raise RuntimeError("the delegated kernels did not split into units")
    kernel_reuse.record_split(module, split)
    units = {unit.key for unit in split.kernels}
    records = []
    for key in delegated.values():
        record = kernel_reuse.known(key)
        if record is not None and record.unit_key in units:
            records.append((key, asdict(record)))
    send({"records": records})
    built = parallel_build.build_all(
        lambda unit: kernel_cache._build_unit(unit, target, jit), split.kernels
    )
    send(
        {
            "objects": {
                unit.key: result.object_code
                for unit, result in zip(split.kernels, built, strict=True)
            }
        }
    )


def may_fail(module: ModuleOp, roots: list[str]) -> dict[str, bool]:
    """Root function → whether it, or a function it calls or passes on (an OpenMP
    body), refers to the error flag: whether the kernel's unit, which holds exactly
    those functions (backends/kernel_split.py), can fail."""
    from lamina.backends.llvm.errors import ERROR_SYMBOL

    funcs = {f.sym_name.data: f for f in module.ops if isinstance(f, llvm.FuncOp)}
    references: dict[str, set[str]] = {}

    def referenced(name: str) -> set[str]:
        if name not in references:
            found = references[name] = set()
            for op in funcs[name].walk():
                if isinstance(op, llvm.CallOp) and op.callee is not None:
                    found.add(op.callee.string_value())
                elif isinstance(op, llvm.AddressOfOp):
                    found.add(op.global_name.string_value())
        return references[name]

    result: dict[str, bool] = {}
    for root in roots:
        seen: set[str] = set()
        stack, fails = [root], False
        while stack and not fails:
            name = stack.pop()
            if name in seen or name not in funcs:
                continue
            seen.add(name)
            fails = ERROR_SYMBOL in referenced(name)
            stack.extend(referenced(name))
        result[root] = fails
    return result


def finish_all() -> None:
    """The records of every lowering process still to send them (code generation
    needs them once it has translated its own module)."""
    for delegation in list(_live.values()):
        delegation.finish()


def collect_all() -> None:
    """The object code of every lowering process whose records this compile used
    (code generation calls this once it has built its own units)."""
    for delegation in list(_live.values()):
        if delegation.done:
            delegation.collect()


def abandon_all() -> None:
    """Stop every child still running (after a failed compile)."""
    for delegation in list(_live.values()):
        delegation.abandon()


__all__ = [
    "MIN_KERNELS",
    "PROCESSES_ENV",
    "Delegation",
    "ParallelLoweringFailed",
    "abandon_all",
    "collect_all",
    "collect_while_idle",
    "deal",
    "enabled",
    "finish_all",
    "may_fail",
    "start",
]
