"""Property tests: plan-devices on random graph programs with random `on_device`.

Hypothesis writes straight-line graph functions (elementwise ops over
earlier values, each value optionally pinned with `graph.on_device` to
cpu:0 or cpu:1, parameters too), alone or as a callee whose parameters
may be fixed by `arg_attrs`, called from `@main`. After plan-devices the module must verify
and be consistent (every compute op carries `device`, each of its tensor
operands lives there, each call argument on its parameter's device; a
`graph.device_copy` reads from its `src`; no
`graph.on_device` is left), copies must be minimal (at most one per value
and destination device, each used), planning must be idempotent (text
equal), and — compiled for cpu:0/cpu:1 — the program must keep the NumPy
reference's results, with every device's memory freed after the run.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.traits import SymbolTable

import lamina
from lamina.core.context import make_context
from lamina.core.devices import device_of, op_device
from lamina.core.diagnostics import parse_module, verify_module
from lamina.dialects import graph
from lamina.dialects.reference import evaluate
from lamina.passes.plan_devices import PlanDevicesPass

T = "tensor<4xf32>"
BINARY = ("add", "sub", "mul", "maximum")
UNARY = ("neg", "relu", "tanh")
DEVICES = ('#lamina.device<"cpu", 0>', '#lamina.device<"cpu", 1>')


@st.composite
def programs(draw) -> str:
    """A graph function over 3 parameters with 1-8 ops and random on_device pins."""
    lines: list[str] = []
    values = ["%p0", "%p1", "%p2"]
    counter = 0

    def maybe_pin(value: str) -> str:
        nonlocal counter
        pin = draw(st.sampled_from([None, *DEVICES]))
        if pin is None:
            return value
        counter += 1
        name = f"%d{counter}"
        lines.append(f"    {name} = graph.on_device {value} {{device = {pin}}} : ({T}) -> {T}")
        return name

    values = [maybe_pin(v) for v in values]
    for i in range(draw(st.integers(1, 8))):
        if draw(st.booleans()):
            op = draw(st.sampled_from(BINARY))
            a, b = draw(st.sampled_from(values)), draw(st.sampled_from(values))
            lines.append(f"    %v{i} = graph.{op} {a}, {b} : ({T}, {T}) -> {T}")
        else:
            op = draw(st.sampled_from(UNARY))
            a = draw(st.sampled_from(values))
            lines.append(f"    %v{i} = graph.{op} {a} : ({T}) -> {T}")
        values.append(maybe_pin(f"%v{i}"))
    results = draw(st.lists(st.sampled_from(values), min_size=1, max_size=2))
    params = ", ".join(f"%p{i}: {T}" for i in range(3))
    types = ", ".join([T] * len(results))
    return (
        "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {\n"
        f"  graph.func @main({params}) -> ({types}) {{\n"
        + "\n".join(lines)
        + f"\n    graph.return {', '.join(results)} : {types}\n  }}\n}}\n"
    )


@st.composite
def called_programs(draw) -> str:
    """A random program as a callee `@body` whose parameters may be fixed to a
    device (`arg_attrs`), called from `@main`: copies cross the call."""
    body = draw(programs())
    header = body.index("graph.func @main(")
    params = []
    for i in range(3):
        pinned = f"graph.on_device %p{i} " in body  # an on_device already fixes it
        device = None if pinned else draw(st.sampled_from([None, *DEVICES]))
        params.append(f"%p{i}: {T}" + (f" {{device = {device}}}" if device else ""))
    signature_end = body.index(")", header)
    body = body[:header] + f"graph.func @body({', '.join(params)}" + body[signature_end:]
    results = body[body.index("-> (", header) + 4 : body.index(") {", header)]
    n = results.count("tensor")
    names = ", ".join(f"%r#{i}" for i in range(n))
    main = (
        f"  graph.func @main(%p0: {T}, %p1: {T}, %p2: {T}) -> ({results}) {{\n"
        f"    %r:{n} = graph.call @body(%p0, %p1, %p2) : ({T}, {T}, {T}) -> ({results})\n"
        f"    graph.return {names} : {results}\n  }}\n"
    )
    return body.rstrip().removesuffix("}") + main + "}\n"


def plan(text: str) -> ModuleOp:
    module = parse_module(make_context(), text)
    PlanDevicesPass().apply(make_context(), module)
    verify_module(module)
    return module


def check_consistent(module: ModuleOp) -> None:
    copies: set[tuple[object, object]] = set()
    for op in module.walk():
        assert not isinstance(op, graph.OnDeviceOp), "on_device left after planning"
        if isinstance(op, graph.DeviceCopyOp):
            assert device_of(op.input) == op.src
            assert op.device == op.dst and op.result.uses, "copy without a use"
            key = (op.input, op.dst)
            assert key not in copies, "two copies of one value to one device"
            copies.add(key)
        elif op.has_trait(graph.GraphCompute):
            device = op_device(op)
            assert device is not None, f"{op.name} has no device"
            assert all(device_of(v) == device for v in op.operands), f"{op.name} operand elsewhere"
        elif isinstance(op, graph.CallOp):
            callee = SymbolTable.lookup_symbol(op, op.callee)
            for i, v in enumerate(op.arguments):
                assert device_of(v) == callee.arg_attrs.data[i].data["device"]  # type: ignore[union-attr]
        elif isinstance(op, graph.ReturnOp):
            func = op.parent_op()
            for i, v in enumerate(op.arguments):
                assert device_of(v) == func.res_attrs.data[i].data["device"]  # type: ignore[union-attr]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs() | called_programs())
def test_planning_is_consistent_minimal_and_idempotent(text: str):
    once = plan(text)
    check_consistent(once)
    twice = plan(str(once))
    assert str(twice) == str(once)


INPUTS = [np.linspace(-2, 2, 4, dtype=np.float32) * (i + 1) for i in range(3)]


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs() | called_programs())
def test_two_device_programs_keep_numpy_results(text: str):
    expected = evaluate(parse_module(make_context(), text), "main", *INPUTS)
    exe = lamina.compile(text)
    exe.reset_device_stats()
    got = exe.run("main", *INPUTS)
    got = got if isinstance(got, tuple) else (got,)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6)
    for device, stats in exe.device_stats().items():
        assert stats.live == 0, f"{device} leaks {stats.live} bytes"
