"""Lamina dialects (see DESIGN §1)."""
