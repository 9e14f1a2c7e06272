from xdsl.dialects.builtin import Float32Type, TensorType
from xdsl.parser import Parser
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import SymbolTable

from lamina.backends.targets import Target
from lamina.core.context import make_context
from lamina.dialects import graph
from lamina_satx.passes import SatxStampPass

KERNEL = """
loop.func private @{name}(%x: memref<{m}x{n}xf32>, %y: memref<{m}x{n}xf32>) {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = arith.constant {m} : index
  %n = arith.constant {n} : index
  %one = arith.constant 1.0 : f32
  loop.for %i = %c0 to %m step %c1 {{
    loop.for %j = %c0 to %n step %c1 {{
      %v = loop.load %x[%i, %j] : memref<{m}x{n}xf32>
      %neg = arith.negf %v : f32
      %e = math.exp %neg : f32
      %d = arith.addf %one, %e : f32
      %r = arith.divf %one, %d : f32
      loop.store %r, %y[%i, %j] : memref<{m}x{n}xf32>
    }}
  }}
  loop.return
}}
"""


def claim(op):
    """satx lowers 2-D f32 sigmoids itself."""
    if not isinstance(op, graph.SigmoidOp):
        return False
    ty = op.results[0].type
    return (
        isinstance(ty, TensorType)
        and len(ty.get_shape()) == 2
        and isinstance(ty.element_type, Float32Type)
    )


def lower(op):
    """A claimed sigmoid becomes a call of satx's loop kernel."""
    module = op.get_toplevel_object()
    m, n = op.results[0].type.get_shape()
    name = f"satx_sigmoid_{m}x{n}"
    if SymbolTable.lookup_symbol(module, name) is None:
        text = KERNEL.format(name=name, m=m, n=n)
        kernel = Parser(make_context(), text).parse_module().body.block.first_op
        kernel.detach()
        module.body.block.add_op(kernel)
    call = graph.CallLoopOp(name, [op.operands[0]], [op.results[0].type])
    Rewriter.insert_op(call, InsertPoint.before(op))
    Rewriter.replace_op(op, [], call.results)


def satx_target():
    return Target(
        "satx",
        extends="cpu",
        hooks={"optimization": ["satx-mark"], "build": [SatxStampPass("build")]},
        claim=claim,
        lower=lower,
        options={"vector_bits": 256},
        description="satx: sigmoids by a hand-written kernel",
    )


def _raise_in_claim(op):
    raise ValueError("satx-bad-claim cannot decide")


def _raise_in_lower(op):
    raise RuntimeError("satx-bad-lower has no kernel")


def bad_claim_target():
    return Target("satx-bad-claim", extends="cpu", claim=_raise_in_claim, lower=lower)


def bad_lower_target():
    return Target("satx-bad-lower", extends="cpu", claim=claim, lower=_raise_in_lower)
