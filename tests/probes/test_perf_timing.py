"""How the perf figures are taken: the matmul's size (doubled for a fast device, shrunk for a slow kernel, so the
check stays seconds long) and the CPU share that tells a shared host from a kernel that uses one thread."""

from __future__ import annotations

import json
import sys
import threading
import time
from types import SimpleNamespace

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


def _ctx(threads: int) -> SimpleNamespace:
    return SimpleNamespace(torch=SimpleNamespace(get_num_threads=lambda: threads))


def test_a_kernel_on_one_of_two_threads_ran_the_whole_time() -> None:
    """A CPU float16 fallback runs on one of torch's two threads: the idle one is the kernel's, not sharing."""
    share = perf._cpu_share(_ctx(2), 1.0, 1.0, {"1": 0.0, "2": 3.0}, {"1": 0.99, "2": 3.0})
    assert share == pytest.approx(0.99)


def test_threads_that_got_half_the_time_are_a_shared_host() -> None:
    share = perf._cpu_share(_ctx(2), 1.0, 1.0, {"1": 0.0, "2": 0.0}, {"1": 0.5, "2": 0.48, "3": 0.01})
    assert share == pytest.approx(0.49) and share < perf.MIN_CPU_SHARE


def test_without_per_thread_times_the_process_time_over_torchs_threads_is_used() -> None:
    assert perf._cpu_share(_ctx(4), 2.0, 4.0, None, None) == pytest.approx(0.5)
    # nothing ran long enough to count as the kernel's work: the process's figure
    assert perf._cpu_share(_ctx(2), 1.0, 0.2, {"1": 0.0}, {"1": 0.1}) == pytest.approx(0.1)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread CPU times are read from Linux's /proc")
def test_per_thread_cpu_time_is_read_for_the_thread_that_spent_it() -> None:
    before = perf._thread_cpu_s()
    spent = time.thread_time() + 0.3
    while time.thread_time() < spent:  # CPU time, not wall time: the same on a loaded machine
        pass
    after = perf._thread_cpu_s()
    assert before is not None and after is not None
    me = str(threading.get_native_id())
    assert after[me] - before[me] == pytest.approx(0.3, abs=0.05)  # clock ticks: 10 ms here
