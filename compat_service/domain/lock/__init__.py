"""Locks: a resolved closure as a PEP 751 ``pylock.toml`` per host class, and which lock a host takes."""
