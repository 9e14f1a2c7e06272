"""Targets for the FileCheck tests of hooks and claims (`--load-plugin` this file).

* `rival`   — claims `graph.matmul` too, to test refused double claims;
* `hooked`  — one pass at every hook point (placement in --print-pipeline);
* `breaker` — an optimization hook that adds a `func.func`, breaking phase
              invariant 3 (only graph/te/loop/llvm/... ops after ingestion);
* `early`   — a hook asking for `lower-te` at the optimization hook point;
* `relu-folder` — a hook running the plugin pass `fold-double-relu`;
* `stamper` — a build hook given as an instance of a pass class registered
              nowhere (replayed as `target-hook{...}`); it refuses a module
              with a function `@refuse_stamp`.
"""

from dataclasses import dataclass

from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from lamina.backends.targets import Target, register_target
from lamina.dialects import graph


@dataclass(frozen=True)
class AddStrayFunc(ModulePass):
    """A plain xDSL pass that adds a `func.func`: not allowed after ingestion."""

    name = "add-stray-func"

    def apply(self, ctx, op):
        op.body.block.add_op(
            func.FuncOp("stray", FunctionType.from_lists([], []), visibility="private")
        )


@dataclass(frozen=True)
class Stamp(ModulePass):
    """A plain xDSL pass, given to a target as an instance: stamps the module with `tag`."""

    name = "test-stamp"
    tag: str = "stamped"

    def apply(self, ctx, op):
        if any(getattr(o, "sym_name", None) == StringAttr("refuse_stamp") for o in op.walk()):
            raise DiagnosticException("test-stamp refuses a module with @refuse_stamp")
        op.attributes["test.stamp"] = StringAttr(self.tag)


register_target(
    Target(
        "rival",
        claim=lambda op: isinstance(op, graph.MatmulOp),
        lower=lambda op: None,
        extends="cpu",
    )
)
register_target(
    Target(
        "hooked",
        extends="cpu",
        hooks={"optimization": ["cse"], "lowering": ["canonicalize"], "build": ["cse"]},
    )
)
register_target(Target("breaker", extends="cpu", hooks={"optimization": [AddStrayFunc()]}))
register_target(Target("early", extends="cpu", hooks={"optimization": ["lower-te"]}))
# A hook naming a plugin pass by its `-p` spec (load scripts/fold_double_relu.py too).
register_target(Target("relu-folder", extends="cpu", hooks={"claim": ["fold-double-relu"]}))
register_target(
    Target(
        "stamper",
        extends="cpu",
        hooks={"optimization": ["cse", Stamp("first")], "build": [Stamp("late")]},
    )
)
