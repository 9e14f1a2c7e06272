"""Schedule search: lamina-tune (docs/tuning.md)."""
