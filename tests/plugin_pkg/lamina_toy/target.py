from xdsl.dialects.builtin import TensorType
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from lamina.backends.targets import Target
from lamina.core.context import make_context
from lamina.dialects import graph

KERNEL = """
loop.func private @{name}(%x: memref<{n}xf32>, %y: memref<{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = arith.constant {n} : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %n step %c1 {{
    %v = loop.load %x[%i] : memref<{n}xf32>
    %r = arith.maximumf %v, %zero : f32
    loop.store %r, %y[%i] : memref<{n}xf32>
  }}
  loop.return
}}
"""


def claim(op):
    """The toy target lowers 1-D f32 relus itself."""
    ty = op.results[0].type if isinstance(op, graph.ReluOp) else None
    return isinstance(ty, TensorType) and len(ty.get_shape()) == 1


def lower(op):
    """A claimed relu becomes a call of a hand-written loop kernel."""
    module = op.get_toplevel_object()
    n = op.results[0].type.get_shape()[0]
    name = f"toy_relu_{n}"
    if SymbolTable.lookup_symbol(module, name) is None:
        text = KERNEL.format(name=name, n=n)
        kernel = Parser(make_context(), text).parse_module().body.block.first_op
        kernel.detach()
        module.body.block.add_op(kernel)
    call = graph.CallLoopOp(name, [op.operands[0]], [op.results[0].type])
    Rewriter.insert_op(call, InsertPoint.before(op))
    Rewriter.replace_op(op, [], call.results)


def toy_target():
    return Target(
        "toy",
        extends="cpu",
        hooks={"optimization": ["toy-lower"]},
        claim=claim,
        lower=lower,
    )
