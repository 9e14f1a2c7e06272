"""The back end: loop -> llvm conversion (`backends/llvm/`, used by `lower-to-llvm`) and
code generation from the llvm dialect to native code through llvmlite (codegen.py).

`lamina.backends.targets` is the Target API's import path for plugins (a
re-export of `lamina.target`).
"""
