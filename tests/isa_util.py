"""The two vector builds tests run on: AVX2 (8 lanes) on every x86-64 host this
suite supports, AVX-512 (16 lanes) where the host has it (skipped elsewhere)."""

from __future__ import annotations

import pytest

from lamina.target.cpu_facts import host_cpu_facts, isa_cpu_facts
from lamina.target.schedule_knobs import ScheduleKnobs

HOST_HAS_AVX512 = "avx512f" in host_cpu_facts().features
needs_avx512 = pytest.mark.skipif(not HOST_HAS_AVX512, reason="the host has no AVX-512")

LANES = {"avx2": 8, "avx512": 16}
"""f32 lanes of one vector register of each build."""

BOTH_ISAS = [
    pytest.param("avx2", id="avx2"),
    pytest.param("avx512", marks=needs_avx512, id="avx512"),
]
"""`@pytest.mark.parametrize("isa", BOTH_ISAS)`: a test on each build (`cpu{isa=...}`)."""


def knobs_as(name: str) -> ScheduleKnobs:
    """The derived schedule knobs of this host's facts as the CPU `name` (its features,
    vector width and register count): what a default decided by CpuFacts gives there."""
    host = host_cpu_facts()
    features = isa_cpu_facts(name).features if name != host.cpu_name else host.features
    bits, registers = (512, 32) if "avx512f" in features else (256, 16)
    facts = host.replace(
        cpu_name=name, features=features, vector_bits=bits, vector_registers=registers
    )
    return ScheduleKnobs.for_cpu(facts)
