"""Lamina backends (see docs/design.md §1)."""
