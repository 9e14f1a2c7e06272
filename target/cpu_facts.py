"""What the code generator and the schedules need to know about a CPU.

Layouts (the channel block of a blocked conv2d), schedules (the register
block of a matmul micro-kernel, tile sizes that fit a cache level) and the
LLVM back end (which vector width to prefer) all read the same facts, so
they are gathered once here. `host_cpu_facts()` detects them on the machine
Lamina runs on: the CPU name and features from LLVM (the same ones codegen
hands to its TargetMachine) and the cache sizes from Linux's sysfs, with
conservative defaults where sysfs is missing. A target can pin other
values with `CpuFacts.replace(...)` (for example a 256-bit vector width on an
AVX-512 machine, to compare).

`isa_cpu_facts(isa)` gives the facts of another instruction set than the
host's (the target option `isa`, docs/performance.md): `avx2` (LLVM's
`haswell`: AVX2 + FMA, 16 ymm registers, no AVX-512 feature at all),
`avx512` (the host when it has AVX-512, else LLVM's `x86-64-v4`), `host`, or
one of the LLVM CPU names of `KNOWN_CPUS`. Its features are the CPU's own,
not the host's, so the code LLVM generates, the vector width and register
count the schedules size their blocks for, and the cache keys all follow it.
The cache sizes stay the host's (the machine the code is tuned and timed on).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from pathlib import Path

from lamina.runtime.host import amd_zen, usable_cores

_SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")

_DEFAULT_CACHES = {"l1d": 32 * 1024, "l2": 512 * 1024, "l3": 8 * 1024 * 1024, "line": 64}
"""Sizes assumed when the OS does not report them: small enough to be safe."""


@dataclass(frozen=True)
class CpuFacts:
    """Code-generation facts of one CPU (all sizes in bytes, widths in bits)."""

    cpu_name: str
    """LLVM's name for the CPU (`znver4`, `skylake-avx512`, ...)."""
    features: frozenset[str]
    """LLVM feature names that are enabled (`avx2`, `fma`, `avx512f`, ...)."""
    vector_bits: int
    """Width of the widest vector registers code should use (128, 256, 512)."""
    vector_registers: int
    """Architectural vector registers available at that width (16 or 32)."""
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    cores: int
    """Cores Lamina may use (the process's CPU affinity)."""
    cache_line_bytes: int = 64
    """Bytes per L1d cache line (sysfs `coherency_line_size`; 64 on every x86 core)."""

    def lanes(self, element_bits: int) -> int:
        """Elements of `element_bits` bits in one vector register (f32 → 16 on AVX-512)."""
        return max(1, self.vector_bits // element_bits)

    @property
    def has_fma(self) -> bool:
        return "fma" in self.features or "avx512f" in self.features

    def replace(self, **changes: object) -> CpuFacts:
        """These facts with some overridden (a target's options)."""
        return dataclasses.replace(self, **changes)


_X86_64_V2 = frozenset(
    {"sse", "sse2", "sse3", "ssse3", "sse4.1", "sse4.2", "popcnt", "cx16", "sahf"}
)
_X86_64_V3 = _X86_64_V2 | {"avx", "avx2", "fma", "f16c", "bmi", "bmi2", "lzcnt", "movbe", "xsave"}
_X86_64_V4 = _X86_64_V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_ICELAKE = _X86_64_V4 | {
    "avx512vnni", "avx512vbmi", "avx512vbmi2", "avx512ifma", "avx512bitalg", "avx512vpopcntdq"
}  # fmt: skip

KNOWN_CPUS: dict[str, frozenset[str]] = {
    "x86-64-v2": _X86_64_V2,
    "x86-64-v3": _X86_64_V3,
    "x86-64-v4": _X86_64_V4,
    "haswell": _X86_64_V3,
    "broadwell": _X86_64_V3,
    "skylake": _X86_64_V3,
    "alderlake": _X86_64_V3,
    "znver1": _X86_64_V3,
    "znver2": _X86_64_V3,
    "znver3": _X86_64_V3,
    "skylake-avx512": _X86_64_V4,
    "cascadelake": _X86_64_V4 | {"avx512vnni"},
    "icelake-client": _ICELAKE,
    "icelake-server": _ICELAKE,
    "tigerlake": _ICELAKE,
    "sapphirerapids": _ICELAKE | {"avx512bf16", "avx512fp16"},
    "znver4": _ICELAKE | {"avx512bf16"},
}
"""LLVM CPU names `isa` accepts → the instruction-set features of that CPU that
generated code may use (LLVM enables them for the name; the table is what
`CpuFacts.features` reports and what a host is checked for before running)."""

ISA_ALIASES = {"avx2": "haswell", "avx512": "x86-64-v4"}
"""Instruction-set names → the LLVM CPU they build for (`avx512` is the host
itself when the host has AVX-512: the same code, the host's tuning)."""

ISA_NAMES = ("host", *ISA_ALIASES, *KNOWN_CPUS)
"""Every value the target option `isa` accepts."""


def check_isa(value: object) -> str | None:
    """Why `value` is not a valid `isa` (None: it is)."""
    if isinstance(value, str) and value in ISA_NAMES:
        return None
    return f"must be one of {', '.join(ISA_NAMES)}"


def isa_cpu_facts(isa: str) -> CpuFacts:
    """The facts of code built for `isa` (see the module docstring) on this machine."""
    host = host_cpu_facts()
    if isa == "host" or (isa == "avx512" and "avx512f" in host.features):
        return host
    name = ISA_ALIASES.get(isa, isa)
    if name == host.cpu_name:
        return host
    features = KNOWN_CPUS[name]
    bits, registers = _vector_shape(features)
    return host.replace(
        cpu_name=name, features=features, vector_bits=bits, vector_registers=registers
    )


def llvm_features(facts: CpuFacts) -> str:
    """The feature string of LLVM's TargetMachine for `facts`: the host's own flags for
    the host's CPU (plus `NO_GATHER_TUNING` on AMD Zen); none (the defaults of the CPU
    name) for a named CPU."""
    import llvmlite.binding as llvm

    if facts.cpu_name == llvm.get_host_cpu_name():
        features = llvm.get_host_cpu_features().flatten()
        if amd_zen(facts.cpu_name):
            features += "," + NO_GATHER_TUNING
        return features
    return ""


NO_GATHER_TUNING = "+prefer-no-gather"
"""LLVM's tuning flag that keeps its vectorizers from emitting gathers. On Zen 4
(`znver4` with its AVX-512 flags) the SLP vectorizer turned the strided reads
of layout transforms and of a channel reduction into `vgatherdps`, which Zen
executes element by element (microcoded): ShuffleNetV2's AVX-512 build had 350
gathers, its AVX2 build (CPU `haswell`) none, and its layout transforms took
3-3.5x their AVX2 time. Measured without the gathers (one thread, thread CPU,
interleaved rounds): ShuffleNetV2 0.974x, GoogLeNet 0.969x, MobileNetV3 and
EfficientNet-B0 unchanged (docs/performance.md, "Gathers on Zen 4")."""


TWO_WIDE_FMA_CPUS = frozenset(
    {
        "skylake-avx512",
        "cascadelake",
        "cooperlake",
        "icelake-server",
        "sapphirerapids",
        "emeraldrapids",
        "graniterapids",
    }
)
"""LLVM CPU names of the Intel server cores that issue two 512-bit FMAs per
cycle (ports 0+1 fused and port 5). Zen 4 double-pumps one, the client cores
with AVX-512 (Ice Lake, Tiger Lake) have one."""


def wide_fma_pipes(facts: CpuFacts) -> int:
    """512-bit FMA pipes of `facts`' CPU: 2 on `TWO_WIDE_FMA_CPUS`, 1 on other
    AVX-512 CPUs (znver4, named or generic `x86-64-v4`), 0 without AVX-512.
    A schedule knob's derived default may read it (`wide_fma_pipes`): where
    compute is twice as fast, loads and loop overhead per FMA show."""
    if facts.vector_bits < 512 or "avx512f" not in facts.features:
        return 0
    return 2 if facts.cpu_name in TWO_WIDE_FMA_CPUS else 1


def _vector_shape(features: frozenset[str]) -> tuple[int, int]:
    if "avx512f" in features:
        return 512, 32
    if "avx2" in features or "avx" in features:
        return 256, 16
    return 128, 16


def _sysfs_cache_sizes() -> dict[str, int]:
    """L1d/L2/L3 sizes and the L1d line size of cpu0 as Linux reports them (missing: defaults)."""
    sizes = dict(_DEFAULT_CACHES)
    if not _SYSFS_CACHE.is_dir():
        return sizes
    for index in _SYSFS_CACHE.glob("index*"):
        try:
            level = (index / "level").read_text().strip()
            kind = (index / "type").read_text().strip()
            size = _parse_size((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        key = {"1": "l1d", "2": "l2", "3": "l3"}.get(level)
        if key and (key != "l1d" or kind == "Data"):
            sizes[key] = size
        if key == "l1d" and kind == "Data":
            try:
                sizes["line"] = int((index / "coherency_line_size").read_text().strip())
            except (OSError, ValueError):
                pass
    return sizes


def _parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024 * 1024, "G": 1024 * 1024 * 1024}
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


@functools.cache
def host_cpu_facts() -> CpuFacts:
    """The facts of the machine this process runs on (detected once)."""
    import llvmlite.binding as llvm

    name = llvm.get_host_cpu_name()
    features = frozenset(key for key, enabled in llvm.get_host_cpu_features().items() if enabled)
    bits, registers = _vector_shape(features)
    caches = _sysfs_cache_sizes()
    return CpuFacts(
        cpu_name=name,
        features=features,
        vector_bits=bits,
        vector_registers=registers,
        l1d_bytes=caches["l1d"],
        l2_bytes=caches["l2"],
        l3_bytes=caches["l3"],
        cores=usable_cores(),
        cache_line_bytes=caches["line"],
    )
