"""`apply-records`: each kernel gets the knob values its tuning record holds (docs/tuning.md).

Right after `lower-te`, every kernel is a `loop.func` that no knob has
touched yet: the schedule rules that read knobs run next. `kernel_key`
hashes that function (its name left out, so the same kernel in two models
has one key) with the module's target facts: the key names the kernel,
never the knobs that will schedule it. A record of the records file
(target/tuning_records.py) for this key, this CPU and this Lamina version
puts its knobs on the function as `lamina.knobs` (target/function_knobs.py):
`schedule` and `lower-to-llvm` read them for that kernel only, so the same
records always give the same code.
"""

from __future__ import annotations

import dataclasses
import hashlib
import io
import json
import os
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.printer import Printer

from lamina.core.diagnostics import op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import Phase
from lamina.target.function_knobs import KNOBS_ATTR, knobs_attr
from lamina.target.registry import module_facts
from lamina.target.tuning_records import RecordsError, RecordSet, load_records

KEY_FORMAT = "lamina kernel key 1"
"""Changes whenever what `kernel_key` hashes changes (old records then stop applying)."""


def kernel_text(func: loop.FuncOp) -> str:
    """`func` as text with its name replaced: the same kernel prints the same in any model."""
    clone = func.clone()
    clone.attributes.pop(KNOBS_ATTR, None)
    clone.sym_name = StringAttr("kernel")
    out = io.StringIO()
    Printer(stream=out).print_op(clone)
    return out.getvalue()


def kernel_key(func: loop.FuncOp, module: ModuleOp) -> str:
    """The structural key (hex SHA-256) of a kernel as `lower-te` leaves it, for the module's
    target facts (vector width, registers, caches, cores)."""
    facts = dataclasses.asdict(module_facts(module))
    canonical = {k: sorted(v) if isinstance(v, set | frozenset) else v for k, v in facts.items()}
    digest = hashlib.sha256(f"{KEY_FORMAT}\n{json.dumps(canonical, sort_keys=True)}\n".encode())
    digest.update(kernel_text(func).encode())
    return digest.hexdigest()


def kernels(module: ModuleOp) -> list[loop.FuncOp]:
    """The kernels of `module`: its defined loop functions."""
    return [f for f in module.walk() if isinstance(f, loop.FuncOp) and not f.is_declaration]


_LOADED: dict[tuple[str, bool, int, int], RecordSet] = {}


def cached_records(path: str, ignore_errors: bool) -> RecordSet:
    """`load_records(path)`, read again only when the file changes."""
    st = os.stat(path)
    key = (os.path.abspath(path), ignore_errors, st.st_mtime_ns, st.st_size)
    found = _LOADED.get(key)
    if found is None:
        found = _LOADED[key] = load_records(path, ignore_errors=ignore_errors)
    return found


def apply_record_set(module: ModuleOp, records: RecordSet) -> int:
    """Put each applicable record's knobs on its kernel; the number of kernels given knobs."""
    applied = 0
    for func in kernels(module):
        knobs = records.knobs_for(kernel_key(func, module))
        if knobs is None:
            continue
        if knobs:
            func.attributes[KNOBS_ATTR] = knobs_attr(knobs)
        applied += 1
    return applied


@dataclass(frozen=True)
class ApplyRecordsPass(LaminaPass):
    """Schedule each kernel with the knobs its tuning record holds.

    Input invariant: phase `lowering`, after `lower-te` (kernels are loop
    functions that `schedule` has not seen).
    Output IR: each kernel with a record for this CPU and Lamina version in
    `records` carries the record's knobs as `lamina.knobs`; the others are
    unchanged (records of another CPU or version are ignored).
    Invariants: no operation changes; only `schedule` and `lower-to-llvm`
    read the attribute.
    """

    name = "apply-records"
    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)

    records: str = ""
    """Path of the records file (JSON lines, docs/tuning.md); empty: nothing to apply."""
    ignore_errors: bool = False
    """Skip malformed lines instead of failing."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.records:
            apply_record_set(op, self.record_set(op))

    def record_set(self, op: ModuleOp) -> RecordSet:
        """The records of `self.records`; a file that cannot be read or used is an error
        located on `op`, named after this pass."""
        try:
            return cached_records(self.records, self.ignore_errors)
        except OSError as err:
            raise op_error(op, f"{self.name}: {err.strerror}: '{self.records}'") from None
        except RecordsError as err:
            raise op_error(op, f"{self.name}: {err}") from None


__all__ = ["ApplyRecordsPass", "apply_record_set", "kernel_key", "kernel_text", "kernels"]
