"""Lamina tools (see DESIGN §1)."""
