"""`accelenv matrix validate` and `accelenv matrix show`: the Typer group, and the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from cli import matrix_cmd
from matrix_data import DATA_DIR
from tests.conftest import REPO_ROOT
from tests.domain.test_matrix_validation import break_matrix, copy_matrix


def _read_known_bad() -> dict[str, list[object]]:
    import yaml

    return yaml.safe_load((DATA_DIR / "known_bad.yaml").read_text(encoding="utf-8"))


runner = CliRunner()
# The matrix group on its own root, as cli.main registers it: these tests do not depend on other groups.
app = typer.Typer()
matrix_cmd.register(app)


def test_validate_clean_prints_a_summary_line_then_the_unknown_arch_lists_and_exits_0() -> None:
    result = runner.invoke(app, ["matrix", "validate"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert lines[0].startswith("matrix_data OK: 17 torch minors, 30 patches")
    assert lines[1].startswith("unknown arch lists (") and len(lines) > 2
    # every unknown CUDA/ROCm build says what was searched (gpu_archs.yaml `searched`)
    assert all(line.startswith("  torch ") and ": searched: " in line for line in lines[2:])
    assert any(line.startswith("  torch 2.7.1 cu126 linux-x86_64: searched: ") for line in lines[2:])


def test_validate_json_lists_the_unknown_arch_lists() -> None:
    result = runner.invoke(app, ["matrix", "validate", "--json"])
    assert result.exit_code == 0, result.output
    unknown = json.loads(result.stdout)["unknown_arch_lists"]
    assert {"torch": "2.6.0", "variant": "rocm6.2.4", "platform": "linux-x86_64"}.items() <= next(
        u for u in unknown if u["torch"] == "2.6.0" and u["variant"] == "rocm6.2.4"
    ).items()
    assert not any(u["torch"] == "2.3.1" and u["variant"] == "cu121" for u in unknown)


def test_validate_a_copy_given_as_path(tmp_path: Path) -> None:
    path = copy_matrix(tmp_path)
    result = runner.invoke(app, ["matrix", "validate", str(path)])
    assert result.exit_code == 0
    assert str(path) in result.stdout


def test_validate_prints_every_problem_and_exits_4(tmp_path: Path) -> None:
    path, expected = break_matrix(tmp_path)
    result = runner.invoke(app, ["matrix", "validate", str(path)])
    assert result.exit_code == 4
    assert sorted(result.stdout.strip().splitlines()) == sorted(expected)
    assert f"error: matrix-invalid: {len(expected)} problem(s) in {path}" in result.stderr


def test_validate_as_a_subprocess_exits_4_without_a_traceback(tmp_path: Path) -> None:
    path, expected = break_matrix(tmp_path)
    proc = subprocess.run(
        [str(Path(sys.executable).parent / "accelenv"), "matrix", "validate", str(path)],
        capture_output=True, text=True, timeout=60, cwd=REPO_ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 4
    assert "Traceback" not in proc.stderr
    assert len(proc.stdout.strip().splitlines()) == len(expected)


def test_show_renders_a_table_per_patch() -> None:
    result = runner.invoke(app, ["matrix", "show", "--torch", "2.3"])
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "torch 2.3.0, released 2024-04-24" in out and "torch 2.3.1, released 2024-06-05" in out
    assert "torchvision 0.18.1 · torchaudio 2.3.1 · triton 2.3.1" in out
    assert "cu121" in out
    assert "│ macos-x86_64" not in out and "│ macos-arm64" in out  # no row for a platform without wheels
    assert "test_infra_matrix:" in out


def test_show_json_for_a_patch() -> None:
    result = runner.invoke(app, ["matrix", "show", "--torch", "2.5.1", "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert [p["version"] for p in view["patches"]] == ["2.5.1"]
    rows = {row["platform"]: row for row in view["patches"][0]["platforms"]}
    assert "3.13" in rows["linux-x86_64"]["python"] and "3.13" not in rows["windows-x86_64"]["python"]
    assert rows["linux-x86_64"]["default_index"] == "cu124"
    assert view["index_option"] == "--index-url"
    assert "pypi_metadata" in view["sources"]


@pytest.mark.parametrize(
    ("torch", "code", "exit_code", "says"),
    [
        ("2.16", "not-found", 3, "nearby releases: 2.13, 2.14, 2.15"),
        ("2.3.7", "not-found", 3, "2.3 has 2.3.0, 2.3.1"),
        ("1.12", "not-found", 3, "nearby releases: 1.13, 2.0, 2.1"),
        ("banana", "invalid-request", 2, "'banana' is not a torch version"),
        ("2.3.1+cu121", "invalid-request", 2, "is not a torch release like 2.3 or 2.3.1"),
    ],
    ids=["newer-minor", "unknown-patch", "older-minor", "not-a-version", "local-tag"],
)
def test_show_bad_release_is_a_clear_error(torch: str, code: str, exit_code: int, says: str) -> None:
    result = runner.invoke(app, ["matrix", "show", "--torch", torch, "--json"])
    assert result.exit_code == exit_code
    body = json.loads(result.stdout)
    assert body["code"] == code
    assert says in body["message"]


def test_show_unknown_release_in_text_lists_alternatives() -> None:
    result = runner.invoke(app, ["matrix", "show", "--torch", "2.16"])
    assert result.exit_code == 3
    assert "error: not-found" in result.stderr
    assert "[--torch 2.15]" in result.stderr


def test_show_on_an_invalid_matrix_exits_4(tmp_path: Path) -> None:
    path, _ = break_matrix(tmp_path)
    result = runner.invoke(app, ["matrix", "show", "--torch", "2.3", "--path", str(path)])
    assert result.exit_code == 4
    assert "error: matrix-invalid" in result.stderr


def test_validate_json_clean_and_broken(tmp_path: Path) -> None:
    clean = runner.invoke(app, ["matrix", "validate", "--json"])
    assert clean.exit_code == 0, clean.output
    body = json.loads(clean.stdout)
    assert body["ok"] is True and body["problems"] == [] and body["counts"]["torch_minors"] == 17
    # known_bad.yaml validated with the rest: its rules are counted
    assert body["counts"]["known_bad_rules"] == len(_read_known_bad()["rules"]) > 0
    path, expected = break_matrix(tmp_path)
    broken = runner.invoke(app, ["matrix", "validate", str(path), "--json"])
    assert broken.exit_code == 4
    body = json.loads(broken.stdout)
    assert (body["ok"], body["code"], body["path"]) == (False, "matrix-invalid", str(path))
    assert sorted(body["problems"]) == sorted(expected)


def test_show_without_torch_lists_every_release_newest_first() -> None:
    from compat_service.domain.matrix.loading.loader import load_matrix_data

    result = runner.invoke(app, ["matrix", "show", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    minors = [m.minor for m in load_matrix_data().torch_releases.minors]
    assert sorted(r["minor"] for r in rows) == sorted(minors) and rows[0]["minor"] == "2.15"
    by_minor = {r["minor"]: r for r in rows}
    assert by_minor["2.3"]["patches"] == ["2.3.0", "2.3.1"] and by_minor["2.3"]["release_date"] == "2024-06-05"
    assert by_minor["2.3"]["python"][0] == "3.8" and by_minor["2.3"]["python"][-1] == "3.12"
    assert by_minor["2.3"]["default_build"]["linux-x86_64"] == "cu121" and "cu118" in by_minor["2.3"]["builds"]
    # 2.15 is curated as partial; the generated layer (package index) gives its wheels, so it is released
    assert by_minor["2.15"]["status"] == "released" and by_minor["2.13"]["status"] == "released"


def test_show_without_torch_renders_a_table() -> None:
    result = runner.invoke(app, ["matrix", "show"], env={"COLUMNS": "220"})
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "torch releases in the matrix" in out
    for header in ("torch", "date", "Python", "builds", "default build (", "status"):
        assert header in out
    row = next(line for line in out.splitlines() if "│ 2.3 (2.3.0–2.3.1)" in line)
    assert "2024-06-05" in row and "3.8–3.12" in row and "cu121" in row and "released" in row


def test_show_latest_is_the_release_resolve_picks() -> None:
    from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
    from compat_service.domain.resolver.request import ResolveRequest
    from compat_service.domain.resolver.stages import resolve

    # the default-index build (2.15's CPU build for linux-x86_64 is in no source read: unknown)
    picked = resolve(ResolveRequest.from_strings(torch="latest", python="3.12", os="linux", arch="x86_64",
                                                 backend="cuda"), load_matrix_cached(None))
    result = runner.invoke(app, ["matrix", "show", "--torch", "latest", "--json"])
    assert result.exit_code == 0, result.output
    view = json.loads(result.stdout)
    assert picked.torch_version in [p["version"] for p in view["patches"]]
    assert view["status"] == "released"


def test_show_evidence_needs_a_release() -> None:
    result = runner.invoke(app, ["matrix", "show", "--database", "sqlite:///x.db", "--json"])
    assert result.exit_code == 2
    assert json.loads(result.stdout)["code"] == "invalid-request"
