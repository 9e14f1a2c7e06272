"""The runtime: calling compiled code on NumPy arrays, loading it from the disk cache.

Importable without xDSL, llvmlite or any compiler package (tests/test_code_layout.py
checks it): a process that only runs compiled models needs nothing else.
LLVM's object loader is imported only by the function that loads cached code.
"""
