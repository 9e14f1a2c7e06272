"""How a compile verifies (core/pass_manager.py's `compile_verify_policy`): at phase
boundaries by default, after every pass with `LAMINA_VERIFY_EACH=1` / `--verify-each`.

Verifying less never changes the code: a real compile of a CNN of seven distinct
conv kernels gives the same host unit text, kernel keys and object code either way
(and the same outputs), while the verifier runs fewer times.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from test_kernel_reuse import spy_on_splits
from test_parallel_lowering import WEIGHTS, X, program, reference

import lamina
from lamina.backends import codegen, kernel_cache, kernel_reuse
from lamina.core import pass_manager


def _cold(monkeypatch, verify_each: str):
    monkeypatch.setenv(pass_manager.VERIFY_EACH_ENV, verify_each)
    codegen.clear_cache()
    kernel_cache.clear()
    kernel_reuse.clear()
    return lamina.compile(program(), cache=False)


def test_boundaries_only_give_the_same_code_with_fewer_verifications(monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE", "0")
    splits = spy_on_splits(monkeypatch)
    calls: list[int] = []
    original = pass_manager.verify_module
    monkeypatch.setattr(pass_manager, "verify_module", lambda m: calls.append(1) or original(m))
    each = _cold(monkeypatch, "1")
    each_calls, calls[:] = len(calls), []
    boundaries = _cold(monkeypatch, "0")
    assert 0 < len(calls) < each_calls
    assert splits[-1].host == splits[-2].host
    assert [u.key for u in splits[-1].kernels] == [u.key for u in splits[-2].kernels]
    assert boundaries.compiled.objects == each.compiled.objects
    got = boundaries.run("main", X, *WEIGHTS)
    np.testing.assert_array_equal(got, each.run("main", X, *WEIGHTS))
    np.testing.assert_allclose(got, reference(), rtol=1e-4, atol=1e-4)


def test_lamina_run_verify_each_sets_the_policy_for_the_process():
    code = (
        "import argparse, os\n"
        "from lamina.tools.cli import add_instrument_arguments, instrument_options\n"
        "from lamina.core.pass_manager import compile_verify_policy\n"
        "p = argparse.ArgumentParser(); add_instrument_arguments(p)\n"
        "os.environ.pop('LAMINA_VERIFY_EACH', None)\n"
        "instrument_options(p.parse_args([]))\n"
        "print(compile_verify_policy()['verify_each'])\n"
        "instrument_options(p.parse_args(['--verify-each']))\n"
        "print(compile_verify_policy()['verify_each'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]
