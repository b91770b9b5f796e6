"""accelenv probes: run on a target host with only Python (3.8+) and torch; write a JSON report.

Nothing here imports the rest of accelenv or any third-party package; torch is imported inside the
functions that need it. ``python -m probes --help`` or the single-file bundle (``accelenv probe
--bundle``) runs the suite.
"""
