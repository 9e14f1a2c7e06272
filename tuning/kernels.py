"""The kernels of a model, each as a program of its own that a candidate's knobs schedule.

The model runs through the default pipeline down to `lower-te`: every
kernel is then a `loop.func` that no knob has touched, and `kernel_key`
(passes/apply_records.py) names it as `apply-records` will when the model is
compiled with the records. `Kernel.program(knobs)` is a module of that one
kernel called by a `@main` graph function taking the kernel's real operand
shapes, with `knobs` as its `lamina.knobs`: compiling it runs exactly the
passes the model's compile runs on the kernel after `lower-te`, so a
candidate's measured code is the code the records will produce.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp, StringAttr, SymbolRefAttr
from xdsl.ir import Operation
from xdsl.printer import Printer

from lamina.core.pass_manager import PassManager
from lamina.dialects import graph, loop
from lamina.driver.lowering import parse_source
from lamina.driver.pipeline import passes_for_module
from lamina.passes.apply_model_records import apply_model_knobs
from lamina.passes.apply_records import kernel_key, kernels
from lamina.target.function_knobs import KNOBS_ATTR, knobs_attr
from lamina.target.tuning_records import Record, Timing, lamina_version


@dataclass(frozen=True)
class Kernel:
    """One kernel of a model: its key, its name and shapes (for people), its own program."""

    key: str
    name: str
    shape: str
    calls: int
    """How many times the model calls it (its share of the model's time counts them all)."""
    header: str
    """The module's opening line, with its attributes (phase, targets)."""
    main: str
    body: str
    """The kernel and the symbols it refers to, as text."""

    def program(self, knobs: Mapping[str, Any] | None = None) -> str:
        """The kernel's own program, its function carrying `knobs` (none: the defaults)."""
        body = self.body.replace(
            _PLACEHOLDER, f"{KNOBS_ATTR} = {_text(knobs_attr(knobs or {}))}", 1
        )
        return f"{self.header} {{\n{self.main}{body}}}\n"

    def record(
        self,
        identity: tuple[str, tuple[str, ...]],
        knobs: Mapping[str, Any],
        time: Timing,
        default: Timing,
        trials: int,
        invalid: list[dict[str, Any]],
    ) -> Record:
        """The record of this kernel for `identity` (CPU name, features) and this version;
        the first 20 invalid candidates."""
        cpu, features = identity
        return Record(
            self.key, cpu, features, lamina_version(), dict(knobs), time, default,
            self.name, self.shape, trials, tuple(invalid[:20]),
        )  # fmt: skip


_PLACEHOLDER = f"{KNOBS_ATTR} = {{}}"
"""How the kernel's (empty) knobs print; `program` puts a candidate's there."""


def _text(item: Operation | Any) -> str:
    out = io.StringIO()
    printer = Printer(stream=out)
    if isinstance(item, Operation):
        printer.print_op(item)
    else:
        printer.print_attribute(item)
    return out.getvalue()


def load_model(
    path: str | os.PathLike[str],
    targets: list[str] | None = None,
    graph_knobs: Mapping[str, Any] | None = None,
    lower: bool = True,
) -> ModuleOp:
    """The model at `path` (`.onnx` or graph IR text) lowered down to `lower-te`, inclusive,
    with `graph_knobs` (a model record's) applied as `apply-model-records` does; with
    `lower` False, as imported (its targets recorded: what `model_key` hashes)."""
    path = os.fspath(path)
    if path.endswith(".onnx"):
        from lamina.frontends.onnx import import_source

        result = import_source(path, {}, filename=path)
        assert result is not None, "an .onnx path is a model or a diagnostic"
        module = result.module
    else:
        module = parse_source(path, path)
    passes = passes_for_module("default", module, targets)
    if not lower:
        return module
    if graph_knobs:
        apply_model_knobs(module, graph_knobs)
    cut = next((i for i, p in enumerate(passes) if p.name == "lower-te"), None)
    if cut is not None:
        PassManager(passes[: cut + 1]).run(_context(), module)
    return module


def _context():
    from lamina.core.context import make_context

    return make_context()


def model_kernels(module: ModuleOp) -> list[Kernel]:
    """Every distinct kernel of `module` (lowered by `load_model`), in the order it is called."""
    funcs = {f.sym_name.data: f for f in kernels(module)}
    header = _text(ModuleOp([], attributes=dict(module.attributes))).rstrip().removesuffix("{\n}")
    found: dict[str, Kernel] = {}
    for call in module.walk():
        if not isinstance(call, graph.CallLoopOp) or call.callee.root_reference.data not in funcs:
            continue
        func = funcs[call.callee.root_reference.data]
        key = kernel_key(func, module)
        if key in found:
            old = found[key]
            found[key] = Kernel(
                key, old.name, old.shape, old.calls + 1, old.header, old.main, old.body
            )
            continue
        found[key] = Kernel(
            key, func.sym_name.data, _shape(call), 1, header, _main(call), _body(func, module)
        )
    return list(found.values())


def _shape(call: graph.CallLoopOp) -> str:
    ins = ", ".join(_type_text(o.type) for o in call.operands)
    outs = ", ".join(_type_text(r.type) for r in call.results)
    return f"{ins} -> {outs}"


def _type_text(ty: Any) -> str:
    text = _text(ty)
    return text.removeprefix("tensor<").removesuffix(">") if text.startswith("tensor<") else text


def _main(call: graph.CallLoopOp) -> str:
    """`@main`: the kernel's operands as parameters, its results returned."""
    params = ", ".join(f"%a{i}: {_text(o.type)}" for i, o in enumerate(call.operands))
    in_types = ", ".join(_text(o.type) for o in call.operands)
    out_types = [_text(r.type) for r in call.results]
    outs = out_types[0] if len(out_types) == 1 else f"({', '.join(out_types)})"
    results = ", ".join(f"%r#{i}" for i in range(len(out_types))) if len(out_types) > 1 else "%r"
    lhs = f"%r:{len(out_types)}" if len(out_types) > 1 else "%r"
    args = ", ".join(f"%a{i}" for i in range(len(call.operands)))
    return (
        f"  graph.func @main({params}) -> {outs} attributes {{force_pure}} {{\n"
        f"    {lhs} = graph.call_loop @{call.callee.root_reference.data}({args}) : ({in_types}) -> {outs}\n"
        f"    graph.return {results} : {', '.join(out_types)}\n  }}\n"
    )


def _body(func: loop.FuncOp, module: ModuleOp) -> str:
    """`func` and the top-level symbols it refers to (transitively), as text."""
    table = {
        name.data: op
        for op in module.body.block.ops
        if isinstance(
            name := op.attributes.get("sym_name") or op.properties.get("sym_name"), StringAttr
        )
    }
    order: list[Operation] = []
    stack: list[Operation] = [func]
    while stack:
        op = stack.pop()
        if op in order:
            continue
        order.append(op)
        for inner in op.walk():
            for attr in [*inner.attributes.values(), *inner.properties.values()]:
                if isinstance(attr, SymbolRefAttr) and attr.root_reference.data in table:
                    stack.append(table[attr.root_reference.data])
    func = func.clone()
    func.attributes[KNOBS_ATTR] = knobs_attr({})
    order[0] = func
    ranked = {id(func): -1, **{id(op): i for i, op in enumerate(module.body.block.ops)}}
    return "".join(_text(op) + "\n" for op in sorted(order, key=lambda op: ranked[id(op)]))


__all__ = ["Kernel", "load_model", "model_kernels"]
