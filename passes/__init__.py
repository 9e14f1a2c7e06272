"""Lamina passes (see docs/design.md §1)."""
