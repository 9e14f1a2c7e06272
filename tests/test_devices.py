"""Devices end to end: two cpu devices that really run, refusal of unusable kinds,
and the helpers later passes use (`lamina.core.devices`)."""

from __future__ import annotations

import numpy as np
import pytest

import lamina
from lamina.core.context import make_context
from lamina.core.devices import carry_device, device_of
from lamina.core.diagnostics import DiagnosticError, parse_module
from lamina.dialects import graph
from lamina.dialects.lamina import DeviceAttr
from lamina.passes.plan_devices import PlanDevicesPass
from lamina.target.devices import usable_device_kinds

DIAMOND = """
builtin.module {
  graph.func @main(%a: tensor<256xf32>, %b: tensor<256xf32>, %c: tensor<256xf32>) -> tensor<256xf32> {
    %s1 = graph.add %a, %b : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %t1 = graph.on_device %s1 {device = #lamina.device<"cpu", 1>} : (tensor<256xf32>) -> tensor<256xf32>
    %s2 = graph.add %b, %c : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    %t2 = graph.on_device %s2 {device = #lamina.device<"cpu", 0>} : (tensor<256xf32>) -> tensor<256xf32>
    %m = graph.mul %t1, %t2 : (tensor<256xf32>, tensor<256xf32>) -> tensor<256xf32>
    graph.return %m : tensor<256xf32>
  }
}
"""

GPU = """
builtin.module {
  graph.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
    %y = graph.relu %x {device = #lamina.device<"gpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    %z = graph.device_copy %y {src = #lamina.device<"gpu", 0>, dst = #lamina.device<"cpu", 0>} : (tensor<4xf32>) -> tensor<4xf32>
    graph.return %z : tensor<4xf32>
  }
}
"""


def test_two_cpu_devices_run_with_their_own_accounting():
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    exe = lamina.compile(DIAMOND)
    exe.reset_device_stats()
    np.testing.assert_allclose(exe.run("main", a, b, c), (a + b) * (b + c), rtol=1e-6)
    stats = exe.device_stats()
    assert set(stats) == {"cpu:0", "cpu:1"}
    # %b is copied to cpu:0 and %s2 back to cpu:1: 1 KiB each, counted on the destination.
    assert stats["cpu:0"].copied == 1024 and stats["cpu:1"].copied == 1024
    # cpu:0 holds the copy of %b and %s2 (1 KiB each); cpu:1 holds the copy of %s2
    # (fuse-ops computes %s1 and the mul in one cpu:1 kernel, into the output).
    assert stats["cpu:0"].peak == 2048 and stats["cpu:1"].peak == 1024
    assert all(s.live == 0 for s in stats.values())


def test_unusable_device_kind_is_refused_at_compile_time():
    assert "gpu" not in usable_device_kinds()
    with pytest.raises(DiagnosticError) as err:
        lamina.compile(GPU, filename="gpu.mlir")
    text = err.value.format()
    assert "cannot compile for device kind 'gpu'" in text
    assert "graph.relu (gpu.mlir:4:5)" in text and text.startswith("gpu.mlir:4:5: error:")


def test_lamina_run_refuses_gpu_and_reports_device_stats(tmp_path, capsys):
    from lamina.tools.lamina_run import run

    path = tmp_path / "gpu.mlir"
    path.write_text(GPU)
    with pytest.raises(DiagnosticError):
        run([str(path), "--random-inputs"])
    path = tmp_path / "diamond.mlir"
    path.write_text(DIAMOND)
    assert run([str(path), "--random-inputs", "--device-stats"]) == 0
    out = capsys.readouterr().out
    assert "device cpu:0: peak 2048 B, allocated 2048 B, copied to it 1024 B" in out
    assert "device cpu:1: peak 1024 B, allocated 1024 B, copied to it 1024 B" in out


def test_device_of_reads_the_plan_from_the_ir():
    module = parse_module(make_context(), DIAMOND.replace("builtin.module {", _OPT, 1))
    PlanDevicesPass().apply(make_context(), module)
    func = next(op for op in module.walk() if isinstance(op, graph.FuncOp))
    cpu0, cpu1 = DeviceAttr("cpu", 0), DeviceAttr("cpu", 1)
    assert [device_of(a) for a in func.args] == [cpu1, cpu1, cpu0]
    copies = [op for op in func.walk() if isinstance(op, graph.DeviceCopyOp)]
    assert [device_of(c.result) for c in copies] == [cpu0, cpu1]


def test_carry_device_keeps_the_placement_on_replacements():
    module = parse_module(make_context(), DIAMOND.replace("builtin.module {", _OPT, 1))
    PlanDevicesPass().apply(make_context(), module)
    add = next(op for op in module.walk() if isinstance(op, graph.AddOp))
    new = graph.SubOp(add.lhs, add.rhs, add.result.type)
    carry_device(add, [new])
    assert new.device == add.device == DeviceAttr("cpu", 1)


_OPT = "builtin.module attributes {lamina.phase = #lamina.phase<optimization>} {"


def _doc_blocks(lang: str) -> list[str]:
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "docs" / "devices.md").read_text()
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_docs_worked_example_is_what_the_tools_print(capsys):
    """docs/devices.md: the example is examples/two_devices.mlir, the planned IR
    is what lamina-opt prints, and the run's lines are what lamina-run prints."""
    from pathlib import Path

    from lamina.tools.lamina_opt import main as opt_main
    from lamina.tools.lamina_run import run

    source, planned = _doc_blocks("mlir")[:2]
    example = Path(__file__).parents[1] / "examples" / "two_devices.mlir"
    assert example.read_text() == source
    assert opt_main([str(example), "-p", "lift-lambdas,plan-devices"]) == 0
    assert capsys.readouterr().out.strip() == planned.strip()
    (session,) = _doc_blocks("text")
    command, *expected = session.strip().splitlines()
    assert run(command.split()[2:]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert [line for line in printed if not line.startswith("compile:")] == expected


def test_docs_fewest_copies_example_is_what_lamina_opt_prints(tmp_path, capsys):
    """docs/devices.md, "Example: the fewest copies": planning the page's
    source prints the page's plan, with the two copies the text counts."""
    from lamina.tools.lamina_opt import main as opt_main

    source, planned = _doc_blocks("mlir")[2:4]
    path = tmp_path / "fewest_copies.mlir"
    path.write_text(source)
    assert opt_main([str(path), "-p", "lift-lambdas,plan-devices"]) == 0
    printed = capsys.readouterr().out.strip()
    assert printed == planned.strip()
    assert printed.count("graph.device_copy") == 2


CALLS = """
builtin.module {
  graph.func @split(%x: tensor<64xf32> {device = #lamina.device<"cpu", 1>}) -> (tensor<64xf32> {device = #lamina.device<"cpu", 0>}, tensor<64xf32> {device = #lamina.device<"cpu", 1>}) {
    %a = graph.exp %x : (tensor<64xf32>) -> tensor<64xf32>
    %b = graph.neg %x : (tensor<64xf32>) -> tensor<64xf32>
    graph.return %a, %b : tensor<64xf32>, tensor<64xf32>
  }
  graph.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
    %a, %b = graph.call @split(%x) : (tensor<64xf32>) -> (tensor<64xf32>, tensor<64xf32>)
    %c = graph.mul %a, %b {device = #lamina.device<"cpu", 0>} : (tensor<64xf32>, tensor<64xf32>) -> tensor<64xf32>
    graph.return %c : tensor<64xf32>
  }
}
"""


def test_call_results_on_two_devices_run():
    """A callee delivering its results on two devices: the caller's buffers for
    them are allocated on the devices the callee's res_attrs name."""
    x = np.linspace(-1, 1, 64, dtype=np.float32)
    exe = lamina.compile(CALLS)
    exe.reset_device_stats()
    np.testing.assert_allclose(exe.run("main", x), np.exp(x) * -x, rtol=1e-6)
    stats = exe.device_stats()
    # %x lives on cpu:1 (its first consumer is @split's parameter there); @split
    # copies it to cpu:0 for the exp, whose result it delivers on cpu:0; @main
    # receives %b in a cpu:1 buffer and copies it to cpu:0 for the mul.
    assert stats["cpu:1"].allocated == 256 and stats["cpu:1"].copied == 0
    assert stats["cpu:0"].allocated == 768 and stats["cpu:0"].copied == 512
    assert all(s.live == 0 for s in stats.values())


def test_ahead_of_time_library_runs_on_two_devices(tmp_path):
    """The device runtime is linked into a .so (hidden: only the entry is exported)."""
    import ctypes
    import shutil
    import subprocess
    from pathlib import Path

    from lamina.tools.lamina_compile import run

    example = Path(__file__).parents[1] / "examples" / "two_devices.mlir"
    out = tmp_path / "two.so"
    assert run([str(example), "-o", str(out)]) == 0
    lib = ctypes.CDLL(str(out))
    assert not hasattr(lib, "__lamina_device_alloc")
    if shutil.which("nm") is None:
        pytest.skip("needs binutils' nm to find the entry symbol")
    exported = [  # the entry's C symbol (whatever prefix the C ABI gives @main)
        line.split()[-1]
        for line in subprocess.run(
            ["nm", "-D", "--defined-only", str(out)], capture_output=True, text=True, check=True
        ).stdout.splitlines()
        if " T " in line
    ]
    entry = next(name for name in exported if name.endswith("main"))
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 8), np.float32), rng.standard_normal((8, 8), np.float32)
    b, y = rng.standard_normal(8, np.float32), np.zeros((2, 8), np.float32)
    getattr(lib, entry)(*(a.ctypes.data_as(ctypes.c_void_p) for a in (x, w, b, y)))
    np.testing.assert_allclose(y, np.maximum(x @ w + b, 0) + x, rtol=1e-5, atol=1e-5)


def test_release_memory_between_calls_keeps_results_and_accounting():
    """`release_memory()` frees the blocks the runtime keeps for the next call
    (tests/test_abi.py counts the page faults they save); calls after it
    allocate afresh and compute the same."""
    rng = np.random.default_rng(0)
    a, b, c = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    exe = lamina.compile(DIAMOND)
    first = exe.run("main", a, b, c)
    exe.release_memory()
    exe.release_memory()  # nothing kept: a no-op
    np.testing.assert_array_equal(exe.run("main", a, b, c), first)
    assert all(s.live == 0 for s in exe.device_stats().values())
