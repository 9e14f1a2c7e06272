"""The compile driver: `lamina.compile()` and the pipeline it runs.

Above `passes/` and the back end: it assembles the pipeline for a module's
targets (pipeline.py, hooks.py), runs it (with the instruments of
instruments.py and the measurements of stats.py), hands the build-phase
module to code generation and wraps the result as a runtime `Executable`.
"""
