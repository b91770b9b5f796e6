"""Request parsing, the GPU-architecture rule, the evidence hook, companion-unknown and the matrix snapshot."""

from __future__ import annotations

import marshal
from pathlib import Path
from typing import Any, cast

import pytest

from compat_service.domain.errors import RESOLVER_ERROR_CODES, CompanionUnknownError, InvalidRequestError
from compat_service.domain.evidence.lookup import CellVerdict, EvidenceStatus
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.matrix.model.rows import MatrixTables, replace
from compat_service.domain.resolver.request import ResolveRequest, parse_torch_spec
from compat_service.domain.resolver.resolution import resolution_to_json
from compat_service.domain.resolver.stages import resolve
from probes.host.arch_compat import cubin_runs_on, ptx_runs_on


@pytest.fixture(scope="module")
def data() -> MatrixTables:
    return load_matrix_rows()


@pytest.mark.parametrize(
    ("built", "gpu", "runs"),
    [
        ("sm_86", "sm_89", True),
        ("sm_80", "sm_86", True),
        ("sm_90", "sm_86", False),
        ("sm_100", "sm_120", False),
        ("sm_120", "sm_121", True),
        ("sm_90a", "sm_90", True),
        ("sm_90a", "sm_91", False),
        ("sm_60", "sm_61", True),
        ("gfx942", "gfx942", True),
        ("gfx90a", "gfx942", False),
    ],
    ids=lambda v: str(v),
)
def test_cubin_compatibility(built: str, gpu: str, runs: bool) -> None:
    assert cubin_runs_on(built, gpu) is runs


@pytest.mark.parametrize(
    ("ptx", "gpu", "runs"),
    [("sm_120", "sm_130", True), ("sm_90", "sm_120", True), ("sm_120", "sm_100", False)],
)
def test_ptx_runs_on_newer_gpus_only(ptx: str, gpu: str, runs: bool) -> None:
    assert ptx_runs_on(ptx, gpu) is runs


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("latest", "latest"),
        ("2.3", "minor"),
        ("2.3.1", "exact"),
        (">=2.2,<2.4", "specifier"),
        ("~=2.3.0", "specifier"),
    ],
)
def test_torch_spec_forms(text: str, kind: str) -> None:
    assert parse_torch_spec(text).kind == kind


@pytest.mark.parametrize(
    "flags",
    [
        {"torch": "2"},
        {"torch": "2.3.1+cu121"},
        {"python": "python3"},
        {"os": "freebsd"},
        {"arch": "riscv64"},
        {"backend": "cuda12"},
        {"driver": "latest-driver"},
        {"gpu_arch": "hopper"},
        # not a package request (a name, optionally with a PEP 440 specifier); an unknown name such as torchtext
        # is refused when the stack is resolved (tests/data/stack_cases: unknown-package-is-an-invalid-request)
        {"with_": "vllm 0.15"},
    ],
    ids=lambda f: next(iter(f)),
)
def test_malformed_flags_are_invalid_requests(flags: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        ResolveRequest.from_strings(**flags)
    assert caught.value.exit_code == 2 and caught.value.hint


def test_request_round_trips_through_query_strings() -> None:
    req = ResolveRequest.from_strings(
        torch=">=2.2,<2.4", python="3.13t", os="macos", arch="aarch64", backend="mps", with_="none"
    )
    assert req.arch == "arm64"
    strings: dict[str, Any] = {("with_" if k == "with" else k): v for k, v in req.to_strings().items()}
    assert ResolveRequest.from_strings(**strings) == req
    assert hash(req) == hash(
        ResolveRequest.from_strings(
            torch=">=2.2,<2.4", python="3.13t", os="macos", arch="arm64", backend="mps", with_="none"
        )
    )


def test_gpu_arch_accepts_compute_capability_form() -> None:
    assert ResolveRequest.from_strings(gpu_arch="9.0").gpu_arch == "sm_90"


def test_companion_unknown_names_the_missing_package(data: MatrixTables) -> None:
    minors = []
    for minor in data.torch_releases.minors:
        if minor.minor == "2.3":
            patches = [replace(p, torchaudio=replace(p.torchaudio, version=None)) for p in minor.patches]
            minor = replace(minor, patches=patches)
        minors.append(minor)
    edited = replace(data, torch_releases=replace(data.torch_releases, minors=minors))
    request = ResolveRequest.from_strings(torch="2.3", backend="cpu", python="3.11")
    with pytest.raises(CompanionUnknownError) as caught:
        resolve(request, InMemoryMatrix(edited))
    assert "torchaudio" in caught.value.message
    assert any(a.request.get("with") == "torchvision" for a in caught.value.alternatives)
    assert "companion-unknown" in RESOLVER_ERROR_CODES


class _Reports:
    def __init__(self, status: str) -> None:
        self.status = status
        self.asked: list[tuple[str, ...]] = []

    def status_for(
        self, torch_version: str, build: str, python: str, os: str, arch: str
    ) -> CellVerdict | None:
        self.asked.append((torch_version, build, python, os, arch))
        status = cast(EvidenceStatus, self.status)  # a parameter of the test: "verified", "broken" or "none"
        return CellVerdict(status, hosts=3, detail="segfault in matmul") if self.status != "none" else None


@pytest.mark.parametrize("status", ["verified", "broken", "none"])
def test_evidence_is_asked_about_the_chosen_cell(data, status: str) -> None:
    reports = _Reports(status)
    res = resolve(
        ResolveRequest.from_strings(torch="2.3", backend="cu121", python="3.10"),
        InMemoryMatrix(data),
        evidence=reports,
    )
    assert ("2.3.1", "cu121", "3.10", "linux", "x86_64") in reports.asked
    assert res.evidence is not None and res.evidence["status"] == ("declared" if status == "none" else status)
    assert any("broken" in w for w in res.warnings) is (status == "broken")


def test_snapshot_gives_the_same_answers_as_the_validated_matrix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data
) -> None:
    monkeypatch.setenv("ACCELENV_CACHE_DIR", str(tmp_path))
    first = load_matrix_cached()  # validates the YAML and writes the snapshot
    assert len(list(tmp_path.glob("matrix-*"))) == 1
    second = load_matrix_cached()  # reads the snapshot
    # one row family on both paths: the same classes, the same rows
    assert type(first.data) is type(second.data) is MatrixTables
    assert second.data == first.data == data
    requests: list[dict[str, Any]] = [
        {"torch": "2.3", "backend": "cu118", "python": "3.10"},
        {"torch": "2.12", "backend": "npu", "python": "3.11"},
        {"backend": "cuda", "gpu_arch": "sm_61", "python": "3.12"},
    ]
    for flags in requests:
        req = ResolveRequest.from_strings(**flags)
        assert (
            resolution_to_json(resolve(req, second))
            == resolution_to_json(resolve(req, first))
            == resolution_to_json(resolve(req, InMemoryMatrix(data)))
        )


def test_old_snapshots_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keyed by file stats, every checkout writes its own snapshot: the cache keeps the newest KEEP_SNAPSHOTS."""
    import os

    from compat_service.domain.matrix.loading.snapshot import KEEP_SNAPSHOTS

    monkeypatch.setenv("ACCELENV_CACHE_DIR", str(tmp_path))
    for i in range(KEEP_SNAPSHOTS + 3):
        old = tmp_path / f"matrix-old{i:02d}.json"
        old.write_text("{}")
        os.utime(old, (1_000_000 + i, 1_000_000 + i))
    load_matrix_cached()  # writes the current snapshot and prunes
    kept = sorted(p.name for p in tmp_path.glob("matrix-*"))
    assert len(kept) == KEEP_SNAPSHOTS and not any(f"old{i:02d}" in name for i in range(4) for name in kept)
    assert any(not name.startswith("matrix-old") for name in kept)


def _snapshot_of(content: bytes) -> tuple[bytes, object]:
    """A snapshot file's key line and its rows as loaded (marshal's bytes may differ between writes of equal rows)."""
    key, _, body = content.partition(b"\n")
    return key, marshal.loads(body)


def _snapshot(path: Path) -> tuple[bytes, object]:
    return _snapshot_of(path.read_bytes())


def test_damaged_snapshot_is_rebuilt_from_the_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACCELENV_CACHE_DIR", str(tmp_path))
    load_matrix_cached()
    (snapshot,) = tmp_path.glob("matrix-*")
    good = snapshot.read_bytes()
    key, _, content = good.partition(b"\n")
    snapshot.write_bytes(key + b"\n" + content[: len(content) // 2])  # the current key, half the rows
    request = ResolveRequest.from_strings(torch="2.3", backend="cu121", python="3.10")
    assert resolve(request, load_matrix_cached()).pins["torch"] == "2.3.1"
    assert _snapshot(snapshot) == _snapshot_of(good)


def test_snapshot_that_no_longer_fits_the_rows_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot of another layout (a required field missing) is a mismatch, rebuilt like a damaged file."""
    monkeypatch.setenv("ACCELENV_CACHE_DIR", str(tmp_path))
    load_matrix_cached()
    (snapshot,) = tmp_path.glob("matrix-*")
    good = snapshot.read_bytes()
    snapshot.write_bytes(good.replace(b"cuda_major", b"major_cuda", 1))  # a field renamed, the same length
    assert snapshot.read_bytes() != good
    request = ResolveRequest.from_strings(torch="2.3", backend="cu121", python="3.10")
    assert resolve(request, load_matrix_cached()).pins["torch"] == "2.3.1"
    assert _snapshot(snapshot) == _snapshot_of(good)


def test_snapshot_of_another_key_is_rebuilt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key on a snapshot's first line decides, not the file's name: a file written for other files is a miss."""
    monkeypatch.setenv("ACCELENV_CACHE_DIR", str(tmp_path))
    load_matrix_cached()
    (snapshot,) = tmp_path.glob("matrix-*")
    good = snapshot.read_bytes()
    snapshot.write_bytes(b"another checkout's key\n" + good.partition(b"\n")[2])
    request = ResolveRequest.from_strings(torch="2.3", backend="cu121", python="3.10")
    assert resolve(request, load_matrix_cached()).pins["torch"] == "2.3.1"
    assert _snapshot(snapshot) == _snapshot_of(good)
