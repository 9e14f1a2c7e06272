"""The runtime's host-feature check (runtime/cpu_features.py): LLVM names, Linux flags, errors."""

from __future__ import annotations

import pytest

from lamina.runtime import cpu_features


def test_llvm_names_map_to_linux_flags():
    assert cpu_features.linux_flag("sse4.1") == "sse4_1"
    assert cpu_features.linux_flag("avx512vnni") == "avx512_vnni"
    assert cpu_features.linux_flag("avx2") == "avx2"


def test_required_keeps_only_instruction_sets():
    assert cpu_features.required(["xsave", "avx2", "fma", "cmov"]) == ["avx2", "fma"]


def test_missing_and_check_host_against_fake_flags(monkeypatch):
    monkeypatch.setattr(cpu_features, "host_flags", lambda: frozenset({"sse4_1", "avx2", "fma"}))
    assert cpu_features.missing(["avx2", "sse4.1", "avx512f", "xsave"]) == ["avx512f"]
    cpu_features.check_host(["avx2", "fma"], "model.lamina")
    with pytest.raises(cpu_features.HostFeatureError, match=r"model\.lamina .*avx512f"):
        cpu_features.check_host(["avx512f", "avx2"], "model.lamina")


def test_unknown_host_refuses_nothing(monkeypatch):
    monkeypatch.setattr(cpu_features, "host_flags", lambda: None)
    assert cpu_features.missing(["avx512f"]) == []


def test_this_host_runs_what_llvm_says_it_has():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    host = [k for k, on in llvm.get_host_cpu_features().items() if on]
    assert cpu_features.missing(host) == []
