"""Lamina backends (see DESIGN §1)."""
