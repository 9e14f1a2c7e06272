"""lamina-toy: the example plugin of docs/extending.md."""
