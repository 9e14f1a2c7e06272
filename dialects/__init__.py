"""Lamina dialects (see docs/design.md §1)."""
