"""lamina-satx: a test plugin written against docs/extending.md (tests/test_plugins.py)."""
