"""Lamina passes (see DESIGN §1)."""
