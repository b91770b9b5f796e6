"""Process-level tuning of a worker: HTTP protocol, GC, lifecycle lines."""
