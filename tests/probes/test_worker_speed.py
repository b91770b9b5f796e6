"""What keeps the probe's workers fast on a small host, without changing what they check.

The cores are shared out among the workers that run at once (each gets ``torch.set_num_threads``), and the
OpInfo group finds the running test (there is none in a worker) without ``inspect.stack()``; both were
measured in ``benchmarks/bench_probe.py``. Here: the share, and that the frame walk answers what torch's
``extract_test_fn`` answers, inside a ``unittest.TestCase`` and outside one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from probes.harness.entry import worker_threads
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(("workers", "cpus", "threads"), [(3, 2, 1), (3, 16, 5), (1, 8, 8), (4, 1, 1)])
def test_the_cores_are_shared_out_among_the_workers(workers: int, cpus: int, threads: int) -> None:
    assert worker_threads(workers, cpus=cpus, environ={}) == threads


def test_omp_num_threads_set_by_the_user_wins() -> None:
    assert worker_threads(3, cpus=16, environ={"OMP_NUM_THREADS": "4"}) is None


@pytest.mark.torch
def test_the_frame_walk_finds_what_torch_finds() -> None:
    # In a fresh interpreter: importing torch's test utilities inside pytest's process trips setuptools'
    # distutils shim when another test imported the stdlib distutils first; and no test may have replaced
    # torch's extract_test_fn yet.
    script = textwrap.dedent(
        """
        import unittest
        import torch.testing._internal.common_utils as common_utils
        from probes.checks import opinfo

        torch_lookup = common_utils.extract_test_fn
        assert opinfo._running_test_fn() is None and torch_lookup() is None
        seen = {}

        class Case(unittest.TestCase):
            def test_inside(self):
                seen["ours"], seen["torch"] = opinfo._running_test_fn(), torch_lookup()

        result = unittest.TestResult()
        Case("test_inside").run(result)
        assert result.wasSuccessful(), result.errors
        assert seen["ours"] is Case.test_inside and seen["torch"] is Case.test_inside, seen
        print("same answer")
        """
    )
    env = {**os.environ, "SETUPTOOLS_USE_DISTUTILS": "stdlib"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=240,
                          cwd=REPO_ROOT, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("same answer")
