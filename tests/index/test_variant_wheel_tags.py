"""The wheels stage reads a build label's wheels from the file names its own index serves (issue 29): `matrix
refresh` records what each ``/whl/<label>`` index serves (``variant_indexes``), the index layer puts those files'
platform tags beside the default index's, and a build whose tags the described host cannot install is passed over
naming them -- without a host_rules.yaml ``wheel_floors`` row for it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve
from compat_service.index.refresh import run_refresh
from tests.index.conftest import client, location
from tests.index.loopback_index import LoopbackIndex
from tests.index.test_refresh import TODAY


def _refreshed(index: LoopbackIndex, matrix: Path) -> InMemoryMatrix:
    urls = {label: index.variant(label) for label in ("cpu", "cu130")}
    with client(None) as c:
        run_refresh(c, location(index), matrix, packages=["torch"], variants=True, variant_urls=urls, today=TODAY)
    rules = matrix / "host_rules.yaml"
    doc = yaml.safe_load(rules.read_text())
    doc["wheel_floors"] = []  # the tags must come from the file names the refresh read
    rules.write_text(yaml.safe_dump(doc, sort_keys=False))
    return InMemoryMatrix(load_matrix_rows(matrix))


def test_variant_index_file_names_give_the_builds_platform_tags(index: LoopbackIndex, matrix: Path) -> None:
    m = _refreshed(index, matrix)
    minor = next(r for r in m.torch_minors() if r.minor == "2.14")
    patch = next(p for p in m.torch_patches(minor) if p.version == "2.14.0")
    files = {(w.version, w.platform): w.platform_tags for w in patch.wheels if w.package == "torch"}
    assert files[("2.14.0+cu130", "linux-x86_64")] == ["manylinux_2_34_x86_64"]
    assert files[("2.14.0", "linux-x86_64")] == ["manylinux_2_28_x86_64"]  # the default index's, beside it


def test_a_label_build_the_host_cannot_install_is_refused_from_its_file_names(
    index: LoopbackIndex, matrix: Path
) -> None:
    m = _refreshed(index, matrix)
    # the default index's 2.14.0 wheels (manylinux_2_28) install on glibc 2.28; its cu130 index's do not
    request = ResolveRequest.from_strings(
        torch="2.14.0", backend="cu130", python="3.12", glibc="2.28", driver="580.65", gpu_arch="sm_90"
    )
    with pytest.raises(AccelenvError) as caught:
        resolve(request, m)
    said = caught.value.message + " ".join(c.constraint for c in caught.value.causes)
    assert "torch 2.14.0 cu130 wheels are manylinux_2_34_x86_64 (need glibc >= 2.34)" in said, said
    answer = resolve(
        ResolveRequest.from_strings(
            torch="2.14.0", backend="cu130", python="3.12", glibc="2.35", driver="580.65", gpu_arch="sm_90"
        ),
        m,
    )
    assert answer.backend == "cu130"
    assert any(q.name == "glibc" and q.version == "2.34" for q in answer.requirements), answer.requirements
