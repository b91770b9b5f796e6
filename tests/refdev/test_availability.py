"""refdev reports why it cannot work instead of failing: no torch, a torch without the Python hooks, or
PrivateUse1 taken by another backend. Importing the package never needs torch."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.refdev.conftest import result, run_python

RunPython = Callable[..., subprocess.CompletedProcess[str]]

REPORT = """
import json, sys
import probes.refdev
imported_torch = "torch" in sys.modules
ok, why = probes.refdev.availability()
try:
    probes.refdev.install()
    error = None
except RuntimeError as exc:
    error = str(exc)
print(json.dumps({"imported_torch": imported_torch, "ok": ok, "why": why, "error": error}))
"""

# An older torch stands in for the installed one: the boundary is "which torch is on this host".
OLD_TORCH = '''
__version__ = "2.9.1+cpu"
class _C:
    @staticmethod
    def _get_privateuse1_backend_name():
        return "privateuseone"
'''


def test_import_needs_no_torch_and_missing_torch_is_a_reason(tmp_path: Path) -> None:
    (tmp_path / "torch.py").write_text("raise ImportError('No module named torch (test host)')\n")
    out = result(run_python(REPORT, extra_path=[tmp_path]))
    assert out["imported_torch"] is False
    assert out["ok"] is False and out["why"].startswith("torch is not importable")
    assert out["error"].startswith("refdev cannot be installed: torch is not importable")


def test_torch_without_python_hooks_is_unavailable_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "torch").mkdir()
    (tmp_path / "torch" / "__init__.py").write_text(OLD_TORCH)
    out = result(run_python(REPORT, extra_path=[tmp_path]))
    assert out["ok"] is False
    assert "torch 2.9.1+cpu lacks the Python PrivateUse1 hooks (torch._C._acc.create_empty_tensor" in (
        out["why"]
    )
    assert out["error"] == "refdev cannot be installed: " + out["why"]


def test_privateuse1_owned_by_another_backend(refdev_python: RunPython) -> None:
    out = result(refdev_python('import torch\ntorch.utils.rename_privateuse1_backend("npu")\n' + REPORT))
    assert out["ok"] is False
    assert out["why"] == "PrivateUse1 already belongs to the 'npu' backend in this process"


def test_available_on_this_torch(refdev_python: RunPython) -> None:
    out = result(refdev_python(REPORT))
    assert out["ok"] is True and out["error"] is None
