"""The bundled matrix_data: it validates, keeps its invariants, and says what the sourced facts say."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from compat_service.domain.matrix.loading.loader import load_matrix_data, load_matrix_rows, matrix_data_problems
from compat_service.domain.matrix.loading.validation import source_references
from compat_service.domain.matrix.model.rows import MatrixTables, TorchMinor, TorchPatch
from compat_service.domain.matrix.model.schema import MATRIX_FILES, python_sort_key
from matrix_data import DATA_DIR

# the sourced research notes beside the checkout (CI lays a copy of shared/ next to its clone)
FACTS = Path(__file__).resolve().parents[3] / "shared" / "facts"

# Every torch release the issue asks for (1.13.0 -> 2.13.x), plus the partial ones.
RELEASED = [
    "1.13.0", "1.13.1", "2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2.0", "2.2.1", "2.2.2",
    "2.3.0", "2.3.1", "2.4.0", "2.4.1", "2.5.0", "2.5.1", "2.6.0", "2.7.0", "2.7.1", "2.8.0",
    "2.9.0", "2.9.1", "2.10.0", "2.11.0", "2.12.0", "2.12.1", "2.13.0",
]  # fmt: skip
PARTIAL = ["2.14.0", "2.14.1", "2.15.0"]


@pytest.fixture(scope="module")
def data() -> MatrixTables:
    return load_matrix_rows()


def _minor(data: MatrixTables, minor: str) -> TorchMinor:
    return next(m for m in data.torch_releases.minors if m.minor == minor)


def _patch(data: MatrixTables, version: str) -> TorchPatch:
    v = Version(version)
    return next(p for p in _minor(data, f"{v.major}.{v.minor}").patches if p.version == version)


def _python(data: MatrixTables, version: str, platform: str) -> set[str]:
    patch = _patch(data, version)
    minor = _minor(data, f"{Version(version).major}.{Version(version).minor}")
    entries = patch.python_override if patch.python_override is not None else minor.python
    return {v for e in entries if e.platforms is None or platform in e.platforms for v in e.versions}


def _labels(data: MatrixTables, minor: str, platform: str) -> set[str]:
    return {v.label for v in _minor(data, minor).variants if platform in v.platforms}


# ----------------------------------------------------------------------------------------- validity


def test_bundled_matrix_has_no_problems() -> None:
    assert matrix_data_problems() == []


@pytest.mark.parametrize("name", list(MATRIX_FILES))
def test_every_bundled_file_exists_and_parses_as_its_model(name: str) -> None:
    raw = yaml.safe_load((DATA_DIR / name).read_text(encoding="utf-8"))
    model = MATRIX_FILES[name].model_validate(raw)
    assert model.model_dump(by_alias=True)["schema"] == raw["schema"]


# ----------------------------------------------------------------------------------------- invariants


def test_every_release_from_1_13_to_2_15_is_present_and_released(data: MatrixTables) -> None:
    patches = {p.version: m.status for m in data.torch_releases.minors for p in m.patches}
    assert sorted(patches, key=Version) == sorted(RELEASED + PARTIAL, key=Version)
    # the curated partial minors are released once the generated layer (package index) gives their wheels
    assert {v for v, status in patches.items() if status == "released"} == set(RELEASED + PARTIAL)
    for minor in data.torch_releases.minors:
        if any(p.version in PARTIAL for p in minor.patches):
            assert all("package_index" in e.source for e in minor.default_index)


def test_no_duplicates(data: MatrixTables) -> None:
    duplicates: dict[str, Counter[Any]] = {
        "patches": Counter(p.version for m in data.torch_releases.minors for p in m.patches),
        "variant labels": Counter(v.label for v in data.build_variants.variants),
        "toolkits": Counter(Version(t.version) for t in data.cuda.toolkits),
        "source keys": Counter(s.key for s in data.sources.sources),
        "minors": Counter(m.minor for m in data.torch_releases.minors),
    }
    assert {kind: [k for k, n in c.items() if n > 1] for kind, c in duplicates.items()} == {
        kind: [] for kind in duplicates
    }


def test_every_cuda_variant_used_by_a_release_has_a_driver_row(data: MatrixTables) -> None:
    variants = {v.label: v for v in data.build_variants.variants}
    toolkits = {Version(t.version) for t in data.cuda.toolkits}
    used = {
        v.label for m in data.torch_releases.minors for v in m.variants if variants[v.label].family == "cuda"
    }
    assert used, "no CUDA variants at all"
    for label in used:
        variant = variants[label]
        if variant.runtime_full:
            assert Version(variant.runtime_full) in toolkits, label
        else:
            assert variant.runtime is not None, label
            assert any(t.release[:2] == Version(variant.runtime).release[:2] for t in toolkits), label


def test_python_lists_are_non_empty_and_ordered(data: MatrixTables) -> None:
    for minor in data.torch_releases.minors:
        entries = list(minor.python) + [e for p in minor.patches for e in (p.python_override or [])]
        if minor.status == "released":
            assert entries, minor.minor
        for entry in entries:
            assert entry.versions == sorted(entry.versions, key=python_sort_key), minor.minor


def test_every_row_cites_a_source_that_exists() -> None:
    data = load_matrix_data()  # the validated models: source_references walks them as validation does
    known = {s.key for s in data.sources.sources}
    cited = []
    for name in MATRIX_FILES:
        file_model = getattr(data, name.removesuffix(".yaml"))
        for field in type(file_model).model_fields:
            rows = getattr(file_model, field)
            if isinstance(rows, list):
                cited += [
                    (name, *hit) for i, row in enumerate(rows) for hit in source_references(row, f"{field}[{i}]")
                ]
    assert len(cited) > 500
    assert [c for c in cited if c[2] not in known] == []


def test_released_patches_have_dates_or_say_why(data: MatrixTables) -> None:
    missing = [
        p.version
        for m in data.torch_releases.minors
        if m.status == "released"
        for p in m.patches
        if p.release_date is None
    ]
    assert missing == []
    # the first upload on the package index (generated layer) gives the dates curated sources lacked
    assert str(_patch(data, "2.12.1").release_date) == "2026-06-17"
    assert "package_index" in _patch(data, "2.12.1").release_date_source


# Hosts the data may cite. The default package index is cited by name only (source `pypi_metadata`,
# url null): its host name is kept out of the data on purpose.
CITED_HOSTS = {
    "download.pytorch.org", "dev-discuss.pytorch.org", "developer.apple.com", "developer.nvidia.com",
    "docs.nvidia.com",
    "docs.pytorch.org", "gitcode.com", "github.com", "rocm.docs.amd.com", "zhidx.com",
    # the ecosystem's sources (ecosystem.yaml): vLLM's and bitsandbytes' documentation sites
    "docs.vllm.ai", "huggingface.co",
    # the wheel-variant PEPs (825, 817) the exported variant metadata follows
    "peps.python.org",
    # GitHub's runner reference (ci_runners.yaml's runs_on labels)
    "docs.github.com",
    # Jetson (jetson.yaml): NVIDIA's forum list of JetPack wheels, NVIDIA's download site holding the wheel files,
    # and a gist tabulating JetPack <-> L4T <-> CUDA
    "forums.developer.nvidia.com", "developer.download.nvidia.com", "gist.github.com",
    # PyTorch's own site (its XPU getting-started and release pages), GitHub's raw files (upstream tables at
    # a tag), LLVM's AMDGPU processor table (gfx arch of AMD APUs)
    "pytorch.org", "raw.githubusercontent.com", "llvm.org",
    # the stack packages' own documents: PyG's and OpenMMLab's wheel pages, DeepSpeed's site, vLLM's forum
    # and a vLLM docs build of a pull request
    "data.pyg.org", "download.openmmlab.com", "deepspeed.ai", "discuss.vllm.ai", "vllm--6910.org.readthedocs.build",
    # DGL's own wheel pages (its install page names them; the package index stopped at 2.2.1)
    "data.dgl.ai",
}


def test_every_url_in_the_data_points_at_a_cited_host() -> None:
    text = "".join((DATA_DIR / name).read_text(encoding="utf-8") for name in (*MATRIX_FILES, "ecosystem.yaml"))
    hosts = set(re.findall(r"https?://([^/\s\"']+)", text))
    assert hosts <= CITED_HOSTS, sorted(hosts - CITED_HOSTS)


# ----------------------------------------------------------------------------------------- spot checks


@pytest.mark.parametrize(
    ("torch", "torchvision", "torchaudio"),
    [
        ("1.13.1", "0.14.1", "0.13.1"),
        ("2.0.0", "0.15.1", "2.0.1"),
        ("2.3.1", "0.18.1", "2.3.1"),
        ("2.7.1", "0.22.1", "2.7.1"),
        ("2.11.0", "0.26.0", "2.11.0"),
        ("2.12.0", "0.27.0", "2.11.0"),
        ("2.12.1", "0.27.1", "2.11.0"),
        ("2.13.0", "0.28.0", "2.11.0"),
    ],
    ids=lambda v: v,
)
def test_companions(data: MatrixTables, torch: str, torchvision: str, torchaudio: str) -> None:
    patch = _patch(data, torch)
    assert (patch.torchvision.version, patch.torchaudio.version) == (torchvision, torchaudio)


@pytest.mark.parametrize(
    ("torch", "triton"),
    [("1.13.0", None), ("2.0.0", "2.0.0"), ("2.1.2", "2.1.0"), ("2.4.1", "3.0.0"), ("2.7.0", "3.3.0"),
     ("2.9.1", "3.5.1"), ("2.11.0", "3.6.0"), ("2.12.1", "3.7.1"), ("2.14.0", None)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_triton_pins(data: MatrixTables, torch: str, triton: str | None) -> None:
    assert _patch(data, torch).triton.version == triton


def test_torch_2_0_depends_on_the_triton_package_not_pytorch_triton(data: MatrixTables) -> None:
    triton = _patch(data, "2.0.0").triton
    assert triton.version == "2.0.0"
    assert "package triton (not pytorch-triton" in (triton.note or "")
    assert triton.requirement == "triton==2.0.0"
    assert triton.marker == 'platform_system == "Linux" and platform_machine == "x86_64"'


@pytest.mark.parametrize("minor", ["2.9", "2.10", "2.11"])
def test_cu129_is_published_for(data: MatrixTables, minor: str) -> None:
    assert "cu129" in _labels(data, minor, "linux-x86_64")


def test_cu129_is_gone_from_2_12(data: MatrixTables) -> None:
    assert "cu129" not in _labels(data, "2.12", "linux-x86_64")


@pytest.mark.parametrize(
    ("torch", "platform", "has_313"),
    [("2.5.0", "linux-x86_64", True), ("2.5.1", "linux-x86_64", True), ("2.5.1", "windows-x86_64", False),
     ("2.5.1", "macos-arm64", False), ("2.6.0", "windows-x86_64", True)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_python_3_13_of_2_5_is_linux_x86_64_only(
    data: MatrixTables, torch: str, platform: str, has_313: bool
) -> None:
    assert ("3.13" in _python(data, torch, platform)) is has_313


@pytest.mark.parametrize(
    ("torch", "has_313t"), [("2.12.0", True), ("2.12.1", False), ("2.9.0", True), ("2.13.0", False)]
)
def test_free_threaded_3_13t(data: MatrixTables, torch: str, has_313t: bool) -> None:
    assert ("3.13t" in _python(data, torch, "linux-x86_64")) is has_313t


@pytest.mark.parametrize(
    ("minor", "platform", "label"),
    [("1.13", "linux-x86_64", "cu117"), ("2.0", "linux-x86_64", "cu117"), ("2.4", "linux-x86_64", "cu121"),
     ("2.5", "linux-x86_64", "cu124"), ("2.7", "linux-x86_64", "cu126"), ("2.8", "linux-x86_64", "cu128"),
     ("2.11", "linux-x86_64", "cu130"), ("2.11", "linux-aarch64", "cu130"), ("2.9", "linux-aarch64", "cpu"),
     ("2.13", "windows-x86_64", "cpu"), ("2.13", "macos-arm64", "cpu"), ("2.14", "linux-x86_64", "cu130")],
    ids=lambda v: str(v),
)  # fmt: skip
def test_default_index_variant(data: MatrixTables, minor: str, platform: str, label: str) -> None:
    entry = next(d for d in _minor(data, minor).default_index if d.platform == platform)
    assert entry.label == label


def test_macos_x86_64_ends_with_2_2(data: MatrixTables) -> None:
    assert "cpu" in _labels(data, "2.2", "macos-x86_64")
    assert _labels(data, "2.3", "macos-x86_64") == set()
    assert "macos-x86_64" not in _minor(data, "2.3").platforms_unsourced


@pytest.mark.parametrize(
    ("minor", "option"),
    [("1.13", "--extra-index-url"), ("2.0", "--index-url"), ("2.12", "--index-url"), ("2.15", None)],
)
def test_index_option(data: MatrixTables, minor: str, option: str | None) -> None:
    assert _minor(data, minor).index_option == option


@pytest.mark.parametrize(
    ("toolkit", "linux", "windows"),
    [("11.8.0", "520.61.05", "520.06"), ("12.1.1", "530.30.02", "531.14"), ("12.8.1", "570.124.06", "572.61"),
     ("13.0.2", "580.95.05", None)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_cuda_driver_rows(data: MatrixTables, toolkit: str, linux: str, windows: str | None) -> None:
    row = next(t for t in data.cuda.toolkits if t.version == toolkit)
    assert (row.min_driver_linux, row.min_driver_windows) == (linux, windows)


def test_minor_version_compatibility_floors(data: MatrixTables) -> None:
    floors = {
        m.cuda_major: (m.min_driver_linux, m.below_driver) for m in data.cuda.minor_version_compatibility
    }
    assert floors == {11: ("450.80.02", "525"), 12: ("525.60.13", "580"), 13: ("580", None)}
    windows = {m.cuda_major: m.min_driver_windows for m in data.cuda.minor_version_compatibility}
    assert windows == {11: "452.39", 12: "527.41", 13: "580"}


def _archs(data: MatrixTables, torch: str, variant: str, platform: str) -> list[str] | None:
    for row in data.gpu_archs.arch_lists:
        if row.variant == variant and platform in row.platforms and SpecifierSet(row.torch).contains(torch):
            return row.archs
    return None


@pytest.mark.parametrize(
    ("torch", "variant", "arch", "shipped"),
    [("2.13.0", "cu126", "sm_120", False), ("2.13.0", "cu130", "sm_120", True),
     ("2.13.0", "cu126", "sm_50", True), ("2.11.0", "cu130", "sm_70", False),
     ("2.9.0", "cu128", "sm_70", True), ("2.9.0", "cu128", "sm_61", False),
     ("2.9.0", "cu128", "sm_60", False), ("2.5.1", "cu124", "sm_60", True),
     # the wheels' lists (pytorch/builder release branches), not the conda packages' (which add sm_61)
     ("2.5.1", "cu124", "sm_61", False), ("2.5.1", "cu118", "sm_37", True), ("2.0.1", "cu117", "sm_90", False),
     ("2.0.1", "cu118", "sm_90", True), ("1.13.1", "cu117", "sm_37", True), ("2.3.1", "cu121", "sm_37", False)],
    ids=lambda v: str(v),
)  # fmt: skip
def test_gpu_arch_lists(data: MatrixTables, torch: str, variant: str, arch: str, shipped: bool) -> None:
    archs = _archs(data, torch, variant, "linux-x86_64")
    assert archs is not None
    assert (arch in archs) is shipped


def test_arch_lists_are_unknown_where_unsourced(data: MatrixTables) -> None:
    assert _archs(data, "2.7.1", "cu126", "linux-x86_64") is None
    assert _archs(data, "2.6.0", "rocm6.2.4", "linux-x86_64") is None
    assert _archs(data, "2.11.0", "cu129", "linux-x86_64") is None


def test_rocm_gfx_lists(data: MatrixTables) -> None:
    assert _archs(data, "2.3.1", "rocm6.0", "linux-x86_64") == [
        "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100", "gfx942"
    ]
    # gfx942 (MI300) came with the ROCm 6.0 images: the 2.3 rocm5.7 build lacks it
    assert "gfx942" not in (_archs(data, "2.3.1", "rocm5.7", "linux-x86_64") or [])


def test_every_unknown_build_is_counted_and_searched_builds_say_what_was_searched(data: MatrixTables) -> None:
    from compat_service.domain.matrix.arch_coverage import arch_list_coverage

    builds = {(b.torch, b.variant, b.platform): b for b in arch_list_coverage(data)}
    assert builds[("2.3.1", "cu121", "linux-x86_64")].known
    unknown = builds[("2.7.1", "cu126", "linux-x86_64")]
    assert not unknown.known and unknown.searched and "v2.7.1" in unknown.searched
    assert not builds[("2.6.0", "rocm6.2.4", "linux-x86_64")].known
    # measured on the published wheels (third_party_arch_list_outputs)
    assert builds[("2.7.1", "cu128", "linux-x86_64")].known and builds[("2.14.0", "rocm7.2", "linux-x86_64")].known


def test_vendor_backends(data: MatrixTables) -> None:
    npu = {(r.torch_npu, r.torch): r for r in data.vendor_backends.ascend_npu}
    assert npu[("2.12.0", "2.12.0")].cann == "9.1.0"
    # Ascend's table says 3.10-3.14; the wheels on the index are cp310-cp313 (the generated layer wins)
    assert npu[("2.12.0", "2.12.0")].python == ["3.10", "3.11", "3.12", "3.13"]
    assert npu[("2.13.0", "2.13.0")].cann is None
    mlu = {(r.torch_mlu, r.torch) for r in data.vendor_backends.cambricon_mlu}
    assert ("1.22.0", "2.4.0") in mlu
    assert {"ascend", "cambricon"} <= set(data.vendor_backends.install_notes)


@pytest.mark.skipif(not FACTS.is_dir(), reason="shared/facts is not present on this machine")
def test_every_patch_in_the_facts_is_in_the_matrix(data: MatrixTables) -> None:
    facts = yaml.safe_load((FACTS / "torch_releases.yaml").read_text(encoding="utf-8"))
    fact_patches = {p["version"] for minor in facts["releases"].values() for p in minor["patches"]}
    ours = {p.version for m in data.torch_releases.minors for p in m.patches}
    assert fact_patches <= ours
    for minor in facts["releases"].values():
        for p in minor["patches"]:
            value = p["torchvision"].get("value")
            if value is not None:
                assert _patch(data, p["version"]).torchvision.version == value, p["version"]
