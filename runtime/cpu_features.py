"""Which CPU features this host has, read without LLVM, and a check before running code.

Code compiled for features the host lacks (an AVX-512 build on an AVX2-only
machine) dies with SIGILL at its first vector instruction. Everything that
loads compiled code — the disk cache, an artifact directory, a JIT engine
built for an explicit `isa` — calls `check_host` first, so the user gets a
clear error naming the missing features instead.

Features are spelled as LLVM spells them (`avx2`, `fma`, `avx512f`,
`sse4.1`), the names code generation uses (target/cpu_facts.py). The host's
are read from Linux's `/proc/cpuinfo` flags (spelled slightly differently:
`sse4_1`), so the runtime needs neither llvmlite nor the compiler. Where the
flags cannot be read (another OS), the host is assumed able: the check is a
guard, never a reason to refuse code that would run.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from pathlib import Path

_CPUINFO = Path("/proc/cpuinfo")

_LLVM_TO_LINUX = {
    "sse3": "pni",
    "bmi": "bmi1",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "lzcnt": "abm",
    "sahf": "lahf_lm",
    "cx16": "cx16",
    "pclmul": "pclmulqdq",
    "rdrnd": "rdrand",
    "avx512vp2intersect": "avx512_vp2intersect",
    "avx512bf16": "avx512_bf16",
    "avx512bitalg": "avx512_bitalg",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512vnni": "avx512_vnni",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512fp16": "avx512_fp16",
}
"""LLVM feature name → Linux `/proc/cpuinfo` flag, where the two differ."""

INSTRUCTION_SET_FEATURES = frozenset(
    {
        "sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "fma", "f16c",
        "avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512cd", "avx512vnni",
        "avx512bf16", "avx512fp16", "avx512ifma", "avx512vbmi", "avx512vbmi2",
        "avx512bitalg", "avx512vpopcntdq", "bmi", "bmi2", "popcnt", "lzcnt", "movbe",
    }
)  # fmt: skip
"""The features whose absence makes generated code fault (vector and bit-manipulation ISAs).

LLVM's feature strings also name tuning hints and system features (`xsave`,
`cmov`, ...); only these are recorded in artifacts and checked."""


class HostFeatureError(RuntimeError):
    """Compiled code needs CPU features this host does not have."""


def linux_flag(feature: str) -> str:
    """The `/proc/cpuinfo` flag of an LLVM feature name."""
    return _LLVM_TO_LINUX.get(feature, feature.replace(".", "_"))


@functools.cache
def host_flags() -> frozenset[str] | None:
    """The host's `/proc/cpuinfo` flags, or None where they cannot be read."""
    try:
        text = _CPUINFO.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def required(features: Iterable[str]) -> list[str]:
    """The instruction-set features among `features` (LLVM names), sorted: what code needs."""
    return sorted(f for f in features if f in INSTRUCTION_SET_FEATURES)


def missing(features: Iterable[str]) -> list[str]:
    """The features (LLVM names) in `features` that the host lacks; [] if unknown."""
    flags = host_flags()
    if flags is None:
        return []
    return [f for f in required(features) if linux_flag(f) not in flags]


def check_host(features: Iterable[str], what: str) -> None:
    """Raise `HostFeatureError` if this host lacks any instruction-set feature of `features`.

    `what` names the code (an artifact's path, a target such as `cpu{isa=avx512}`)."""
    lacking = missing(features)
    if lacking:
        raise HostFeatureError(
            f"{what} was compiled for CPU features this host does not have: "
            f"{', '.join(lacking)}; rebuild it here, or for a smaller instruction set "
            "(--target 'cpu{isa=avx2}'; see docs/performance.md)"
        )


__all__ = ["HostFeatureError", "check_host", "host_flags", "linux_flag", "missing", "required"]
