"""The CLI's variant commands: `matrix show --variants`, `variants explain`, `resolve --explain-variants`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner
from variantlib.variants_json import VariantsJson

from cli import resolve_cmd
from cli.main import app

runner = CliRunner()


def test_matrix_show_variants_prints_a_variants_json(tmp_path: Path) -> None:
    result = runner.invoke(app, ["matrix", "show", "--torch", "2.13.0", "--variants"])
    assert result.exit_code == 0, result.output
    assert set(VariantsJson(json.loads(result.output)).variants) >= {"null", "cu126"}
    detailed = runner.invoke(app, ["matrix", "show", "--torch", "2.13.0", "--variants", "--json"])
    builds = {b["label"]: b for b in json.loads(detailed.output)["builds"]}
    assert builds["xpu"]["variant_label"] is None and builds["xpu"]["unknown"]


def test_variants_explain_reads_a_variants_json_file(tmp_path: Path) -> None:
    exported = runner.invoke(app, ["matrix", "show", "--torch", "2.13.0", "--variants"]).output
    path = tmp_path / "torch-2.13.0-variants.json"
    path.write_text(exported)
    result = runner.invoke(app, ["variants", "explain", "--variants-json", str(path), "--gpu-arch", "sm_120,sm_61",
                                 "--driver", "580.65.06", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    assert body["differences"][0]["code"] == "highest-gpu-only"


def test_a_malformed_known_bad_is_a_clear_error() -> None:
    result = runner.invoke(app, ["variants", "explain", "--gpu-arch", "sm_90", "--driver", "570.86.10",
                                 "--known-bad", "cu126"])
    assert result.exit_code == 2
    assert "LABEL=REASON" in result.output


def test_resolve_explains_the_variant_choice(capsys: pytest.CaptureFixture[str]) -> None:
    code = resolve_cmd.main(["--torch", "2.13", "--backend", "cu126", "--driver", "535.54.03", "--gpu-arch",
                             "sm_80", "--python", "3.11", "--os", "linux", "--arch", "x86_64",
                             "--explain-variants"])
    out = capsys.readouterr().out
    assert code == 0
    assert "wheel variants:" in out and "differs (minor-version-compat)" in out
    code = resolve_cmd.main(["--torch", "2.13", "--gpu", "RTX 5090,GTX 1080", "--driver", "580.65.06",
                             "--python", "3.11", "--os", "linux", "--arch", "x86_64", "--explain-variants",
                             "--format", "json"])
    body = json.loads(capsys.readouterr().out)
    assert body["variants"]["differences"][0]["code"] == "highest-gpu-only"
