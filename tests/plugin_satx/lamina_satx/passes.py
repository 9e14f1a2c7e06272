from dataclasses import dataclass

from xdsl.dialects.builtin import StringAttr
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException


@dataclass(frozen=True)
class SatxMarkPass(ModulePass):
    """A plain xDSL pass (no Lamina phase contract), registered by name: marks the module."""

    name = "satx-mark"

    def apply(self, ctx, op):
        op.attributes["satx.mark"] = StringAttr("optimization")


@dataclass(frozen=True)
class SatxStampPass(ModulePass):
    """A plain xDSL pass given to the target as an instance (its class is registered nowhere).

    It stamps the module with `tag`; a module with a function named `refuse_stamp`
    makes it fail, so that a reproducer of a failing instance hook can be written.
    """

    name = "satx-stamp"
    tag: str = "build"

    def apply(self, ctx, op):
        for inner in op.walk():
            if getattr(inner, "sym_name", None) == StringAttr("refuse_stamp"):
                raise DiagnosticException("satx-stamp refuses a module with @refuse_stamp")
        op.attributes["satx.stamp"] = StringAttr(self.tag)
