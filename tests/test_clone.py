"""core/clone.py: `fast_clone` builds what xDSL's `Operation.clone` builds: the same
ops, attributes, locations, name hints, blocks and block arguments, operands, and the
same order of every use list (the new values' and the values outside the clone)."""

from __future__ import annotations

from contextlib import nullcontext
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, SSAValue

from lamina.core.clone import (
    _XDSL_CLONE,
    _XDSL_INIT,
    _fast,
    attach_op,
    fast_building,
    fast_clone,
    operation_init,
)
from lamina.core.context import make_context
from lamina.core.diagnostics import parse_module
from lamina.dialects import loop
from lamina.driver.pipeline import passes_for_module

EXAMPLES = Path(__file__).parent.parent / "examples"


def _shape(clone: Operation) -> list:
    """Everything observable of `clone` and its nested ops, values named by position
    (inside the clone) or identity (outside it)."""
    ops = list(clone.walk())
    position = {op: i for i, op in enumerate(ops)}
    values: dict[SSAValue, str] = {}
    blocks = {}
    for i, op in enumerate(ops):
        for j, r in enumerate(op.results):
            values[r] = f"r{i}.{j}"
        for k, region in enumerate(op.regions):
            for b, block in enumerate(region.blocks):
                blocks[block] = f"b{i}.{k}.{b}"
                for a, arg in enumerate(block.args):
                    values[arg] = f"a{i}.{k}.{b}.{a}"

    def name(v: SSAValue) -> object:
        return values.get(v, id(v))

    def uses(v) -> list:  # the use list, in order, restricted to the clone's ops
        return [(position[u.operation], u.index) for u in v.uses if u.operation in position]

    shape: list = []
    for i, op in enumerate(ops):
        parent = op.parent
        shape.append(
            (
                type(op),
                op.name,
                dict(op.properties),
                dict(op.attributes),
                op.location,
                [name(v) for v in op.operands],
                [(r.type, r.name_hint, uses(r)) for r in op.results],
                [blocks.get(s, id(s)) for s in op.successors],
                blocks.get(parent) if i else parent,
                position.get(op.prev_op) if i else op.prev_op,
                position.get(op.next_op) if i else op.next_op,
                [
                    [
                        (
                            blocks[block],
                            [(a.type, a.location, a.name_hint, uses(a)) for a in block.args],
                            uses(block),
                            block.first_op is not None and position[block.first_op],
                            block.last_op is not None and position[block.last_op],
                            region.parent is op,
                            block.parent is region,
                        )
                        for block in region.blocks
                    ]
                    for region in op.regions
                ],
            )
        )
        shape.append(sorted((name(v), uses(v)) for v in set(op.operands) if v not in values))
    return shape


def _drop(clone: Operation) -> None:
    for op in clone.walk():
        op.drop_all_references()


def _compare(op: Operation, **options) -> None:
    for hints in (True, False):
        a = _XDSL_CLONE(op, dict(options.get("mapper", {})), clone_name_hints=hints)
        b = fast_clone(op, dict(options.get("mapper", {})), clone_name_hints=hints)
        assert _shape(a) == _shape(b)
        _drop(a)
        _drop(b)
    a = _XDSL_CLONE(op, clone_operands=False)
    b = fast_clone(op, clone_operands=False)
    assert _shape(a) == _shape(b)
    _drop(a)
    _drop(b)


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir", "residual.mlir"])
def test_fast_clone_is_xdsls_in_every_phase(name):
    """Every function and every op (up to 400 per phase) of every phase of the default
    pipeline: graph functions, te kernels, loop nests, parallel loops, the llvm dialect."""
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
        ops = list(module.walk())
        assert sum(map(_fast, ops)) > len(ops) // 2  # not all left to xDSL's clone
        for op in ops[1:400] + list(module.ops):
            _compare(op)
        _compare(module)
        module.verify()


def _scheduled_cnn() -> ModuleOp:
    """The CNN example through the default pipeline up to `simplify`: loop nests
    after scheduling, before they are simplified."""
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / "cnn.mlir").read_text(), "cnn.mlir")
    for p in passes_for_module("default", module, None):
        if p.name == "simplify":
            break
        p.apply(ctx, module)
    return module


def test_mapper_and_uses_outside():
    """A prefilled mapper (the schedule primitives map an induction variable to a
    constant) and values defined outside the clone keep their use lists in order."""
    module = _scheduled_cnn()
    loops = [op for op in module.walk() if isinstance(op, loop.ForOp)]
    assert loops
    for for_op in loops[:50]:
        other = next((v for v in for_op.operands if not isinstance(v.owner, loop.ForOp)), None)
        mapper = {for_op.induction_var: other} if other is not None else {}
        for op in list(for_op.body.block.ops)[:20]:
            _compare(op, mapper=mapper)


def test_a_loop_with_a_string_kind_takes_its_own_create():
    """`loop.ForOp.create` rewrites a kind given as a string: such a loop is cloned by
    xDSL's clone (through that `create`), others by `fast_clone` itself."""
    module = _scheduled_cnn()
    for_op = next(op for op in module.walk() if isinstance(op, loop.ForOp))
    for_op.properties["kind"] = StringAttr("parallel")
    with fast_building():
        assert Operation.clone is fast_clone
        copy = for_op.clone()
    assert Operation.clone is _XDSL_CLONE
    assert isinstance(copy.properties["kind"], loop.LoopKindAttr)
    _drop(copy)


_XDSL_ATTACH = Block._attach_op


@pytest.mark.parametrize("attach", [_XDSL_ATTACH, attach_op])
def test_attach_op_checks_as_xdsl_does(attach):
    """An op already in a block, and an op put into a block it contains, are refused
    with xDSL's errors; an op without regions is attached without the climb."""
    module = _scheduled_cnn()
    for_op = next(op for op in module.walk() if isinstance(op, loop.ForOp))
    inner = for_op.body.block
    with pytest.raises(ValueError, match="already attached to a block"):
        attach(inner, inner.first_op)
    detached = for_op.parent
    assert detached is not None
    detached.detach_op(for_op)
    with pytest.raises(ValueError, match="to a block contained in the operation"):
        attach(inner, for_op)
    assert for_op.parent is None
    leaf = next(op for op in for_op.walk() if not op.regions and op.results)
    copy = _XDSL_CLONE(leaf, clone_operands=False)
    attach(inner, copy)
    assert copy.parent is inner
    with fast_building():
        assert Block._attach_op is attach_op
    assert Block._attach_op is _XDSL_ATTACH


def _fields(op: Operation) -> list:
    """An op's instance fields in order, values by what they hold (uses by position)."""
    out = []
    for key, value in vars(op).items():
        if key in ("_operand_uses", "_successor_uses"):
            value = [(u.index, u.operation is op) for u in value]
        elif key == "results":
            value = [(r.type, r.index, r.op is op) for r in value]
        elif key == "regions":
            value = [r.parent is op for r in value]
        out.append((key, value))
    return out


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir"])
def test_operation_init_builds_xdsls_ops(name):
    """Every op of every phase rebuilt through `create` (xDSL's `Operation.__init__`
    and `operation_init`): the same fields in the same order, each operand's use list
    in the same order."""
    ctx = make_context()
    module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
    for p in passes_for_module("default", module, None):
        p.apply(ctx, module)
        for op in list(module.walk())[1:300]:
            built = []
            for patched in (False, True):
                kwargs = dict(
                    operands=op.operands,
                    result_types=op.result_types,
                    properties=op.properties,
                    attributes=op.attributes,
                    successors=[],
                )
                if patched:
                    with fast_building():
                        assert Operation.__init__ is operation_init
                        new = type(op).create(**kwargs)
                else:
                    new = type(op).create(**kwargs)
                built.append(new)
            a, b = built
            assert _fields(a) == _fields(b)
            for value in set(op.operands):
                uses = list(value.uses)
                assert [u.index for u in uses if u.operation is a] == [
                    u.index for u in uses if u.operation is b
                ]
            a.drop_all_references()
            b.drop_all_references()
    assert Operation.__init__ is _XDSL_INIT


@pytest.mark.parametrize("name", ["cnn.mlir", "attention.mlir", "residual.mlir"])
def test_pipeline_prints_the_same_with_fast_building(name):
    """The default pipeline with and without `fast_building`: the same module after
    every pass (what the passes decide depends on use lists and clones)."""
    texts = []
    for patched in (False, True):
        ctx = make_context()
        module = parse_module(ctx, (EXAMPLES / name).read_text(), name)
        phases = []
        with fast_building() if patched else nullcontext():
            for p in passes_for_module("default", module, None):
                p.apply(ctx, module)
                phases.append(str(module))
        texts.append(phases)
    assert texts[0] == texts[1]
