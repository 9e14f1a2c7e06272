"""loop -> llvm conversion: the patterns `lower-to-llvm` applies (passes/lower_to_llvm.py)."""
