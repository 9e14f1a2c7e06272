"""What the schedule passes share: the target's facts and knobs, overridden by pass options.

`schedule` and each rule's own pass (`schedule-register-block`, ...) read the
module's cpu target (`lamina.targets`, else the host): its `CpuFacts` and the
`ScheduleKnobs` derived from them. A pass option of a fact's name
(`vector_bits`, `vector_registers`, `cores`) or of a knob's name overrides it
for that pass; an impossible value is a diagnostic, never silently a
different kernel. The knob options come in groups, one per rule that reads
them, so each pass offers exactly the knobs it uses.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

from xdsl.dialects.builtin import ModuleOp

from lamina.core.diagnostics import op_error
from lamina.core.pass_base import LaminaPass
from lamina.dialects import loop
from lamina.dialects.lamina import Phase
from lamina.schedule.directives import directed_loops
from lamina.target.cpu_facts import CpuFacts
from lamina.target.function_knobs import KnobsAttrError, function_knobs
from lamina.target.registry import module_facts, module_knobs
from lamina.target.schedule_knobs import KNOB_NAMES, ScheduleKnobs, check_knob


@dataclass(frozen=True)
class ScheduleRulePass(LaminaPass):
    """Base of the schedule passes (not a pass itself): facts and knobs with overrides."""

    phases: ClassVar[frozenset[Phase]] = frozenset({Phase.LOWERING})
    requires: ClassVar[tuple[str, ...]] = ("lower-te",)

    vector_bits: int = 0
    """Override the target's vector width (bits; 0: the target's), e.g. 256 on an AVX-512 host."""
    vector_registers: int = 0
    """Override the target's vector register count (0: the target's)."""
    cores: int = 0
    """Override the number of cores parallel loops are balanced for (0: the target's)."""

    def facts(self, module: ModuleOp) -> CpuFacts:
        """The module's cpu target facts, then this pass's overrides."""
        if self.vector_bits not in (0, 128, 256, 512):
            raise op_error(
                module,
                f"{self.name}: vector_bits must be 128, 256 or 512 (0: the target's), got {self.vector_bits}",
            )
        if self.vector_registers and not 8 <= self.vector_registers <= 64:
            raise op_error(
                module,
                f"{self.name}: vector_registers must be 8..64 (0: the target's), got {self.vector_registers}",
            )
        if self.cores < 0:
            raise op_error(module, f"{self.name}: cores must be >= 1 (0: detect), got {self.cores}")
        facts = module_facts(module)
        if self.vector_bits:
            facts = facts.replace(vector_bits=self.vector_bits)
        if self.vector_registers:
            facts = facts.replace(vector_registers=self.vector_registers)
        if self.cores:
            facts = facts.replace(cores=self.cores)
        return facts

    def knobs(self, module: ModuleOp) -> ScheduleKnobs:
        """The module's knobs, then the knob options this pass was given (the
        knobs derived from facts read caches and lines, which no pass option
        overrides, and the vector width and register count, which
        `vector_bits` and `vector_registers` do)."""
        knobs = module_knobs(module)
        if self.vector_bits or self.vector_registers:
            derived = ScheduleKnobs.for_cpu(self.facts(module))
            knobs = knobs.replace(
                block_broadcast_registers=derived.block_broadcast_registers,
                pack_min_row_blocks=derived.pack_min_row_blocks,
                conv_channel_jam_everywhere=derived.conv_channel_jam_everywhere,
                conv_pointwise_jam_max=derived.conv_pointwise_jam_max,
                conv_direct_jam_max=derived.conv_direct_jam_max,
                conv_direct_row_jam=derived.conv_direct_row_jam,
                conv_stem_jam_wide=derived.conv_stem_jam_wide,
                conv_nchw_flat_pixels=derived.conv_nchw_flat_pixels,
                conv_flatten_rows=derived.conv_flatten_rows,
                conv_reduction_chunk=derived.conv_reduction_chunk,
                conv_chunk_min_channels=derived.conv_chunk_min_channels,
                matmul_panel_group=derived.matmul_panel_group,
                conv_weight_prefetch=derived.conv_weight_prefetch,
                conv_chunk_prefetch=derived.conv_chunk_prefetch,
                conv_chunk_prefetch_spread=derived.conv_chunk_prefetch_spread,
                conv_direct_prefetch=derived.conv_direct_prefetch,
                winograd_channel_jam=derived.winograd_channel_jam,
                winograd_jam_l1_bytes=derived.winograd_jam_l1_bytes,
            )
        given = {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name in KNOB_NAMES and getattr(self, f.name) is not None
        }
        for name, value in given.items():
            why = check_knob(name, value)
            if why is not None:
                raise op_error(module, f"{self.name}: {name} {why}, got {value}")
        return knobs.replace(**given)

    def function_knobs(self, func: loop.FuncOp, knobs: ScheduleKnobs) -> ScheduleKnobs:
        """`knobs` with the function's own `lamina.knobs` (a tuning record's, written by
        `apply-records`) applied: they win over the module's and this pass's."""
        try:
            return function_knobs(func, knobs)
        except KnobsAttrError as err:
            raise op_error(func, f"{self.name}: {err}") from None

    def default_scheduled(self, module: ModuleOp) -> list[loop.FuncOp]:
        """The loop functions that get the default schedules: those without a
        `lamina.schedule` directive (a directive replaces them)."""
        return [f for f in module.walk() if isinstance(f, loop.FuncOp) and not directed_loops(f)]


@dataclass(frozen=True)
class RegisterBlockOptions:
    """Knob options of register blocking and packing (`target/schedule_knobs.py`; unset: the target's)."""

    block_vector_choices: tuple[int, ...] | None = None
    block_max_vectors: int | None = None
    block_rows: int | None = None
    block_broadcast_registers: int | None = None
    block_jam_max_reduction: int | None = None
    pack_min_row_blocks: int | None = None
    pack_max_bytes: int | None = None
    parallel_min_iterations_per_core: int | None = None
    conv_channel_jam: int | None = None
    conv_channel_jam_everywhere: int | None = None
    conv_pointwise_jam_max: int | None = None
    conv_direct_jam_max: int | None = None
    conv_direct_row_jam: int | None = None
    conv_stem_channel_jam: int | None = None
    conv_stem_jam_wide: int | None = None
    conv_grouped_jam_min_row: int | None = None
    conv_reduction_chunk: int | None = None
    conv_chunk_min_channels: int | None = None
    matmul_panel_group: int | None = None
    conv_weight_prefetch: int | None = None
    conv_chunk_prefetch: int | None = None
    conv_chunk_prefetch_spread: int | None = None
    conv_direct_prefetch: int | None = None
    block_rows_outside_columns: int | None = None
    winograd_channel_jam: int | None = None
    winograd_jam_l1_bytes: int | None = None


@dataclass(frozen=True)
class ParallelOptions:
    """Knob options of parallel balancing (`target/schedule_knobs.py`; unset: the target's)."""

    parallel_min_iterations_per_core: int | None = None
    parallel_team_min_work: int | None = None
    parallel_grain_work: int | None = None
    parallel_rows_first: int | None = None


@dataclass(frozen=True)
class EpilogueSinkOptions:
    """Knob options of epilogue sinking (`target/schedule_knobs.py`; unset: the target's)."""

    epilogue_jam_max_ops: int | None = None
    epilogue_step_vectors: int | None = None


@dataclass(frozen=True)
class FlattenRowsOptions:
    """Knob options of row flattening (`target/schedule_knobs.py`; unset: the target's)."""

    conv_flatten_rows: int | None = None
    conv_flatten_min_steps_per_core: int | None = None
    conv_reduction_chunk: int | None = None
    conv_chunk_min_channels: int | None = None
    conv_nchw_flat_pixels: int | None = None
    conv_channel_jam: int | None = None
    parallel_collapse_below: int | None = None


@dataclass(frozen=True)
class GatherReuseOptions:
    """Knob options of gather reuse (`target/schedule_knobs.py`; unset: the target's)."""

    gather_line_bytes: int | None = None


__all__ = [
    "EpilogueSinkOptions",
    "FlattenRowsOptions",
    "GatherReuseOptions",
    "ParallelOptions",
    "RegisterBlockOptions",
    "ScheduleRulePass",
]
