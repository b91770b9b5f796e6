"""The matmul figure's size: doubled for a fast device, shrunk for a slow kernel, so the check stays seconds long."""

from __future__ import annotations

import json

import pytest

from probes.checks import perf
from tests.refdev.conftest import run_python


@pytest.mark.parametrize(
    ("call_s", "expected"),
    [
        (2.0, 512),  # 8x too slow: half the size does an eighth of the work
        (0.3, 960),  # a little too slow: the next multiple of 64 down
        (1000.0, perf.MIN_MATMUL_N),  # never below the floor
    ],
)
def test_a_slow_call_shrinks_n_by_the_cube_root_of_its_excess(call_s: float, expected: int) -> None:
    assert perf._smaller_matmul_n(1024, call_s) == expected


@pytest.mark.torch
def test_a_kernel_slower_than_max_call_s_is_measured_at_a_smaller_size() -> None:
    """The real check on this torch's CPU, with ``MAX_CALL_S`` below what any n=1024 matmul takes: every dtype is
    measured at the smaller size the first call's time gives, and the figure says which."""
    proc = run_python("""
        import json, torch
        from probes.checks import perf
        from probes.checks.context import ProbeContext
        perf.MAX_CALL_S = 1e-5
        result = perf.matmul(ProbeContext(torch, torch.device("cpu")))
        print(json.dumps({"n": result.data["n"], "figures": result.data["figures"]}))
    """)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["n"] and len(out["n"]) == len(out["figures"])
    for n, figure in zip(out["n"], out["figures"], strict=True):
        assert perf.MIN_MATMUL_N <= n < perf.MATMUL_N and n % 64 == 0
        assert figure["note"].startswith(f"n={n},")
        assert figure["value"] > 0 and figure["samples"] == perf.SAMPLES
