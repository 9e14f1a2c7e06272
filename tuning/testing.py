"""Records written by hand, for tests and examples: the record of one function of a file."""

from __future__ import annotations

from typing import Any

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.dialects import loop
from lamina.passes.apply_records import kernel_key
from lamina.target.tuning_records import (
    Record,
    Timing,
    check_record_knobs,
    host_identity,
    lamina_version,
    write_records,
)


def write_record(source: str, records: str, function: str, knobs: dict[str, Any]) -> Record:
    """Write to `records` a record giving `knobs` to the loop function `function` of the
    module in file `source` (as it is there: after `lower-te`), for this CPU and version."""
    with open(source, encoding="utf-8") as f:
        module = parse_module(make_context(), f.read(), source)
    func = next(
        op for op in module.walk() if isinstance(op, loop.FuncOp) and op.sym_name.data == function
    )
    cpu, features = host_identity()
    record = Record(
        kernel_key(func, module),
        cpu,
        features,
        lamina_version(),
        check_record_knobs(knobs),
        Timing(1e-3, 0.0, 1),
        name=function,
    )
    write_records(records, [record])
    return record


__all__ = ["write_record"]
