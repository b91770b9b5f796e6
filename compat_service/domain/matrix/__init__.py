"""The matrix: its schema, loading and snapshot, cross-file rules, release view and the read interface."""
