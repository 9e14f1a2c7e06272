"""Lamina: a TVM-style deep-learning compiler on xDSL.

graph (Relax-like) -> te (tensor expressions) -> loop (TIR-like) -> llvm -> native.
See DESIGN.md in the shared folder, docs/ and README.md.
"""

__version__ = "0.1.0"
