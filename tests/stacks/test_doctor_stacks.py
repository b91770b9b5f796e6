"""`accelenv doctor` names an installed ecosystem package whose torch requirement the installed torch breaks,
with the command that repairs it (the real command, a fake site-packages with real-shaped metadata)."""

from __future__ import annotations

from pathlib import Path

from compat_service.domain.stacks.catalog import load_catalog
from tests.cli.test_doctor_cmd import by_check, doctor, host, install  # noqa: F401 - `host` is a fixture


def _vllm_release(torch_minor_prefix: str) -> tuple[str, str]:
    """A vLLM release pinning a torch of this prefix, from the generated data: (vllm version, torch pin)."""
    vllm = load_catalog().get("vllm")
    assert vllm is not None
    for release in vllm.releases:
        pin = release.pins("linux-x86_64", None).get("torch")
        if pin and pin.startswith(torch_minor_prefix) and not release.prerelease:
            return release.version, pin
    raise AssertionError(f"no vLLM release pins torch {torch_minor_prefix}")


def test_an_installed_vllm_the_installed_torch_breaks_is_an_error_with_its_repair(tmp_path: Path, host) -> None:  # noqa: F811
    host("cpu")
    version, pin = _vllm_release("2.14.")
    install(tmp_path, "torch", "2.9.1+cpu")
    install(tmp_path, "vllm", version)
    code, report = doctor("--site-packages", str(tmp_path))
    finding = by_check(report)["stack"]
    assert code == 1 and finding["severity"] == "error"
    assert f"vllm {version} requires torch=={pin}" in finding["message"] and "2.9.1+cpu" in finding["message"]
    assert finding["fix"] and "vllm==" in finding["fix"]


def test_an_installed_vllm_that_fits_its_torch_is_not_flagged(tmp_path: Path, host) -> None:  # noqa: F811
    host("cpu")
    version, pin = _vllm_release("2.14.")
    install(tmp_path, "torch", pin)
    install(tmp_path, "vllm", version)
    _code, report = doctor("--site-packages", str(tmp_path))
    assert "stack" not in by_check(report)


def test_an_installed_torchcodec_built_for_another_torch_is_an_error() -> None:
    from compat_service.domain.stacks.doctor import stack_issues

    catalog = load_catalog()
    issues = stack_issues({"torch": "2.9.1", "torchcodec": "0.16.0"}, catalog, "linux-x86_64", "3.12")
    assert [(i.package, i.severity) for i in issues] == [("torchcodec", "error")]
    assert ">=2.11" in issues[0].message
    assert stack_issues({"torch": "2.9.1", "torchcodec": "0.9.1"}, catalog, "linux-x86_64", "3.12") == []


def test_an_installed_pyg_extension_without_a_page_for_the_installed_torch_is_a_warning() -> None:
    from compat_service.domain.stacks.doctor import stack_issues

    catalog = load_catalog()
    # PyG's pages reach torch 2.12 (pyg_install_wheels): a torch-scatter next to torch 2.13 was built for another
    issues = stack_issues(
        {"torch": "2.13.0+cu130", "torch-scatter": "2.1.2+pt25cu124"}, catalog, "linux-x86_64", "3.12"
    )
    assert [(i.package, i.severity) for i in issues] == [("torch-scatter", "warning")]
    assert "no wheel page for the installed torch 2.13.0+cu130" in issues[0].message
    assert (
        stack_issues({"torch": "2.5.1+cu124", "torch-scatter": "2.1.2+pt25cu124"}, catalog, "linux-x86_64", "3.12")
        == []
    )


def test_doctor_flags_sgl_kernel_beside_another_torch_and_dgl_without_a_page_for_it() -> None:
    from compat_service.domain.stacks.doctor import stack_issues

    catalog = load_catalog()
    # sglang pins sgl-kernel 0.3.21 with torch 2.9.1 (sglang_pyproject); built against libtorch (sglang #5247)
    kernel = stack_issues({"torch": "2.8.0+cu128", "sgl-kernel": "0.3.21"}, catalog, "linux-x86_64", "3.12")
    assert [(i.package, i.severity) for i in kernel] == [("sgl-kernel", "error")]
    assert "==2.9.1" in kernel[0].message
    assert stack_issues({"torch": "2.9.1+cu128", "sgl-kernel": "0.3.21"}, catalog, "linux-x86_64", "3.12") == []
    # DGL's pages reach torch 2.4 (dgl_start_page_2_4)
    dgl = stack_issues({"torch": "2.6.0+cu124", "dgl": "2.4.0+cu124"}, catalog, "linux-x86_64", "3.12")
    assert [(i.package, i.severity) for i in dgl] == [("dgl", "warning")]
    assert stack_issues({"torch": "2.4.1+cu124", "dgl": "2.4.0+cu124"}, catalog, "linux-x86_64", "3.12") == []
