"""`apply-model-records`: the graph-level knobs a model's tuning record holds (docs/tuning.md).

Some knobs are decided before kernels exist: the channel block of a blocked
convolution and which 1x1 convolutions stay NCHW (`plan-layouts`), Winograd
(`legalize`), set aliasing (`lower-te`). They change which kernels the model
has, so `lamina-tune` measures them on whole-model builds and records the
winner once per model (a record of scope "model", target/tuning_records.py).
This pass runs first when a compile is given records: `model_key` names the
model as imported (its operations, types and attributes, not the values of
its weights) with the target facts, and the record for that key puts its
knobs on the module as `lamina.knobs`, which every pass reads through
`op_knobs` (target/function_knobs.py; a kernel's own knobs, applied after
`lower-te`, replace them for that kernel).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import DenseIntOrFPElementsAttr, DenseResourceAttr, ModuleOp
from xdsl.ir import Attribute

from lamina.core.diagnostics import op_error
from lamina.dialects import graph
from lamina.dialects.lamina import Phase
from lamina.passes.apply_records import ApplyRecordsPass
from lamina.target.function_knobs import KNOBS_ATTR, knobs_attr
from lamina.target.registry import module_facts
from lamina.target.tuning_records import OP_PREFIX, RecordSet, split_op_knobs

KEY_FORMAT = "lamina model key 1"
"""Changes whenever what `model_key` hashes changes (old records then stop applying)."""


def _attribute_text(attr: Attribute) -> str:
    """An attribute as the key sees it: a tensor of values by its type alone (the weights
    do not decide the plan, and printing them would cost more than the compile's start)."""
    if isinstance(attr, DenseIntOrFPElementsAttr | DenseResourceAttr):
        return f"dense:{attr.type}"
    return str(attr)


def model_key(module: ModuleOp) -> str:
    """The structural key (hex SHA-256) of a model: every operation's name, result types
    and attributes (the module's own left out: its phase, targets and knobs), and the
    target facts."""
    facts = dataclasses.asdict(module_facts(module))
    canonical = {k: sorted(v) if isinstance(v, set | frozenset) else v for k, v in facts.items()}
    digest = hashlib.sha256(f"{KEY_FORMAT}\n{json.dumps(canonical, sort_keys=True)}\n".encode())
    for op in module.walk():
        if op is module:
            continue
        named = {**op.attributes, **op.properties}
        attrs = ",".join(f"{k}={_attribute_text(v)}" for k, v in sorted(named.items()))
        types = ",".join(str(r.type) for r in op.results)
        digest.update(f"{op.name}({len(op.operands)}) {attrs} -> {types}\n".encode())
    return digest.hexdigest()


def apply_model_record(module: ModuleOp, records: RecordSet) -> bool:
    """Put the model record's knobs on `module`; whether a record applied."""
    knobs = records.knobs_for(model_key(module))
    if knobs is None:
        return False
    apply_model_knobs(module, knobs)
    return True


def apply_model_knobs(module: ModuleOp, knobs: Mapping[str, Any]) -> None:
    """A model record's knobs on `module` (as imported): the module's as its `lamina.knobs`,
    each convolution's (`conv2d#N`, the N-th `graph.conv2d` in order) as that op's, which
    `plan-layouts` reads there (`op_knobs`) over the module's."""
    common, per_op = split_op_knobs(knobs)
    if common:
        module.attributes[KNOBS_ATTR] = knobs_attr(common)
    if not per_op:
        return
    convs = [op for op in module.walk() if isinstance(op, graph.Conv2dOp)]
    for index, own in per_op.items():
        if index >= len(convs):  # a hand-edited record: the key hashes the structure
            raise op_error(
                module,
                f"a model record sets knobs of '{OP_PREFIX}{index}', but the module has "
                f"{len(convs)} graph.conv2d ops (docs/tuning.md)",
            )
        convs[index].attributes[KNOBS_ATTR] = knobs_attr(own)


@dataclass(frozen=True)
class ApplyModelRecordsPass(ApplyRecordsPass):
    """Compile the model with the graph-level knobs its tuning record holds.

    Input invariant: phase `ingestion` or `optimization`, before `plan-layouts`
    (the first pass that reads a graph-level knob).
    Output IR: when `records` has a record of scope "model" for this model,
    this CPU and Lamina version, the module carries its knobs as `lamina.knobs`,
    and each `conv2d#N` entry's knobs are the N-th `graph.conv2d`'s own
    `lamina.knobs` (`conv_channel_block`, `conv_winograd`, read there by
    `plan-layouts`); otherwise the module is unchanged.
    Invariants: no operation changes.
    Options: those of `apply-records` (the records file, `ignore_errors`).
    """

    name = "apply-model-records"
    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.INGESTION, Phase.OPTIMIZATION})
    requires: ClassVar[tuple[str, ...]] = ()

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.records:
            apply_model_record(op, self.record_set(op))


__all__ = ["ApplyModelRecordsPass", "apply_model_knobs", "apply_model_record", "model_key"]
