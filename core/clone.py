"""xDSL's `Operation.clone`, op for op, without its per-op overheads (`fast_clones`).

The schedule primitives copy loop bodies op by op (`unroll_and_jam` and the
register blocks: 9,000-15,000 clones per ResNet-50 compile), `lower-te` copies
scalar bodies and the parallel-loop lowering copies address chains. xDSL's clone
of one op goes through `create`/`Operation.__init__` (the operand and successor
setters: a generator, a `zip` and a use list swap each), `SSAValues` built from a
generator, the IRDL definition's loop over its properties and attributes
(`__post_init__`), `Block.add_op`'s `is_ancestor` climb from the new block to the
top of the new tree, and for an op with regions, a recursive `clone` per nested op
and a second walk of both trees to set the operands.

`fast_clone` builds the same IR in one pass over the op and its nested ops:

* every op created as `create` creates it (the same class, results with their
  types, copies of the properties and attributes with the definition's defaults
  filled in, the location, the successors mapped through `block_mapper`, one empty
  region per region), its results mapped in `value_mapper` right after it is
  created, their name hints copied through xDSL's setter;
* every region's blocks created first (so successors may name a later block),
  registered in `block_mapper`, then per block its arguments (type, location, name
  hint) and its ops, in order, linked into the new block without `is_ancestor`
  (the new op is new: it cannot contain the new block);
* then, if `clone_operands`, every new op's operands set in the order of xDSL's
  walk of the new tree (preorder), each use prepended to its value's use list as
  `add_use` does: the use lists end in the same order as xDSL's.

An op of a class that changes any of that (its own `__new__`, `__post_init__`,
`create`, `clone` or `clone_without_regions`, or an op that is not IRDL-defined)
is cloned by its own `clone` as xDSL's region cloning would call it, and a top
op of such a class takes xDSL's `clone`: the result is the same either way.
`tests/test_clone.py` compares both clones of every op of every phase of the
example pipelines: text, use lists, name hints, locations, block links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from xdsl.dialects.builtin import UNKNOWN_LOC, LocationAttr
from xdsl.ir import Attribute, Block, Operation, OpResult, Region, SSAValue, SSAValues, Use
from xdsl.irdl import IRDLOperation, OptionalDef

from lamina.core.scoped_patch import ScopedPatch

_XDSL_CLONE = Operation.clone
"""xDSL's own `Operation.clone` (what `fast_clone` replaces within a compile)."""

_Defaults = tuple[tuple[tuple[str, Attribute], ...], tuple[tuple[str, Attribute], ...]]
"""An op class's default properties and attributes: (name, value) pairs each."""

_plain: dict[type, _Defaults | None] = {}
"""Op class → its default properties and attributes (what `IRDLOperation.__post_init__`
fills in), or None when `fast_clone` leaves the class to its own `clone`."""

_hints: dict[str, str | None] = {}
"""Name hint → what xDSL's `name_hint` setter stores for it (a pure function)."""


_OPERATIONS = ("create", "clone", "clone_without_regions")
"""What an op class must take from `Operation` itself for `fast_clone` to build it."""

PLAIN_CREATE: dict[type, Callable[[Operation], bool]] = {}
"""Op classes whose own `create` is `Operation.create` for some ops: class → which
(`loop.ForOp.create` only rewrites a kind given as a string). A dialect registers
its classes here; `fast_clone` leaves the other ops to their own `clone`."""


def _owner(cls: type, name: str) -> type | None:
    """The class of `cls`'s MRO that defines `name` (None: none does)."""
    return next((k for k in cls.__mro__ if name in k.__dict__), None)


def _defaults(cls: type) -> _Defaults | None:
    if cls in _plain:
        return _plain[cls]
    found = None
    if (
        issubclass(cls, IRDLOperation)
        and cls.__new__ is object.__new__
        and _owner(cls, "__post_init__") is IRDLOperation
        and all(
            _owner(cls, name) is Operation or (name == "create" and cls in PLAIN_CREATE)
            for name in _OPERATIONS
        )
        and getattr(cls, "name", "")
    ):
        op_def = cls.get_irdl_definition()
        found = (_given(op_def.properties), _given(op_def.attributes))
    _plain[cls] = found
    return found


def _given(defs: Mapping[str, object]) -> tuple[tuple[str, Attribute], ...]:
    """The (name, default) pairs of the definitions in `defs` that have a default."""
    pairs: list[tuple[str, Attribute]] = []
    for name, d in defs.items():
        default = getattr(d, "default_value", None)
        if not isinstance(d, OptionalDef) and isinstance(default, Attribute):
            pairs.append((name, default))
    return tuple(pairs)


def _fast(op: Operation) -> bool:
    """Does `fast_clone` build `op` itself (else its own `clone` does)?"""
    cls = type(op)
    if _defaults(cls) is None:
        return False
    guard = PLAIN_CREATE.get(cls)
    return guard is None or guard(op)


def _hint(value: SSAValue, name: str | None) -> None:
    """`value.name_hint = name`, xDSL's setter memoized."""
    if name is None:
        value._name = None  # pyright: ignore[reportPrivateUsage]
        return
    if name in _hints:
        value._name = _hints[name]  # pyright: ignore[reportPrivateUsage]
    else:
        value.name_hint = name
        _hints[name] = value.name_hint


def fast_clone(
    self: Operation,
    value_mapper: dict[SSAValue, SSAValue] | None = None,
    block_mapper: dict[Block, Block] | None = None,
    *,
    clone_name_hints: bool = True,
    clone_operands: bool = True,
) -> Operation:
    """`Operation.clone` (module docstring): the same op, tree and use lists."""
    if not _fast(self):
        return _XDSL_CLONE(
            self,
            value_mapper,
            block_mapper,
            clone_name_hints=clone_name_hints,
            clone_operands=clone_operands,
        )
    if value_mapper is None:
        value_mapper = {}
    if block_mapper is None:
        block_mapper = {}
    pairs: list[tuple[Operation, Operation]] = []
    new = _bare(self, value_mapper, block_mapper, clone_name_hints, pairs)
    if clone_operands:
        get = value_mapper.get
        for old, copy in pairs:
            operands = old._operands  # pyright: ignore[reportPrivateUsage]
            if not operands:
                continue
            values = SSAValues([get(v, v) for v in operands])
            uses = tuple([Use(copy, index) for index in range(len(values))])
            for value, use in zip(values, uses, strict=True):
                first = value.first_use
                use._next_use = first  # pyright: ignore[reportPrivateUsage]
                use._prev_use = None  # pyright: ignore[reportPrivateUsage]
                if first is not None:
                    first._prev_use = use  # pyright: ignore[reportPrivateUsage]
                value.first_use = use
            copy._operands = values  # pyright: ignore[reportPrivateUsage]
            copy._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    return new


_NO_OPERANDS: SSAValues[SSAValue] = SSAValues(())
_NO_ATTRIBUTES: dict[str, Attribute] = {}


def _link_successors(op: Operation, targets: tuple[Block, ...]) -> None:
    """Set a new op's successors to `targets`, each use added in order (as xDSL's
    `successors` setter does for an op that had none)."""
    uses = tuple([Use(op, index) for index in range(len(targets))]) if targets else ()
    for block, use in zip(targets, uses, strict=True):
        block.add_use(use)
    op._successors = targets  # pyright: ignore[reportPrivateUsage]
    op._successor_uses = uses  # pyright: ignore[reportPrivateUsage]


def _bare(
    op: Operation,
    value_mapper: dict[SSAValue, SSAValue],
    block_mapper: dict[Block, Block],
    hints: bool,
    pairs: list[tuple[Operation, Operation]],
) -> Operation:
    """`op` cloned without operands (its nested ops too), appending (old, new) to
    `pairs` in preorder; `op`'s class is one `_defaults` accepts."""
    cls = type(op)
    new = object.__new__(cls)
    new._operands = _NO_OPERANDS  # pyright: ignore[reportPrivateUsage]
    new._operand_uses = ()  # pyright: ignore[reportPrivateUsage]
    new.results = SSAValues(
        [OpResult(result.type, new, index) for index, result in enumerate(op.results)]
    )
    properties = new.properties = op.properties.copy()
    attributes = new.attributes = op.attributes.copy()
    new.location = op.location
    successors = op._successors  # pyright: ignore[reportPrivateUsage]
    _link_successors(new, tuple([block_mapper.get(b, b) for b in successors]))
    regions = tuple([Region() for _ in op.regions])
    for region in regions:
        region.parent = new
    new.regions = regions
    default_properties, default_attributes = _plain[cls]  # pyright: ignore[reportGeneralTypeIssues]
    for name, value in default_properties:
        if name not in properties:
            properties[name] = value
    for name, value in default_attributes:
        if name not in attributes:
            attributes[name] = value
    for old, result in zip(op.results, new.results, strict=True):
        value_mapper[old] = result
        if hints:
            _hint(result, old._name)  # pyright: ignore[reportPrivateUsage]
    pairs.append((op, new))
    for source, dest in zip(op.regions, regions, strict=True):
        _region(source, dest, value_mapper, block_mapper, hints, pairs)
    return new


def _region(
    source: Region,
    dest: Region,
    value_mapper: dict[SSAValue, SSAValue],
    block_mapper: dict[Block, Block],
    hints: bool,
    pairs: list[tuple[Operation, Operation]],
) -> None:
    """xDSL's `Region.clone_into(dest, 0, ..., clone_operands=False)` into a new region."""
    blocks = list(source.blocks)
    new_blocks = [Block() for _ in blocks]
    for block, new_block in zip(blocks, new_blocks, strict=True):
        block_mapper[block] = new_block
    dest.add_block(new_blocks)
    for block, new_block in zip(blocks, new_blocks, strict=True):
        for index, arg in enumerate(block.args):
            new_arg = new_block.insert_arg(arg.type, index, arg.location)
            value_mapper[arg] = new_arg
            if hints:
                _hint(new_arg, arg._name)  # pyright: ignore[reportPrivateUsage]
        last = None
        for op in block.ops:
            if not _fast(op):  # its own clone, as xDSL's region clone calls it
                copy = op.clone(
                    value_mapper, block_mapper, clone_name_hints=hints, clone_operands=False
                )
                pairs.extend(zip(op.walk(), copy.walk(), strict=False))  # as xDSL pairs them
                new_block.add_op(copy)  # with xDSL's checks
                last = copy
                continue
            copy = _bare(op, value_mapper, block_mapper, hints, pairs)
            copy.parent = new_block
            if last is None:
                new_block._first_op = copy  # pyright: ignore[reportPrivateUsage]
            else:
                last._next_op = copy  # pyright: ignore[reportPrivateUsage]
                copy._prev_op = last  # pyright: ignore[reportPrivateUsage]
            new_block._last_op = copy  # pyright: ignore[reportPrivateUsage]
            last = copy


def attach_op(self: Block, operation: Operation) -> None:
    """xDSL's `Block._attach_op` (the check of every op inserted into a block), without
    climbing from the block to the top of its tree for an op that has no regions: only
    an op with regions can contain the block (51,000 climbs per ResNet-50 compile).
    The same checks, in the same order, with the same errors."""
    if operation.parent:
        raise ValueError("Can't add to a block an operation already attached to a block.")
    if operation.regions and operation.is_ancestor(self):
        raise ValueError("Can't add an operation to a block contained in the operation.")
    operation.parent = self


_XDSL_INIT = Operation.__init__
"""xDSL's own `Operation.__init__` (what `operation_init` replaces within a compile)."""

_plain_init: dict[type, bool] = {}
"""Op class → whether `Operation.__init__`'s `super().__init__()` is `object.__init__`
for it (no class after `Operation` in its MRO defines an `__init__`)."""


def _init_is_plain(cls: type) -> bool:
    found = _plain_init.get(cls)
    if found is None:
        mro = cls.__mro__
        after = mro[mro.index(Operation) + 1 :]
        found = _plain_init[cls] = all(
            "__init__" not in k.__dict__ for k in after if k is not object
        )
    return found


def operation_init(
    self: Operation,
    *,
    operands: Sequence[SSAValue] = (),
    result_types: Sequence[Attribute] = (),
    properties: Mapping[str, Attribute] = _NO_ATTRIBUTES,
    attributes: Mapping[str, Attribute] = _NO_ATTRIBUTES,
    location: LocationAttr | None = None,
    successors: Sequence[Block] = (),
    regions: Sequence[Region] = (),
) -> None:
    """xDSL's `Operation.__init__` (every op built by a constructor or `create` goes
    through it: `IRDLOperation.__init__` calls it by name), field for field, without
    its generators and empty loops: the operand and successor setters (a generator,
    a tuple, two `zip` loops each, though a new op has nothing to unlink) and the
    unknown location's lazy import. The same op: operands, then results, properties,
    attributes, location, successors (their uses added in order through `add_use`),
    regions through `add_region`, then `__post_init__`. An op that is not new (being
    initialized again) or whose class puts an `__init__` after `Operation`'s in its
    MRO takes xDSL's own."""
    if self._operands or self._successors or not _init_is_plain(type(self)):  # pyright: ignore[reportPrivateUsage]
        _XDSL_INIT(
            self,
            operands=operands,
            result_types=result_types,
            properties=properties,
            attributes=attributes,
            location=location,
            successors=successors,
            regions=regions,
        )
        return
    values = SSAValues(operands)
    uses = tuple([Use(self, index) for index in range(len(values))]) if values else ()
    for value, use in zip(values, uses, strict=True):
        value.add_use(use)
    self._operands = values  # pyright: ignore[reportPrivateUsage]
    self._operand_uses = uses  # pyright: ignore[reportPrivateUsage]
    self.results = SSAValues(
        [OpResult(result_type, self, index) for index, result_type in enumerate(result_types)]
    )
    self.properties = dict(properties)
    self.attributes = dict(attributes)
    self.location = UNKNOWN_LOC if location is None else location
    _link_successors(self, tuple(successors))
    self.regions = ()
    for region in regions:
        self.add_region(region)
    self.__post_init__()


_PATCHES = (
    ScopedPatch(Operation, "clone", fast_clone),
    ScopedPatch(Block, "_attach_op", attach_op),
    ScopedPatch(Operation, "__init__", operation_init),
)


@contextmanager
def fast_building() -> Iterator[None]:
    """Within the block (a compile), `Operation.clone` is `fast_clone`,
    `Block._attach_op` is `attach_op` and `Operation.__init__` is `operation_init`:
    the same IR, the same errors. Reentrant and thread-safe (`core/scoped_patch.py`)."""
    with _PATCHES[0].active(), _PATCHES[1].active(), _PATCHES[2].active():
        yield


__all__ = ["attach_op", "fast_building", "fast_clone", "operation_init"]
