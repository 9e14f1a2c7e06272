"""Every tuning knob of the schedules and kernel strategies, in one frozen dataclass.

The rules in `lamina.schedule` and the strategies in `lamina.kernels.strategy`
make their decisions from two inputs: the CPU's facts (`CpuFacts`: vector
width, registers, caches, cores -- what the hardware *is*) and these knobs
(thresholds and preferences -- what was *measured* to pay on it). Each knob
was measured on one CPU (an AVX-512 Zen 4 VM with two cores, unless its
docstring says otherwise); `ScheduleKnobs.for_cpu(facts)` derives the
defaults, the ones tied to a cache or line size from the facts.

The knobs are the space a schedule search explores: each can be overridden
by a target option (`--target 'cpu{pack_min_row_blocks=16}'`, validated in
`target/registry.py`) or by the option of the same name of the pass that
reads it (`-p 'schedule{pack_min_row_blocks=16}'`, or the rule's own pass,
`schedule-register-block{...}`). docs/performance.md lists them (generated
from this module by `lamina-docs`). The module sits beside `CpuFacts` in
the target model (which validates and records knob options), below the
scheduling and kernel packages that read it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from dataclasses import dataclass, field, fields

from lamina.target.cpu_facts import CpuFacts, amd_zen, wide_fma_pipes

_DERIVED = "derived"
"""Metadata key: the formula that derives a knob's default from `CpuFacts`, a Python
expression over the facts' fields (and `lanes(bits)`, `min`, `max`). It is the one
source of that default: `for_cpu` evaluates it and the docs table prints it."""


@dataclass(frozen=True)
class ScheduleKnobs:
    """The tuning knobs (see the module docstring); `for_cpu` gives the defaults."""

    # -- parallelisation (`schedule/parallel.py`) ---------------------------------------
    parallel_min_work: int = 1 << 19
    """Tensor reads (region evaluations times the region's `te.read`s, counted
    as at least two) below which a nest stays serial. Each parallel region wakes
    the sleeping workers (libgomp's passive wait policy, which Lamina sets:
    docs/environment.md), measured at 20-30 us on a 2-vCPU VM, more than a nest
    of 2**18 vectorized two-read evaluations takes on one core. Raised from
    2**14 evaluations: at two threads the MLP of examples/onnx_models.py went
    from 0.53 to 0.37 ms and the transformer encoder from 6.7 to 5.4 ms (its
    reshapes, bias adds and small matmuls now run on the calling thread alone).
    Counted in reads rather than evaluations so that a region that reads much
    per element (Winograd's output transform: ten reads) gets the team as
    soon as it is worth it, while a nest of one or two reads (an `exp`, a bias
    add) keeps the 2**18-evaluation threshold."""

    parallel_gather_reads: int = 8
    """What one read gathered by the vectorized loop (strided along it) counts
    for in `parallel_min_work`: a 16-lane gather costs about as much as 16
    scalar loads, so a layout transform into or out of `NCHW16c` (one gather
    per vector) is worth a thread team at 8x fewer elements than a contiguous
    copy. Measured, AVX-512: NCHW -> NCHW16c of 1x64x56x56 f32 takes 80 us on
    one thread, as long as a 2-read contiguous copy of about 2**20 elements."""

    parallel_team_min_work: int = 1 << 15
    """Tensor reads (a gathered read counting `parallel_gather_reads`) from which a
    spatial nest left serial by `parallel_min_work` still shares its iterations
    with the workers of a call's thread team (`LAMINA_CALL_TEAM`), and only
    there: `schedule-parallel` marks its loop `lamina.team_only`, which runs
    on the calling thread alone outside a team call. A region of the call
    team costs a few microseconds when the workers spin between kernels,
    where a libgomp region wakes them (20-50 us); set above
    `parallel_min_work` to turn it off. Measured: docs/performance.md,
    "Threads"."""

    parallel_grain_work: int = 0
    """Tensor reads (a gathered read counting `parallel_gather_reads`, about 30 per ns of
    one core on Zen 4 for convolutions and layout transforms alike) below which a
    kernel's parallel loops run on the calling thread alone (`serial_below_grain`,
    schedule/parallel.py; 0: never). Two threads save half of a region's work W and
    pay its fork/join cost c (the call team's post, the worker's join, the close and
    the worker's output read back from its core's cache): a region is worth sharing
    only when W > 2c. Measured: docs/performance.md, "Slow episodes of the machine"."""

    parallel_min_iterations_per_core: int = 2
    """A loop is handed `parallel` from the loop around it (the column blocks of a
    micro-kernel, the rows inside a one-iteration parallel loop) only when it has
    at least this many iterations per core. Not measured on its own: the value
    the schedule has used since the column-block distribution was measured
    (with fewer iterations than two per core, the last wave of a 3-iteration
    loop on 2 cores leaves one core idle for a third of the time)."""

    parallel_rows_first: int = 0
    """1: when `share_rows` collapses a parallel loop of blocks with the rows it
    holds, the threads split the rows (each running every block of its rows, a
    chunk block by block) where that reads fewer bytes per thread than splitting
    the blocks (`rows_first_reads_less`, schedule/parallel.py: a pointwise
    convolution at 14x14 or larger with few output-channel blocks); 0 (default):
    always the blocks. Off until a measurement on an idle machine shows a gain:
    on the loaded 2-vCPU Xeon VM the A/B moved by less than its noise
    (docs/performance.md, "Rows first"). N >= 2: rows first unless the buffers read
    by the block only (weights) hold more than N times the bytes of those read at an
    index that depends on the row (`rows_first_crosses_less`: layout transforms,
    slices and depthwise convolutions too, so that consecutive kernels split the same
    rows), and a block loop's rows peeled at the padding are merged into one loop
    first (`merge_peeled_rows`): 3 % faster at two threads on ShuffleNetV2, DenseNet-121
    and the MobileNets on the loaded VM, the other networks within the noise; off until
    an idle machine confirms it (docs/performance.md, "One row split for a chain of
    kernels")."""

    parallel_collapse_below: int = 32
    """A parallel loop of fewer iterations than this whose body is one spatial
    loop of constant bounds shares that loop's iterations too (`schedule` marks
    it parallel, `lower-to-llvm` collapses the two; 1: never). A
    batch-1 convolution's parallel loop runs over output-channel blocks, 2-12 of
    them in MobileNetV2's layers: on two threads 9 blocks split 5/4, and with
    2 a late-waking worker leaves both to the calling thread. Collapsed with
    the rows they are 56-672 iterations handed out in chunks on demand."""

    parallel_column_blocks_per_core: int = 2
    """A matrix-vector product (a batch-1 classifier) worth a team
    (`parallel_min_work`) shares its columns among the threads in at least this
    many blocks per core (0: never), its constant matrix stored in panels of
    one block each (`vector_column_panel`, schedule/parallel.py): 1000
    outputs on two cores are 4 blocks of 250. Decided by the matmul builder
    (the panels are a layout of the constant), so a model-wide knob."""

    # -- loop order (`schedule/loop_order.py`) -------------------------------------------
    set_aliasing_bytes: int = 2048
    """A strided access whose stride is a multiple of this many bytes puts the
    lines of one vector's elements into at most two L1 sets (64-byte lines, a
    4 KiB way on every x86 core measured): a 16-lane gather needs 16 lines where
    8 ways exist, and every gather misses again. Measured, NCHW -> NCHW16c of
    1x16x64x64 f32 (plane stride 16 KiB), vectorized along the channels: 115 us."""

    # -- gather reuse (`schedule/gather_reuse.py`) ---------------------------------------
    gather_line_bytes: int = field(default=64, metadata={_DERIVED: "cache_line_bytes"})
    """Bytes per cache line: the period of a gather whose lines are worth reusing
    (a conv2d's output transform out of NCHW16c, 1x64x56x56 f32: 150 -> 90 us)."""

    # -- register blocking (`schedule/register_block.py`) --------------------------------
    block_vector_choices: tuple[int, ...] = (2, 1, 4, 3)
    """Vectors per accumulator row of a register block, in order of preference:
    the first whose width divides the row is taken (2 vectors: NR = 32 on
    AVX-512, the best of 16/32/48/64 measured on matmul 256-1024)."""

    block_max_vectors: int = 4
    """A row not divided by any choice is blocked whole when it is at most this
    many vectors long (a classifier's 10 outputs: one masked vector per row,
    2x faster than accumulating the row in memory)."""

    block_rows: int = 0
    """Rows of a register block (MR); 0: as many as leave room for MR x NR
    accumulators, NR B vectors and the broadcasts (`block_broadcast_registers`)
    in the vector registers, preferably a divisor of M (measured on AVX-512:
    8 x 32 beats 12 x 32 and 14 x 32, which spill; with 16 registers the rows
    that cover M in the fewest FMA cycles, e.g. 6 x 16 with a tail of 4 rows at
    M = 64 or 1024 rather than 4 x 16: `schedule/register_block.py`)."""

    block_broadcast_registers: int = field(
        default=0, metadata={_DERIVED: "1 if vector_registers <= 16 else 0"}
    )
    """Vector registers a register block keeps for the broadcasts of A; 0: one
    per row. With 32 registers (AVX-512) LLVM hoists the MR broadcasts of a
    reduction step before its FMAs, so each row needs one (measured: 8 x 32).
    With 16 (AVX2) that would leave 4 x 16 (8 accumulators); a block sized for
    one broadcast at a time, each right before its row's FMAs (BLIS's
    Haswell/Zen kernel: 6 x 16 = 12 accumulators + 2 B vectors + 1
    broadcast), is what LLVM's scheduler emits when registers are short
    (checked in the assembly: no spills)."""

    # -- packing (`schedule/packing.py`) -------------------------------------------------
    pack_min_row_blocks: int = field(
        default=32,
        metadata={_DERIVED: "8 if vector_bits < 512 else 32 if amd_zen else 4"},
    )
    """Row blocks that must share a column panel read in place (along its rows)
    before copying it into a contiguous panel pays. The copy reads the panel
    once more, from L3 or memory, before any FMA; read in place, the first row
    block streams it (the hardware prefetcher follows the constant row stride)
    overlapped with its FMAs, and the other row blocks find it in L2. Measured,
    AVX-512, one thread, packed -> in place: 64x784 @ 784x512 0.51 -> 0.46 ms,
    192x784 @ 784x512 1.42 -> 1.38, 64x1024 @ 1024x1024 1.46 -> 1.34, matmul
    256 and 512 equal; matmul 1024 (128 row blocks) 19.9 -> 21.8 ms, so it
    stays packed. A panel read down its columns (attention's K^T) is always
    packed: the copy transposes it once instead of gathering on every use
    (attention 0.87 -> 1.12 ms unpacked). With 256-bit vectors a column
    block (NR = 16 f32) is one 64-byte line per panel row, and rows a power
    of two apart (2 KiB at N = 512) crowd into two L1 sets: packing pays
    from 8 row blocks (measured, AVX2 build on Zen 4, one thread, best of 40:
    64x784 @ 784x512 0.74 -> 0.56 ms, 64x512 @ 512x512 0.43 -> 0.38 ms).
    On Intel AVX-512 cores (any CPU but AMD's Zen, `amd_zen`: Sapphire/Emerald
    Rapids measured) 4: their L2 streamer follows accesses within one 4 KiB
    page, and a panel read in place touches two lines per row with rows 2 KiB
    or more apart, so nothing prefetches it and every row block waits on L2
    or L3; the copy's independent loads overlap those misses. Measured,
    Emerald Rapids, one thread, per kernel (21 interleaved rounds), 32 -> 4:
    64x784 @ 784x512 + bias + relu 669 -> 411 us (2, 4 and 8 equal), 64x512 @
    512x512 257 -> 253; attention's 128x256 @ 256x256 projections 390 -> 330
    (docs/performance.md, "Small-M matmuls on Intel AVX-512")."""

    pack_max_bytes: int = field(default=512 * 1024, metadata={_DERIVED: "l2_bytes // 2"})
    """Largest packed panel: half of L2, so the panel stays there while the
    other operand's rows stream through the other half."""

    # -- code generation hints (`lower-to-llvm`) ------------------------------------------
    whole_vector_lanes: int = field(default=8, metadata={_DERIVED: "min(8, lanes(32))"})
    """A `vectorized` loop whose constant trip count is a multiple of this is
    vectorized in whole vectors with no scalar remainder; codegen keeps LLVM
    from unrolling it first (a 16-lane channel loop fully unrolled before
    vectorization ran 8x slower). At most the f32 lanes of the vector unit."""

    # -- convolution strategy (`kernels/strategy.py`) ------------------------------------
    conv_channel_block: int = 0
    """Channel block of a blocked conv2d (`NCHW{c}c`); 0: one vector of the
    element type (16 f32 on AVX-512), so the innermost output-channel loop
    fills one vector register."""

    conv_channel_jam: int = 0
    """Output-channel blocks a channel-blocked convolution's micro-kernel
    computes per input broadcast (`schedule/register_block.py`); 0: the first
    of `conv_channel_jam_choices` that divides the blocks."""

    conv_channel_jam_choices: tuple[int, ...] = (3, 2)
    """Output-channel blocks per micro-kernel step of a channel-blocked
    pointwise convolution whose output row is longer than one register block
    (`conv_channel_jam` 0), in order of preference: the first dividing the
    blocks is taken (none: 1), and the rows (output columns) shrink so that
    rows x blocks accumulators fit the registers. 3 before 2: on AVX2 both
    get 4 rows at 28 or 56 columns, 3 blocks 12 accumulators (MLAS's FMA3
    pointwise kernel holds 3 x 4), 2 blocks 8 (measured, 24->144 at 56x56,
    the kernel alone: 0.248 ms against 0.264)."""

    conv_channel_jam_everywhere: int = field(
        default=0, metadata={_DERIVED: "1 if vector_registers <= 16 else 0"}
    )
    """1: a channel-blocked pointwise convolution (and Winograd's product)
    jams output-channel blocks on every row length and L1 footprint; 0: only
    on rows longer than one one-block register block whose jammed weights
    and input fit L1 (`schedule/register_block.py`, `channel_jam`). With
    1, direct convolutions whose reduction steps through whole input-channel
    blocks are jammed too (and stems, `conv_stem_channel_jam`), and the
    rows of a jammed block are balanced (7 columns as 4 + 3 rows, 14 as 5
    + 5 + 4). Derived from the register
    count: with 16 (AVX2, one broadcast register) a one-block step costs a
    broadcast load per FMA, more than two FMA pipes are fed; measured on
    the AVX2 build (Zen 4, one thread, same process), 0.69-1.01x the time
    of the rule off on ResNet-50's and MobileNet's convolution shapes
    (docs/performance.md, "AVX2 convolutions: channel jam everywhere").
    With 32 registers (AVX-512) 0: there the rule off was measured."""

    conv_pointwise_jam_max: int = field(
        default=0, metadata={_DERIVED: "4 if wide_fma_pipes >= 2 else 0"}
    )
    """Most output-channel blocks per step of a channel-blocked pointwise
    (1x1) convolution jammed on every row length and L1 footprint (0: the
    rule of `conv_channel_jam_choices`, which leaves rows of 7 and 14
    columns and jams that overflow L1 at one block). Nonzero: the largest
    F from this down to 2 that divides the output-channel blocks and whose
    register block (rows x F accumulators) leaves no tail block of fewer
    than half its rows (7 columns: 4 blocks take 5 + 2 rows, so 3 or 2).
    Derived from the CPU: on a core with two 512-bit FMA pipes
    (`wide_fma_pipes`, Intel Xeon since Skylake-SP) a one-block step of
    R rows is R broadcasts + 1 weight load for R FMAs, which the loads
    limit; measured on Emerald Rapids (AVX-512, one thread, the 1x1 kernel
    alone against onnxruntime's, docs/performance.md "Pointwise
    convolutions on two 512-bit FMA pipes"): ResNet-50's 512->128 at 28x28
    1.37 -> 0.95x onnxruntime, 1024->256 at 14x14 1.19 -> 0.94x, 2048->512
    at 7x7 1.48 -> 1.04x, MobileNetV2's 7x7 and 14x14 expansions and
    projections 1.03-1.42 -> 0.81-1.02x. Zen 4 (one double-pumped pipe,
    where two blocks at 7x7 measured equal or 2-4 % slower) and AVX2 keep 0."""

    conv_direct_jam_max: int = field(
        default=0, metadata={_DERIVED: "4 if wide_fma_pipes >= 2 else 0"}
    )
    """Most output-channel blocks per step of a dense direct convolution (a
    3x3 stride 2, a 3x3 on an image Winograd leaves alone) whose reduction
    steps through whole input-channel blocks, chosen as for a pointwise one
    (`conv_pointwise_jam_max`: the largest F down to 2 whose register block
    leaves no tail block under half its rows, a divisor of the blocks
    first); 0: the rule of `conv_channel_jam_everywhere` (on 32 registers:
    one block per step). Derived from the CPU: on two 512-bit FMA pipes
    (`wide_fma_pipes`) one block of R rows is R broadcasts and a weight load
    per R FMAs, more loads than the pipes are fed. Measured on Emerald
    Rapids (one thread, the kernel `depthwise 3x3 -> 3x3 stride 2 + bias ->
    relu` alone with 64 MB written between calls, against onnxruntime's
    node; docs/performance.md, "Reduction chunks on two 512-bit FMA pipes"):
    ResNet-50's 128->128 at 56x56 stride 2 1.25 -> 1.05x onnxruntime (4
    blocks of 4 rows), 256->256 at 28x28 1.17 -> 1.08x, 512->512 at 14x14
    1.00 -> 0.83x (2 blocks of 7 rows). Zen 4 and AVX2 keep 0."""

    conv_direct_row_jam: int = field(
        default=0, metadata={_DERIVED: "2 if wide_fma_pipes >= 2 else 0"}
    )
    """Nonzero: a dense direct convolution jammed by `conv_direct_jam_max` sizes
    its rows for one broadcast register (as a wide stem's, `conv_stem_jam_wide`:
    F x R accumulators, F weight vectors and the broadcast), and when one
    register block covers its whole output row it also jams up to this many
    output rows per step (`direct_row_jam` in `schedule/register_block.py`: J
    rows x F blocks x R columns of accumulators within the registers; the last
    rows a step of their own); 0: rows sized for hoisted broadcasts, one row
    per step. ResNet's 3x3 stride-2 512 -> 512 to 7x7 takes 2 blocks x 7
    columns x 2 rows (each weight load feeds 14 FMAs, not 7), 14-column rows
    2 blocks x 14, 28-column rows 4 blocks x 6 (+ 4). Derived from the CPU:
    two 512-bit FMA pipes (`wide_fma_pipes`). Measured on Emerald Rapids (one
    thread, the kernel `depthwise 3x3 -> 3x3 stride 2 + bias -> relu` alone,
    320 MB written between calls, 21 interleaved rounds; docs/performance.md,
    "Stride-2 3x3 convolutions: two rows per step"), 0 -> 2: ResNet-50's 512
    -> 512 from 14x14 1.22 -> 1.06x onnxruntime's node, 256 -> 256 from 28x28
    1.12 -> 1.08x, 128 -> 128 from 56x56 1.18 -> 1.06x; ResNet-18's 256 ->
    512 from 14x14 1.07 -> 0.93x, 128 -> 256 from 28x28 1.12 -> 1.04x, 64 ->
    128 from 56x56 1.19 -> 1.04x. Zen 4 and AVX2 keep 0."""

    conv_stem_channel_jam: int = 1
    """1: with `conv_channel_jam_everywhere`, a stem convolution (its input
    read as `NCHW1c`, blocks of one channel, so its reduction steps through
    the window's columns) jams output-channel blocks like the other direct
    convolutions; 0: one block per step (`_one_channel_blocks` in
    `schedule/register_block.py`). Measured, AVX2 build, one thread, the
    kernel alone, 0 -> 1 (thread CPU time, interleaved rounds): 3x3 stride
    2, 3->32 at 224x224 (MobileNet's, EfficientNet's stem) 0.73-0.79x the
    time, ResNet's 7x7 stride 2, 3->64 0.84x (docs/performance.md, "AVX2
    stems and the network's input")."""

    conv_stem_jam_wide: int = field(
        default=0, metadata={_DERIVED: "2 if wide_fma_pipes >= 2 else 0"}
    )
    """Most output-channel blocks per step of a stem convolution (its input
    read as `NCHW1c`, `conv_stem_channel_jam`) on 32 registers: the largest F
    from this down to 2 dividing its output-channel blocks, with rows sized
    for one broadcast register (F x R accumulators, F weight vectors and the
    broadcast: 14 rows x 2 blocks); 0: one block per step. Derived from the
    CPU: on two 512-bit FMA pipes (`wide_fma_pipes`) one block of 14 rows
    is 14 broadcasts and a weight load per 14 FMAs, more loads than the
    pipes are fed. Measured on Emerald Rapids (one thread, the stem inside
    the network's first layers, against onnxruntime's node;
    docs/performance.md, "Stems on two 512-bit FMA pipes"): ResNet's 7x7
    stride 2, 3->64 at 224x224 1.40 -> 0.92x onnxruntime. Zen 4 and AVX2
    keep 0 (AVX2 jams stems by `conv_channel_jam_everywhere`)."""

    conv_flatten_rows: int = field(
        default=0, metadata={_DERIVED: "14 if vector_registers <= 16 else 0"}
    )
    """Widest image row (output columns) whose pixels a pointwise convolution
    kernel runs as one flat row (0: none): a kernel whose reduction nests
    read and write every pixel at its own position (a 1x1 stride-1 unpadded
    convolution with jammed output-channel blocks, and its elementwise
    epilogue: bias, activation, residual add) computes its H x W image as
    a 1 x H*W image, or as the fewest rows its threads share
    (`schedule-flatten-rows`, `schedule/row_flattening.py`), so that the
    register blocks tile the pixel row instead of each 7- or 14-column
    image row with short blocks. Measured, AVX2 build, one thread, a model
    of the convolution with bias and relu, off -> on (docs/performance.md, "Flat pixel
    rows"): 0.90-0.94x the time at 7x7 and 14x14 on ResNet-50's shapes,
    0.90-0.98x on MobileNetV2's; at 28x28 (28 = 7 register blocks of 4
    rows, no tail) 1.00-1.02x, so 14. With 32 registers (AVX-512) a 7x7
    image's row is one register block of 7 rows already and the flat row 3
    x 15 + 4: 0.94-1.07x, slower on ResNet-50's expansions, so 0."""

    conv_reduction_chunk: int = field(
        default=0,
        metadata={
            _DERIVED: "64 if vector_registers <= 16 else (128 if wide_fma_pipes >= 2 else 0)"
        },
    )
    """Input channels per reduction chunk of a pointwise convolution whose
    (jammed) weights and one register block's input, over all input
    channels, take more than half of L1 and whose input is more than half
    of L2 (0: never chunked; an input that L2 holds lost: MobileNetV2's
    576->96 at 14x14 took 1.10x the time chunked). The reduction
    over the input-channel blocks is split into chunks of at most this many
    channels (the largest divisor of the blocks), and the chunk loop moves
    outside the row's register blocks: each chunk's weights (2-3 output
    blocks x 64 channels, 4-6 KiB on AVX2) stay in L1 while the blocks of
    the row stream their input, the accumulators loaded and stored once per
    chunk (`chunk_reductions` in schedule/register_block.py). Unchunked, a
    512-channel row block re-read 32 KiB of weights and 12 KiB of input per
    step, more than L1 holds. Measured, AVX2 build, one thread, the kernel
    of `depthwise -> 1x1 + bias -> relu` (`Executable.profile`, 12-20
    interleaved rounds), unchunked -> 64 channels: 512->128 at 28x28 1170
    -> 956 us (32 or 128 channels: 964, 1016), 1024->256 at 14x14 1006 ->
    938, 256->64 at 56x56 1039 -> 989, 2048->512 at 7x7 976 -> 970
    (docs/performance.md, "Reduction chunks of the AVX2 pointwise
    convolutions"). With 32 registers (AVX-512, whose kernels of these shapes
    run at 95-100 % of peak unchunked) 128 channels measured 0.95-1.03x
    the time, so 0; on two 512-bit FMA pipes (`wide_fma_pipes`) 128, with
    `conv_chunk_min_channels` choosing the convolutions."""

    conv_chunk_min_channels: int = field(
        default=0, metadata={_DERIVED: "512 if wide_fma_pipes >= 2 else 0"}
    )
    """Nonzero: the pointwise convolutions with at least this many input
    channels (and 4 output-channel blocks per step, rows of 4 register
    blocks or more: `CHUNK_JAM` in schedule/register_block.py) are the ones
    whose reduction is chunked (`conv_reduction_chunk`
    channels per chunk, when their jammed weights over all input channels
    take more than half of L1), whatever the size of their input, and their
    image runs as one flat row of H*W pixels whatever its width (or as the
    fewest rows their threads share, `schedule-flatten-rows`), so that each
    chunk's weights stay in L1 across every register block of the image,
    not only the two or three of one 7- or 14-column row. 0: the rule of
    `conv_reduction_chunk` alone (input over half of L2) and
    `conv_flatten_rows`. Derived from the CPU: with two 512-bit FMA pipes
    (`wide_fma_pipes`) a jammed step of 4 blocks x 5 pixels reads 4 weight
    vectors per 20 FMAs, and unchunked a block re-read its 4 x Cin x 64
    bytes of weights (256 KiB at 1024 channels) from L2 for every 5 pixels:
    ResNet-50's 1x1 kernels ran at 50-60 % of peak. Measured on Emerald
    Rapids (one thread, the kernel alone with 64 MB written between calls,
    against onnxruntime's node; docs/performance.md, "Reduction chunks on
    two 512-bit FMA pipes"): 1024->256 at 14x14 1.11 -> 1.00x onnxruntime,
    512->128 at 28x28 1.14 -> 0.94x, 512->2048 at 7x7 1.02 -> 0.83x;
    MobileNetV2's 384->64 at 14x14 lost chunked (0.75 -> 0.82x), so 512.
    Zen 4 and AVX2 keep 0."""

    conv_weight_prefetch: int = field(
        default=0, metadata={_DERIVED: "2 if vector_registers <= 16 else 0"}
    )
    """Cache level a jammed, unchunked pointwise convolution prefetches the
    next output-channel step's weights into, while it computes the current
    step (`llvm.prefetch` locality: 2, L2; 3, L1; 0, no prefetch;
    `schedule/weight_prefetch.py`). In a network the weights of every layer
    come from L3 or memory at each call (the others' evicted them); the
    first pixel block of each step otherwise waits for F blocks' weights.
    Measured, AVX2 build (16 registers: 3 jammed blocks over 4 pixels),
    one thread, eight `1x1 192->1152 + SiLU -> 1x1 1152->192 + add` blocks
    with their own weights, thread CPU time, 0 -> 2: 0.95x the time
    (EfficientNet-B0 0.96x, the other eight networks within noise;
    docs/performance.md, "Weight prefetch in the AVX2 pointwise
    convolutions"). With 32 registers (AVX-512, where the 7x7 and 14x14
    kernels keep one block over 7 rows and are not jammed) EfficientNet-B0
    measured 1.00x, so 0."""

    conv_chunk_prefetch: int = field(
        default=0, metadata={_DERIVED: "2 if wide_fma_pipes >= 2 else 0"}
    )
    """Cache level a pointwise convolution whose reduction is chunked
    (`conv_reduction_chunk`, `conv_chunk_min_channels`) on a row of at most 16
    register blocks (a 7x7 image) prefetches its next chunk's weights into
    while its register blocks compute the current one (`llvm.prefetch`
    locality: 2, L2; 0, no prefetch; `prefetch_next_chunk` in
    schedule/weight_prefetch.py); after the last chunk of an output-channel
    step, the next step's first chunk. Only the first register block of a
    chunk reads its weights from outside L1, so the hardware prefetchers see
    4 short streams that start cold at every chunk. 0 on every CPU: measured
    on Emerald Rapids (one thread, docs/performance.md, "Pointwise
    convolutions in the network, measured against themselves alone"), 2 took
    0.99-1.01x the time of ResNet-50's 7x7 kernels alone and 0.94-0.96x in
    the network, and the network 0.99-1.02x, within its spread. Spread over
    every input-channel step (`conv_chunk_prefetch_spread`) the 7x7 kernels
    took 0.87-0.91x the time in the network (docs/performance.md, "Chunk
    prefetch spread over the reduction"), so 2 on two 512-bit FMA pipes
    (`wide_fma_pipes`); Zen 4 and AVX2 keep 0 (not measured there)."""

    conv_chunk_prefetch_spread: int = field(
        default=0, metadata={_DERIVED: "1 if wide_fma_pipes >= 2 else 0"}
    )
    """1: `conv_chunk_prefetch` deals the next chunk's weight lines out over
    every input-channel step of every register block of the current chunk
    (a few lines per step, `_spread_lines` in schedule/weight_prefetch.py);
    0: each register block prefetches its share, one input-channel block of
    the next chunk, at its head (up to 64 lines at once). Measured on
    Emerald Rapids, ResNet-50 in the network (one thread, interleaved
    rounds): the 7x7 1x1 kernels 0.87-0.91x the time with 1 against
    0.93-0.94x with 0, each against no prefetch; rows of more than 16
    register blocks (`CHUNK_PREFETCH_MAX_BLOCKS`, 14x14 images) still take
    no prefetch (spread, they measured no gain), nor, spread, the rows of 49
    pixels two cores split a 14x14 image into (they share each step's
    weights; two threads measured 0.89-0.97x the time with it on a
    machine shared with other jobs). 1 where
    `conv_chunk_prefetch` is on by default (two 512-bit FMA pipes)."""

    conv_direct_prefetch: int = field(
        default=0, metadata={_DERIVED: "2 if wide_fma_pipes >= 2 else 0"}
    )
    """Cache level a direct convolution whose output rows are jammed
    (`conv_direct_row_jam`) prefetches the next output-channel step's weights
    into while it computes the current step's row passes (`llvm.prefetch`
    locality: 2, L2; 0, no prefetch; `prefetch_next_step` in
    schedule/weight_prefetch.py): the lines are dealt out a few per
    reduction step (input-channel block and window tap) over every pass of
    the step, so that the first pass no longer reads its weights from memory
    in a burst (ResNet's 3x3 512->512 at 7x7: 590 KiB a step, four passes).
    Measured on Emerald Rapids (one thread, in the network, builds
    interleaved in one process): ResNet-50's three 3x3 kernels at 7x7
    0.88-0.97x the time (3 runs), ResNet-18's four 0.93-0.94x (2 runs),
    against controls at 0.99-1.02x (docs/performance.md, "Direct 3x3 convolutions: the next
    step's weights spread over the row passes"), so 2 on two 512-bit FMA
    pipes (`wide_fma_pipes`); Zen 4 and AVX2 keep 0 (not measured there; the
    AVX2 build does not jam rows)."""

    conv_flatten_min_steps_per_core: int = 4
    """Jammed output-channel steps per core from which a pointwise convolution
    on an image no row split can share (`conv_flatten_rows`: a 7x7 image, whose
    49 pixels are 1 or 7 rows, with fewer steps than `parallel_collapse_below`)
    still runs as one flat row (0: it keeps its 7 rows). Its threads then share
    the steps alone (960->160 at 7x7 on AVX2: 10 steps, 5 per core, instead of
    70 step-rows), and one thread computes the 49 pixels as 9 register blocks
    of 5 and one of 4 instead of 7 x (4 + 3) (a 3-row block of two channel
    blocks keeps 6 accumulators, fewer than two FMA pipes of latency 4 need).
    Measured, AVX2 build, one thread, thread CPU time, 0 -> 4: the model
    `depthwise -> 1x1 + relu` at 7x7 (41 interleaved rounds, twice)
    960->160 (jam 2, 9 x 5 + 4) 0.85-0.89x the time, 1152->192 (jam 3,
    12 x 4 + 1) 0.85-0.92x; whole networks (21 rounds) mobilenet_v3_large
    0.982, efficientnet_b0 0.987, mobilenet_v2 0.988, within the +-3 % of
    repeated runs on the shared machine (docs/performance.md, "One thread:
    shared transforms, blocked stems, flat 7x7 rows"). With 32 registers
    `conv_flatten_rows` is 0 and this knob unused."""

    conv_grouped_jam_min_row: int = 14
    """Shortest output row (columns) on which a grouped convolution jams the
    output-channel blocks of one group, which share their input broadcast
    (with `conv_channel_jam_everywhere`; `channel_jam` in
    `schedule/register_block.py`). Measured, ResNeXt-50's grouped 3x3
    convolutions on the AVX2 build, one thread, jam 1 -> 2 (thread CPU time,
    medians of 150 interleaved rounds): 512 channels at 14x14 and 28x28 ->
    14x14 (16 channels a group) 0.85-0.89x the time; 1024 channels at 7x7
    and 14x14 -> 7x7 (32 a group) 1.05-1.10x, where the 7 columns leave two
    short row blocks (4 + 3) for a reduction of only 36 steps."""

    epilogue_jam_max_ops: int = 32
    """Longest elementwise epilogue (operations in its row body, a `math`
    function such as `exp` counting 30, what `schedule-vector-math` makes of
    it) that `schedule-sink-epilogues` copies into a register block once per
    row, jammed; a longer one (SiLU's sigmoid: about 50) runs as a loop over
    the block's rows, `epilogue_step_vectors` at a time, its code emitted
    once per step instead of once per row (`schedule/epilogue_sinking.py`).
    Bias, relu, relu6, a residual add (5-8 operations) and MobileNetV3's
    bias + hardswish (23) stay jammed. On EfficientNet-B0 (AVX-512) every
    row jammed made its `conv2d + swish` units 1.52 MB of LLVM IR, the loop
    1.24 MB at the same speed (docs/performance.md, "Long epilogues")."""

    epilogue_step_vectors: int = 3
    """Independent vectors (rows times the output-channel blocks jammed with
    them) per step of a long epilogue's loop over a register block's rows
    (`epilogue_jam_max_ops`): the fewest rows dividing the block that reach
    this many, all of them if none. One row of one vector per step leaves a
    single exp's chain of dependent operations (some 70 cycles) per step,
    more than the out-of-order window overlaps; the rows of a block of 14
    one-vector rows are then jammed 7 at a time, a block of 3 jammed
    channel blocks steps one row at a time."""

    conv_nchw_pointwise_min_pixels: int = 56 * 56
    """Smallest output image (OH*OW) at which a pointwise (1x1) conv2d whose
    input is not channel-blocked stays NCHW (a matrix product along the image
    rows); smaller ones are blocked (`kernels/strategy.py`, measured there)."""

    conv_nchw_flat_pixels: int = field(
        default=0, metadata={_DERIVED: "3136 if wide_fma_pipes >= 2 else 0"}
    )
    """Smallest image (H*W pixels) whose NCHW pointwise convolution (the
    matrix product `conv_nchw_pointwise_min_pixels` keeps) runs its pixels as
    one row of H*W (`schedule/pixel_rows.py`), so that register blocks of
    whole vectors tile it; 0: never (the blocks tile each image row). On
    Emerald Rapids (two 512-bit FMA pipes, one thread) 64->64 at 56x56 with
    bias and relu: a row of 56 columns was 7 vectors of 8 lanes, 4 channels
    x 7 accumulators spilled, 21 % of the FMA peak; flat, 8 channels x 32
    pixels (docs/performance.md, "Pointwise convolutions on two 512-bit FMA
    pipes"). Zen 4 and AVX2 not measured: 0 there."""

    conv_grouped_min_width: int = 2
    """A grouped conv2d (1 < groups < channels) is channel-blocked
    (`kernels/strategy.py`, `grouped_block_reads`) from this many channels
    per group; narrower groups stay NCHW. Measured, AVX-512, one thread,
    ResNeXt-50 32x4d: blocking its groups of 4 (a block-diagonal weight, 4x
    the products) took 0.89x the time of keeping them NCHW with layout
    transforms around them."""

    depthwise_in_place_percent: int = field(
        default=0, metadata={_DERIVED: "25 if vector_registers <= 16 else 0"}
    )
    """A blocked depthwise conv2d reads its input in place, its border columns
    split off (`kernels/conv_blocked.py`), when its interior output columns
    (those whose every tap lies inside the image) number at least this
    percent of its border columns' taps (border columns x window taps): a
    border column is not register-blocked, so on a small image with a wide
    window the zero-padded copy, whose every column is blocked, can be
    faster. Measured, one thread, the kernel alone with bias and relu
    (thread CPU time, 11 interleaved rounds), copy -> in place: AVX-512
    (32 registers, 0: always in place) 5x5 at 7x7 (3 interior columns, 100
    border taps) 40 -> 30 us, 3x3 at 7x7 (5, 18) 18 -> 11, 5x5 stride 2 to
    7x7 (5, 50) 45 -> 27, 5x5 at 14x14 (10, 100) 101 -> 69, 5x5 at 28x28
    (24, 100) 137 -> 117; AVX2 build (16 registers, 25) 5x5 at 7x7 39 -> 59,
    3x3 at 7x7 31 -> 22, 5x5 stride 2 to 7x7 39 -> 34, 5x5 at 14x14 117 ->
    115, 5x5 at 28x28 160 -> 189 (docs/performance.md, "Depthwise
    convolution")."""

    conv_gate_weights_percent: int = field(default=30, metadata={_DERIVED: "0 if amd_zen else 30"})
    """A per-channel scale (a squeeze-and-excitation gate, `N x C x 1 x 1` with
    N = 1) multiplying the input of a 1x1 conv2d with constant weights is
    applied to the weights instead (`plan-layouts`, `_gate_into_weights`:
    `conv(x * g, W) = conv(x, W * g)`, one small kernel scaling `W` per call)
    when the weights have at most this percent of the feature map's elements
    (`100 * Co <= percent * H * W`); 0: never. The feature map is then read
    once, by the convolution, instead of written scaled and read again. The
    weights come from memory (cold) into the scaling kernel: at 14x14 (480 or
    672 channels to 80-112, 41-57 %) that kernel took as long as the scaled
    copy of the map it replaces (15-35 us against 17-24), at 28x28 and larger
    (5-12 %) a fifth of it. Measured, Emerald Rapids, one thread, AVX-512 and
    AVX2 builds (docs/performance.md, "Squeeze-and-excitation gates in the
    weights"); not on Zen 4: 0 there."""

    global_pool_partial_sums: int = field(
        default=8, metadata={_DERIVED: "8 if vector_registers <= 16 else 1"}
    )
    """Independent sums a global average pool on a channel-blocked input keeps
    per channel block (`kernels/nn.py`, `_blocked_global_sum`; the largest
    divisor of the image width up to this; 1: one sum). Enough vector adds in
    flight to cover the add latency on two add pipes (2 x 3-4 cycles), each
    sum one register. Measured on the AVX2 build (Zen 4, one thread), one sum
    -> 8: 144 channels at 56x56 47 -> 22 us (onnxruntime 27 us), 32 at
    112x112 42 -> 19, 240 at 28x28 18 -> 8. With 32 registers (AVX-512) 1:
    there LLVM gathers the 16-lane partial sums' row (the lane is a division
    of the row index), 6x slower, and one sum over 16 lanes already took
    24 us at 144 channels at 56x56."""

    winograd_min_output: int = 14 * 14
    """Smallest output image (OH*OW) computed by Winograd when the weights are a
    parameter: their transform then runs on every call and costs 16/(OH*OW) of
    the products (8 % at 14x14)."""

    winograd_direct_below: int = field(
        default=0, metadata={_DERIVED: "64 if wide_fma_pipes >= 2 else 0"}
    )
    """Constant weights: a 3x3 convolution Winograd applies to whose output has
    fewer pixels than this and whose transformed weights (16*C*K elements)
    exceed `winograd_max_weight_bytes` (L2) runs direct (`winograd_pays`); 0:
    Winograd wherever it applies. On a 7x7 output F(2x2, 3x3) computes 8x8
    (16 tiles) and streams 16/9 of the direct kernel's weights, which the
    direct kernel with two rows per step (`conv_direct_row_jam`) beats there.
    Derived from the CPU: two 512-bit FMA pipes (`wide_fma_pipes`). Measured
    on Emerald Rapids (one thread, `depthwise 3x3 -> 3x3 + bias -> relu`, the
    kernel alone, 320 MB written between calls, 21 interleaved rounds;
    docs/performance.md, "Stride-2 3x3 convolutions: two rows per step"),
    Winograd -> direct, ratio to onnxruntime's node: ResNet's 512 -> 512 at
    7x7 (16 MiB transformed) 1.10 -> 0.92 and 1.19 -> 0.95, GoogLeNet's
    192 -> 384 (4.5 MiB) 0.89 -> 0.78, 160 -> 320 (3.1 MiB) 0.96 -> 0.96;
    DenseNet-121's 128 -> 32 (256 KiB, kept) 0.025 -> 0.029 ms; 256 -> 256
    at 14x14 (kept: 196 pixels) 0.78 -> 1.07. Zen 4 and AVX2 keep 0."""

    winograd_max_weight_bytes: int = field(default=1 << 20, metadata={_DERIVED: "l2_bytes"})
    """Largest transformed weights (16*C*K elements) for Winograd with weights
    passed as a parameter: they must stay in L2 (256->256 at 14x14 streams
    4 MiB of them through L3 and loses: 2.2 ms against 2.1 direct)."""

    winograd_channel_jam: int = field(
        default=4, metadata={_DERIVED: "0 if vector_registers <= 16 else 4"}
    )
    """Most output-channel blocks per broadcast in Winograd's products
    (`schedule/winograd.py`: the largest divisor of the blocks up to this); 0:
    the pointwise convolutions' rule (`channel_jam`), which keeps one block
    where the jammed weights overflow L1. Those weights stream from L2 or
    memory in the products anyway (a tile position's slice is read by 16 tiles
    at 7x7, 49 at 14x14), and F blocks cut a step's loads per FMA from
    (R + 1) / R to (R + F) / (F * R). 4 blocks of 5 rows (20 accumulators, 4
    weight vectors, 5 broadcasts) fit 32 registers. Measured on AVX-512 (Zen 4,
    one thread, the kernel alone, medians of 15 interleaved rounds), rule -> 4:
    512->512 at 7x7 0.82x the time, 256->256 at 14x14 0.88x; against 2 blocks
    (what the rule does at 28x28 and 56x56) 0.97-0.98x there. With 16
    registers 0: 4 blocks leave room for 2 rows, and the rule jams everywhere
    (`conv_channel_jam_everywhere`)."""
    winograd_jam_l1_bytes: int = field(
        default=0,
        metadata={_DERIVED: "l1d_bytes if wide_fma_pipes >= 2 else 0"},
    )
    """Largest slice of Winograd's transformed weights (the jammed output-channel
    blocks over all input channels: F x C x lanes elements) that its products jam
    `winograd_channel_jam` blocks over (0: no limit); a larger slice is read
    from L2 by every row block of tiles, F weight vectors per step of R x F FMAs,
    and the jam drops to 2 blocks, whose register block holds twice the rows (10
    instead of 5 on 32 registers), half the weight vectors per FMA. On a core with
    two 512-bit FMA ports (Intel AVX-512: Sapphire/Emerald Rapids, twice Zen 4's
    FMAs per cycle) 4 blocks wait on L2. Measured, AVX-512, Emerald Rapids, one
    thread, the kernel with bias and relu (medians of 9 interleaved rounds, twice),
    4 -> 2 blocks: 512->512 at 7x7 (128 KiB slice) 0.87x the time, 256->256 at
    14x14 (64 KiB) 0.98-0.99x; slices that fit L1 keep 4 (96->128 at 28x28: 2 blocks
    took 1.10x). One 512-bit FMA pipe (Zen 4, where 4 was measured; `wide_fma_pipes`)
    and 16 registers: 0 (docs/performance.md, "Winograd and pools on Intel AVX-512")."""

    winograd_chunk_bytes: int = field(
        default=0, metadata={_DERIVED: "0 if amd_zen else l2_bytes // 2"}
    )
    """Largest transformed input plus products (V and M: 16 x tiles x (C + K)
    elements) a Winograd convolution on one image computes stage after stage;
    above it, its tile rows run in chunks (one tile row where a row has 14 tiles
    or more), each chunk's input transform, products and output transform one
    after the other, so that the output transform reads M from L2 rather than
    L3 (kernels/conv_winograd.py, `winograd_chunks`; 0: never chunked). Measured
    on Intel AVX-512 (Emerald Rapids, 2 MiB L2, one thread, the kernel with bias
    and relu, interleaved rounds), whole -> chunked: 16->64 at 55x55 (3.2 MiB of
    M) 0.68x the time, 64->64 at 56x56 0.86x, 128->32 at 56x56 0.79x, 128->128
    at 28x28 0.91x. Not measured on AMD Zen (1 MiB L2): 0 there.
    docs/performance.md, "Winograd in chunks of tile rows"."""

    matmul_panel_group: int = field(
        default=0, metadata={_DERIVED: "4 if wide_fma_pipes >= 2 else 0"}
    )
    """Most column blocks (of NR columns) per packed panel of a matmul whose
    broadcast operand (A) is larger than L2 holds (`pack_max_bytes`): each
    row block computes the group's blocks one after the other, so that A
    streams from L3 once per group instead of once per column block
    (`schedule/register_block.py`, `panel_group`; 0 or 1: one block per
    panel). The group's panel is stored block by block (`g x K x NR`).
    Derived from the CPU: 4 on cores with two 512-bit FMA pipes
    (`wide_fma_pipes`); measured on Emerald Rapids (one thread, matmul
    1024, 15 interleaved rounds): 15.46 -> 14.28 ms (NumPy 14.83 in the same
    rounds; groups of 8 14.46). Zen 4 and 16 registers: 0, not measured
    (docs/performance.md, "Matmul 1024: column blocks in groups")."""

    block_jam_max_reduction: int = 32
    """A matmul whose reduction has 16 to this many steps (and whose row
    spans two vectors or more) gets the register block of
    `block_broadcast_registers` = 0 (rows jammed into one vectorized loop,
    a broadcast register per row) even where that knob keeps one: with
    the rows' loops apart LLVM fills the accumulators through memory (zeros
    stored and loaded back), which over a short reduction is a large share.
    Measured, AVX2 build, one thread, the encoder's Q.K^T (8 heads, 128x32 @
    32x128, two layers): 348 -> 277 us (`Executable.profile`, 15
    interleaved rounds)."""

    block_rows_outside_columns: int = 0
    """Loop order of a register-blocked reduction whose row is longer than one
    register block (a matmul's N > NR; `schedule/register_block.py`): 0, the
    column-block loop runs outermost, each column panel of B shared by every
    row block (and packed when `pack_min_row_blocks` say so); 1, the row
    blocks run outermost and each visits every column block, so that its MR
    rows of A are reused across the columns while B is read in place (never
    packed). Not measured as a default: a tuning knob (docs/tuning.md),
    whose gain depends on which operand fits the caches."""

    conv_winograd: int = 1
    """A blocked 3x3 stride-1 conv2d where Winograd F(2x2, 3x3) applies and
    pays (`winograd_pays`) is computed by it (1) or by the direct kernel (0),
    read by `plan-layouts` on the convolution (its own `lamina.knobs`, which
    a model record's per-convolution entry sets: docs/tuning.md), else the
    module's. Not measured as a default: a tuning knob, chosen per
    convolution."""

    concat_in_place: int = 1
    """A concatenation whose inputs kernels compute for it alone, along a
    dimension with only extents 1 before it (batch 1: SqueezeNet's fire
    modules, GoogLeNet's inception blocks), has its producers write their
    slices of its output in place (`concat-in-place`, after `lower-graph`:
    the host passes each producer a view of its slice; the kernels are
    unchanged), 1, or runs as a copy kernel after them, 0. Not CPU-specific
    (it only removes a copy): on everywhere. Measured in docs/performance.md,
    "Concatenations in place, at the host"."""

    @staticmethod
    def for_cpu(facts: CpuFacts) -> ScheduleKnobs:
        """The measured defaults, each derived one (`_DERIVED`) evaluated on `facts`."""
        names = {f.name: getattr(facts, f.name) for f in fields(facts)}
        names["lanes"] = facts.lanes
        names["wide_fma_pipes"] = wide_fma_pipes(facts)
        names["amd_zen"] = amd_zen(facts.cpu_name)
        derived = {name: _derive(code, names) for name, code in _FORMULAS.items()}
        return ScheduleKnobs().replace(**derived)

    def replace(self, **changes: object) -> ScheduleKnobs:
        """These knobs with some overridden (target or pass options)."""
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


KNOB_NAMES: frozenset[str] = frozenset(f.name for f in fields(ScheduleKnobs))
"""The names a target option or a pass option may override."""

_FORMULAS = {
    f.name: compile(f.metadata[_DERIVED], f"<derived default of {f.name}>", "eval")
    for f in fields(ScheduleKnobs)
    if _DERIVED in f.metadata
}
"""Knob name -> the compiled formula of its derived default (compiled once, at import)."""


def _derive(code, names: dict[str, object]) -> int:
    """Evaluate a compiled `_DERIVED` formula (source text of this module, never user
    input) with the facts' fields (`names`) as names."""
    return int(eval(code, {"__builtins__": {"min": min, "max": max}}, names))


LIST_KNOBS: frozenset[str] = frozenset({"block_vector_choices", "conv_channel_jam_choices"})
"""Knobs whose value is a list of integers: set in tuning records, not as target options."""


SWITCH_KNOBS = (
    "conv_channel_jam_everywhere",
    "conv_chunk_prefetch_spread",
    "conv_stem_channel_jam",
    "block_rows_outside_columns",
    "conv_winograd",
    "concat_in_place",
)
"""Knobs that turn a rule on (1) or off (0): any other value is a typo, not a setting."""


def check_knob(name: str, value: object) -> str | None:
    """Why `value` cannot be knob `name` (None: it can)."""
    if name in LIST_KNOBS:
        if not isinstance(value, tuple) or not value or any(v < 1 for v in value):
            return "must be a non-empty list of positive integers"
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        return "must be an integer"
    if name in SWITCH_KNOBS:
        return None if value in (0, 1) else "must be 0 (off) or 1 (on)"
    if name in ("conv_weight_prefetch", "conv_chunk_prefetch", "conv_direct_prefetch"):
        return None if value in (0, 1, 2, 3) else "must be 0 (off) or a locality 1-3"
    if name in (
        "block_rows",
        "block_broadcast_registers",
        "block_jam_max_reduction",
        "conv_channel_block",
        "conv_channel_jam",
        "conv_pointwise_jam_max",
        "conv_direct_jam_max",
        "conv_direct_row_jam",
        "conv_stem_jam_wide",
        "conv_nchw_flat_pixels",
        "conv_flatten_rows",
        "conv_flatten_min_steps_per_core",
        "conv_reduction_chunk",
        "conv_chunk_min_channels",
        "matmul_panel_group",
        "conv_grouped_min_width",
        "depthwise_in_place_percent",
        "conv_gate_weights_percent",
        "winograd_min_output",
        "winograd_direct_below",
        "winograd_channel_jam",
        "winograd_jam_l1_bytes",
        "winograd_chunk_bytes",
        "conv_nchw_pointwise_min_pixels",
        "parallel_column_blocks_per_core",
        "parallel_grain_work",
        "parallel_rows_first",
    ):
        return None if value >= 0 else "must be >= 0"
    return None if value >= 1 else "must be >= 1"


def knob_rows() -> list[tuple[str, str, str]]:
    """(name, default, docstring) per knob; a default derived from `CpuFacts`
    reads as its formula (`l2_bytes // 2`)."""
    docs = _field_docs()
    return [
        (f.name, f.metadata.get(_DERIVED) or repr(f.default), " ".join(docs[f.name].split()))
        for f in fields(ScheduleKnobs)
    ]


def _field_docs() -> dict[str, str]:
    """The docstring under each field of `ScheduleKnobs` (read from the source)."""
    tree = ast.parse(inspect.getsource(ScheduleKnobs))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs = {}
    for stmt, after in zip(body, body[1:], strict=False):
        if (
            isinstance(stmt, ast.AnnAssign)
            and isinstance(stmt.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
        ):
            docs[stmt.target.id] = str(after.value.value)
    return docs


__all__ = ["KNOB_NAMES", "LIST_KNOBS", "ScheduleKnobs", "check_knob", "knob_rows"]
