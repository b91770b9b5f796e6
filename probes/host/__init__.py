"""The one host detection: stdlib-only facts, pure parsers beside their I/O step, the cubin/PTX rule."""
