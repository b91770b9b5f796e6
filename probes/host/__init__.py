"""The one host detection: stdlib-only facts, pure parsers beside their I/O step, the cubin/PTX rule.

Its public surface is its modules (`__all__`, guarded by a test): ``facts`` (detection and its override
variables), ``parsers`` (the vendor tools' outputs), ``arch_compat`` (which build runs on which GPU) and
``fingerprint`` (the anonymous host id of a report) and ``installed`` (what a Python environment holds, for
`accelenv verify-env`).
"""

__all__ = ["arch_compat", "facts", "fingerprint", "installed", "parsers"]
