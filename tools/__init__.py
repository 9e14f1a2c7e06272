"""Lamina tools (see docs/design.md §1)."""
