"""Loop scheduling: the primitives, the analyses they share and the rules `schedule` composes (docs/internals.md)."""
