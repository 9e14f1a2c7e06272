"""Memoized op verification: an op whose verifier only reads its own types and attributes
is verified once per distinct (class, operand types, result types, properties, attributes).

The verifier runs after every pass (core/pass_manager.py), and a lowered
module repeats the same few ops thousands of times (`llvm.add : i64`,
`llvm.mlir.constant(0 : i64)`, ...): verifying the llvm-dialect module of a
ResNet-style CNN spent ~45 µs per op in xDSL's generic IRDL machinery, the
largest part of the verifier's time. For the ops below, that verification is
a pure function of the key, so a repeated key cannot fail where its first
occurrence passed, and skipping it weakens no invariant.

An op is *local* (memoizable) when, per its class:

* its IRDL definition has no regions and no successors (nested ops and
  branch targets are not in the key);
* it has no custom `verify_`, or one that reads only its own properties,
  attributes and operand/result types: xDSL ops audited here
  (`AUDITED_VERIFIERS`), Lamina ops whose class defining `verify_` says so
  with the class attribute `VERIFIES_LOCALLY = True` (a subclass that
  overrides `verify_` must say it again);
* each of its traits either does not verify anything or only compares the
  op's own types (`LOCAL_TRAITS`); traits that look at the parent, the block
  or a symbol table (`IsTerminator`, `HasParent`, call interfaces) exclude it.

Per op, what xDSL's `Operation.verify` checks beyond the op itself is still
done every time: an op using an erased value, or the last op of a block (the
terminator rules), always gets the full verification. Only successes are
remembered; a failing op is verified (and reported) in full every time.
"""

from __future__ import annotations

from xdsl import interfaces
from xdsl.dialects import llvm
from xdsl.ir import ErasedSSAValue, Operation
from xdsl.irdl import IRDLOperation
from xdsl.traits import OpTrait, SameOperandsAndResultType

LOCAL_TRAITS: tuple[type[OpTrait], ...] = (
    SameOperandsAndResultType,
    # The interface traits' `verify` is `return` (xDSL 0.74). xDSL names these classes
    # privately (the ignores), yet they are what op classes carry.
    interfaces._HasFolderInterfaceTrait,  # pyright: ignore[reportPrivateUsage]
    interfaces._HasCanonicalizationPatternsInterfaceTrait,  # pyright: ignore[reportPrivateUsage]
    interfaces._ConditionallySpeculatableInterfaceTrait,  # pyright: ignore[reportPrivateUsage]
)
"""Traits whose `verify` reads at most the op's operand and result types (xDSL 0.74)."""

AUDITED_VERIFIERS: frozenset[type[Operation]] = frozenset({llvm.GEPOp, llvm.ICmpOp})
"""Op classes whose custom `verify_` reads only their properties and operand/result
types (audited in xDSL 0.74: GEP's struct-index checks, icmp's vector/scalar rule)."""

_MAX_ENTRIES = 100_000
"""Bound of the memo: the keys are immutable attributes, so an entry never goes
stale; the bound only limits memory in a long-lived process."""

_local_classes: dict[type[Operation], bool] = {}
_verified: set[tuple] = set()
_by_identity: dict[tuple, tuple] = {}
"""`_identity(key)` → `key`, for keys in `_verified`: the value keeps the attributes
whose ids the identity holds alive."""
_erased_classes: dict[type, bool] = {}


def _custom_verifier(cls: type[IRDLOperation]) -> object:
    """The class's own `verify_` that `irdl_op_definition` wrapped (None if not found)."""
    function = cls.verify_
    names = getattr(getattr(function, "__code__", None), "co_freevars", ())
    if "custom_verify" not in names or function.__closure__ is None:
        return None
    return function.__closure__[names.index("custom_verify")].cell_contents


def _declared_local(cls: type[Operation], custom: object) -> bool:
    """Whether the class that defines `custom` (not a subclass or a base) declares
    `VERIFIES_LOCALLY = True`: a subclass overriding `verify_` must declare it again."""
    owner_name = getattr(custom, "__qualname__", "").rpartition(".")[0]
    for klass in cls.__mro__:
        if klass.__qualname__ == owner_name:
            return klass.__dict__.get("VERIFIES_LOCALLY") is True
    return False


def is_local(cls: type[Operation]) -> bool:
    """Whether verifying an op of `cls` reads nothing but its own key (see the module doc)."""
    known = _local_classes.get(cls)
    if known is None:
        known = _local_classes[cls] = _classify(cls)
    return known


def _classify(cls: type[Operation]) -> bool:
    if not issubclass(cls, IRDLOperation):
        return False
    op_def = cls.get_irdl_definition()
    if op_def.regions or op_def.successors:
        return False
    custom = _custom_verifier(cls)
    if custom is None:
        return False
    if custom is not Operation.verify_ and not (
        cls in AUDITED_VERIFIERS or _declared_local(cls, custom)
    ):
        return False
    return all(
        type(trait).verify is OpTrait.verify or isinstance(trait, LOCAL_TRAITS)
        for trait in op_def.traits
    )


def memo_key(op: Operation) -> tuple | None:
    """The key of `op`'s verification, or None when it must be verified in full.

    Read from the op's fields (`_operands`, `_successors`), not through xDSL's
    `operands` / `successors` views (a new view object per read): the verifier
    asks this of every op of the module."""
    cls = type(op)
    local = _local_classes.get(cls)  # the class first: one dict lookup
    if local is None:
        local = is_local(cls)
    if not local or op.regions or op._successors or op._next_op is None:  # pyright: ignore[reportPrivateUsage]
        return None  # the last op of a block: the terminator rules depend on its position
    operands = op._operands  # pyright: ignore[reportPrivateUsage]
    operand_types = []
    for value in operands:
        erased = _erased_classes.get(type(value))
        if erased is None:  # `isinstance` through ABCMeta once per value class
            erased = _erased_classes[type(value)] = issubclass(type(value), ErasedSSAValue)
        if erased:
            return None
        operand_types.append(value.type)
    results = op.results
    return (
        cls,
        tuple(operand_types),
        (results[0].type,) if len(results) == 1 else tuple([r.type for r in results]),
        tuple(op.properties.items()),
        tuple(op.attributes.items()) if op.attributes else (),
    )


def _identity(key: tuple) -> tuple:
    """`key` with each attribute replaced by its `id`: hashing it hashes integers, where
    hashing `key` recomputes every attribute's hash, field by field (xDSL attributes are
    frozen dataclasses; their hash is not cached). A lowered kernel repeats the same few
    type and attribute objects, so most ops find their identity known."""
    cls, operand_types, result_types, properties, attributes = key
    return (
        cls,
        tuple(map(id, operand_types)),
        tuple(map(id, result_types)),
        tuple([(name, id(value)) for name, value in properties]),
        tuple([(name, id(value)) for name, value in attributes]),
    )


def already_verified(key: tuple) -> bool:
    """Whether an op with this key verified before (unhashable attributes: never).

    First by the identity of its attributes (`_by_identity`, whose entries hold the
    key they stand for, so an identity cannot be reused by another object while it is
    there), then by their value."""
    identity = _identity(key)
    if identity in _by_identity:
        return True
    try:
        if key not in _verified:
            return False
    except TypeError:
        return False
    _by_identity[identity] = key
    return True


def remember(key: tuple) -> None:
    """Record that an op with this key verified."""
    if len(_verified) >= _MAX_ENTRIES or len(_by_identity) >= _MAX_ENTRIES:
        _verified.clear()
        _by_identity.clear()
    try:
        _verified.add(key)
    except TypeError:
        return  # an attribute without a hash: such ops are simply verified every time
    _by_identity[_identity(key)] = key


# ---------------------------------------------------------------------------
# Whole modules: a pass that changed nothing needs no new verification
# ---------------------------------------------------------------------------


def structure(module: Operation) -> list[tuple]:
    """An exact, comparable description of the IR under `module` (inclusive).

    Two modules with equal structures are the same IR: the same op classes
    in the same nesting, with equal attributes, properties, result and block
    argument types, and the same use-def edges and successors (values and
    blocks are numbered in walk order). Verification and the phase checker
    are functions of exactly that (locations only shape the message of a
    failure), so a module whose structure equals one that passed them passes
    them again: the pass manager skips re-verifying after a pass that left
    the module as it was (many passes find nothing to do on most programs).
    Comparing is cheap: unchanged attributes are the same objects.
    """
    numbers: dict[object, int] = {}

    def number(item: object) -> int:
        found = numbers.get(item)
        if found is None:
            found = numbers[item] = len(numbers)
        return found

    out: list[tuple] = []
    stack: list[object] = [module]
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):  # an end-of-region / end-of-block marker
            out.append(item)
            continue
        op = item
        assert isinstance(op, Operation)
        out.append(
            (
                type(op),
                tuple(number(value) for value in op.operands),
                tuple((number(result), result.type) for result in op.results),
                tuple(op.properties.items()),
                tuple(op.attributes.items()),
                tuple(number(block) for block in op.successors),
                len(op.regions),
            )
        )
        pending: list[object] = []
        for region in op.regions:
            pending.append(("region",))
            for block in region.blocks:
                args = tuple((number(arg), arg.type) for arg in block.args)
                pending.append(("block", number(block), args))
                pending.extend(block.ops)
                pending.append(("end-block",))
            pending.append(("end-region",))
        stack.extend(reversed(pending))
    return out
