"""Compiler infrastructure shared by dialects, passes and tools: context, diagnostics, pass contracts."""
