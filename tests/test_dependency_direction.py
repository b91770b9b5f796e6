"""The dependency direction of STYLE.md, enforced: import-linter contracts and the probes' Python floor.

- `lint-imports` runs the contracts in pyproject.toml ([tool.importlinter]).
- compat_service/, cli/ and benchmarks/ must run on Python 3.10 (vermin), the floor pyproject.toml declares.
- Every file under probes/ must run on Python 3.8 (vermin) and import only the standard library, torch (and
  its vendor plugins such as torch_npu) or probes itself: probes run on hosts that may have nothing else.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

BIN = Path(sys.executable).parent
PROBES = REPO_ROOT / "probes"
PROBE_FILES = sorted(PROBES.rglob("*.py")) if PROBES.is_dir() else []
VERMIN_ARGS = ["-q", "-t=3.8-", "--violations", "--no-tips", "--eval-annotations", "--no-parse-comments"]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=False)


def test_import_contracts_are_kept() -> None:
    result = _run([str(BIN / "lint-imports"), "--no-cache"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_probes_need_no_newer_python_than_3_8() -> None:
    if not PROBE_FILES:
        # Nothing to check yet; the vermin guard below still proves the check would bite.
        assert not PROBES.exists() or not any(PROBES.rglob("*.py"))
        return
    result = _run([str(BIN / "vermin"), *VERMIN_ARGS, *map(str, PROBE_FILES)])
    assert result.returncode == 0, f"probes need a newer Python than 3.8:\n{result.stdout}{result.stderr}"


def test_the_tool_needs_no_newer_python_than_3_10() -> None:
    """pyproject.toml says requires-python >= 3.10: the service, the CLI and the benchmarks must run there."""
    folders = [str(REPO_ROOT / name) for name in ("compat_service", "cli", "benchmarks")]
    result = _run([str(BIN / "vermin"), *VERMIN_ARGS[:1], "-t=3.10-", *VERMIN_ARGS[2:], *folders])
    assert result.returncode == 0, f"the tool needs a newer Python than 3.10:\n{result.stdout}{result.stderr}"


def test_vermin_check_flags_a_python_3_9_module(tmp_path: Path) -> None:
    newer = tmp_path / "newer.py"
    newer.write_text("import zoneinfo\n")
    result = _run([str(BIN / "vermin"), *VERMIN_ARGS, str(newer)])
    assert result.returncode != 0
    assert "zoneinfo" in result.stdout


def _top_level_imports(file: Path) -> set[str]:
    tree = ast.parse(file.read_text(encoding="utf-8"), filename=str(file))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("file", PROBE_FILES, ids=[str(f.relative_to(REPO_ROOT)) for f in PROBE_FILES])
def test_probe_imports_only_stdlib_and_torch(file: Path) -> None:
    allowed = set(sys.stdlib_module_names) | {"torch", "probes", "__future__"}
    # Vendor PrivateUse1 plugins (torch_npu, torch_mlu) live beside torch on the target host.
    foreign = {name for name in _top_level_imports(file) - allowed if not name.startswith("torch_")}
    assert not foreign, f"{file.name} imports {sorted(foreign)}; probes may use only the stdlib and torch"
