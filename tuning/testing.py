"""Records written by hand, for tests and examples: the record of one function of a file,
or of a whole model."""

from __future__ import annotations

from typing import Any

from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.dialects import loop
from lamina.passes.apply_records import kernel_key
from lamina.target.tuning_records import (
    MODEL_SCOPE,
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


def write_model_record(source: str, records: str, knobs: dict[str, Any]) -> Record:
    """Write to `records` a model record giving the graph-level `knobs` to the model in
    file `source` (graph IR, as imported), for this CPU and version."""
    from lamina.passes.apply_model_records import model_key
    from lamina.tuning.kernels import load_model

    cpu, features = host_identity()
    record = Record(
        model_key(load_model(source, lower=False)),
        cpu,
        features,
        lamina_version(),
        check_record_knobs(knobs, model=True),
        Timing(1e-3, 0.0, 1),
        name=source,
        scope=MODEL_SCOPE,
    )
    write_records(records, [record])
    return record


__all__ = ["write_model_record", "write_record"]
