"""The stack answers checked by a real resolver (uv pip compile) against a loopback index built from the recorded
metadata (tests/stacks/oracle_index.py), and the resolver heeding the oracle's recorded outcomes."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.version import Version

from compat_service.domain.errors import AccelenvError
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.stacks.catalog import load_catalog
from compat_service.domain.stacks.resolve import resolve_stack
from compat_service.domain.stacks.schema import OracleConfig, StackOracleFile
from compat_service.index.location import IndexLocation
from compat_service.index.resolution_oracle import OracleTarget, Resolution, resolve_closure
from compat_service.index.stack_oracle import load_oracle_config, run_stack_oracle, write_oracle
from matrix_data import DATA_DIR
from tests.index.metadata_index import RecordedWheel, metadata_index
from tests.stacks.oracle_index import recorded_projects

RECORDED = StackOracleFile.model_validate(yaml.safe_load((DATA_DIR / "index" / "stack-oracle.yaml").read_text()))


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory):
    bundled = load_oracle_config(DATA_DIR)
    assert bundled is not None
    # every ecosystem package, several eras (its 14 newest releases), every platform row and Python 3.9-3.13
    config = OracleConfig(releases=14, pythons=["3.9", "3.10", "3.11", "3.12", "3.13"], platforms=bundled.platforms)
    with metadata_index(recorded_projects(DATA_DIR)) as index:
        location = IndexLocation(url=index.simple, label="loopback", origin="--index-url")
        # packages the real index was asked about too (index/stack-oracle.yaml), so both answer the same questions;
        # the four whose pins decide torch across many eras (the rest would double the run)
        packages = ["bitsandbytes", "torchao", "vllm", "xformers"]
        assert set(packages) <= {o.package for o in RECORDED.outcomes}
        return run_stack_oracle(DATA_DIR, location, packages=packages, config=config, write=False, concurrency=2,
                                cache_dir=tmp_path_factory.mktemp("uv-cache"))


def test_at_least_200_stack_answers_install_with_every_pin_unchanged(checked) -> None:
    good = [o for o in checked.outcomes if o.resolvable]
    assert len(good) >= 200, checked.counts()
    assert all(not o.changed for o in good)
    by_package = Counter(o.package for o in good)
    assert {"vllm", "xformers", "torchao", "bitsandbytes", "torch-npu"} - {"torch-npu"} <= set(by_package), by_package
    assert len({o.platform for o in good}) >= 3 and len({o.python for o in good}) >= 4
    assert len({o.torch.rsplit(".", 1)[0] for o in good}) >= 5  # several torch eras


def test_the_only_unresolvable_answers_are_those_the_real_index_refuses_too(checked) -> None:
    real = {(o.package, o.version, o.platform, o.python): o for o in RECORDED.outcomes}
    bad = [o for o in checked.outcomes if not o.resolvable]
    assert bad, "vllm 0.34.0 pins a flashinfer-python release the index does not have"
    for outcome in bad:
        recorded = real.get((outcome.package, outcome.version, outcome.platform, outcome.python))
        assert recorded is not None and not recorded.resolvable, outcome
        assert outcome.failing == recorded.failing, (outcome, recorded)
    assert {(o.version, o.failing) for o in bad if o.package == "vllm"} == {("0.34.0", "flashinfer-python==0.7.3")}


def test_the_outcomes_are_written_sorted_with_their_provenance(checked, tmp_path: Path) -> None:
    (tmp_path / "index").mkdir()
    facts = StackOracleFile.model_validate({"schema": "stack_oracle/v1", "index": "loopback", "retrieved": "2026-12-06",
                                            "resolver": "uv", "outcomes": checked.outcomes[::-1]})
    written = write_oracle(tmp_path, facts)
    again = StackOracleFile.model_validate(yaml.safe_load(written.read_text()))
    assert again.index == "loopback" and len(again.outcomes) == len(checked.outcomes)
    keys = [(o.package, o.version, o.platform, o.python) for o in again.outcomes]
    assert keys == sorted(keys)


def _stack(*with_: str, python: str = "3.12"):
    request = ResolveRequest.from_strings(with_=list(with_), backend="cuda", python=python)
    return resolve_stack(request, load_matrix_cached(), None, load_catalog())


def test_the_resolver_never_picks_a_release_the_oracle_found_unresolvable() -> None:
    assert {p.name: p.version for p in _stack("vllm").stack}["vllm"] == "0.33.0"


def test_asking_for_an_unresolvable_release_names_the_failing_requirement() -> None:
    with pytest.raises(AccelenvError) as caught:
        _stack("vllm==0.34.0")
    err = caught.value
    assert err.code == "stack-conflict"
    text = err.message + " ".join(c.constraint for c in err.causes)
    assert "flashinfer-python==0.7.3" in text and "real resolver" in text


def test_a_needs_build_outcome_is_not_a_refusal_and_an_unresolvable_one_is(tmp_path: Path) -> None:
    import shutil

    data = tmp_path / "matrix_data"
    shutil.copytree(DATA_DIR, data, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    base = {"package": "vllm", "version": "0.33.0", "platform": "linux-x86_64", "python": "3.12", "torch": "2.14.0",
            "requested": ["torch==2.14.0", "vllm==0.33.0"], "resolvable": False, "failing": "tensorrt==10.0"}
    facts = StackOracleFile.model_validate({"schema": "stack_oracle/v1", "index": "loopback", "retrieved": "2026-12-06",
                                            "resolver": "uv", "outcomes": [{**base, "needs_build": True}]})
    write_oracle(data, facts)
    request = ResolveRequest.from_strings(with_=["vllm==0.33.0"], backend="cuda", python="3.12")
    assert resolve_stack(request, load_matrix_cached(), None, load_catalog(data)).stack[0].version == "0.33.0"
    write_oracle(data, facts.model_copy(update={"outcomes": [facts.outcomes[0].model_copy(
        update={"needs_build": False})]}))
    with pytest.raises(AccelenvError) as caught:
        resolve_stack(request, load_matrix_cached(), None, load_catalog(data))
    assert "tensorrt==10.0 cannot be installed" in caught.value.message


def test_the_next_packages_with_index_wheels_resolve_on_the_loopback_index(tmp_path: Path) -> None:
    """sglang (exact torch pin) and torch-tensorrt (one torch minor) are asked like the others; DeepSpeed, which
    ships an sdist only, is never asked: the index the oracle reads has no wheel of its (the loopback drops
    requirements the refresh does not read, such as torch-tensorrt's tensorrt, which the real index serves as an
    sdist: needs_build there)."""
    bundled = load_oracle_config(DATA_DIR)
    assert bundled is not None
    config = OracleConfig(releases=3, pythons=["3.12"], platforms=bundled.platforms)
    asked = ["sglang", "torch-tensorrt", "deepspeed"]
    with metadata_index(recorded_projects(DATA_DIR)) as index:
        location = IndexLocation(url=index.simple, label="loopback", origin="--index-url")
        checked = run_stack_oracle(DATA_DIR, location, packages=asked, config=config, write=False, concurrency=2,
                                   cache_dir=tmp_path / "uv-cache")
    assert {o.package for o in checked.outcomes} == {"sglang", "torch-tensorrt"}
    assert all(o.resolvable and not o.changed and not o.find_links for o in checked.outcomes), checked.outcomes
    sglang = {o.version: o.torch for o in checked.outcomes if o.package == "sglang"}
    release = load_catalog().get("sglang").release(max(sglang, key=Version))  # type: ignore[union-attr]
    assert release is not None and sglang[release.version] == release.pins("linux-x86_64", "3.12")["torch"]


#: the hosts of the wheel pages ecosystem.yaml names, and where the loopback serves each instead
PAGE_HOSTS = {"https://data.pyg.org/": "pyg/", "https://download.openmmlab.com/": "mmlab/",
              "https://data.dgl.ai/": "dgl/"}


def _page_wheels(name: str, version: str, torch: str, build: str, pyg: bool) -> list[RecordedWheel]:
    """The wheels a project's page lists for Python 3.12: PyG's carry the torch and build as a local label
    (``torch_scatter-2.1.2+pt25cu124``); the others' are named without one here (a pin holds either way)."""
    dist = name.replace("-", "_")
    local = f"+pt{torch.replace('.', '')}{build}" if pyg else ""
    return [RecordedWheel(f"{dist}-{version}{local}-cp312-cp312-{tag}.whl")
            for tag in ("linux_x86_64" if local else "manylinux1_x86_64", "linux_aarch64", "win_amd64")]


def test_wheel_page_packages_are_checked_with_their_pages_as_find_links(tmp_path: Path) -> None:
    """The PyG extensions and mmcv install from their project's own page: the oracle gives the resolver the page the
    answer names (--find-links) with the index, and the page's local build of the pinned release satisfies the pin.
    DGL 2.4.0 and pyg-lib are on their pages only (the index holds no file of them). The loopback serves each page
    ecosystem.yaml names; the network boundary is where the test steps in: the real resolver (uv) is given the
    loopback's address of each page, as DNS would give a host's."""
    raw = yaml.safe_load((DATA_DIR / "ecosystem.yaml").read_text())
    pages: dict[str, list[RecordedWheel]] = {}
    for package in raw["packages"]:
        for row in package.get("wheel_pages", []):
            for torch in row["torch"]:
                for build in row["builds"]:
                    url = row["url"].format(torch=torch, build=build)
                    host = next(h for h in PAGE_HOSTS if url.startswith(h))
                    wheels = pages.setdefault(PAGE_HOSTS[host] + url.removeprefix(host), [])
                    for version in row["versions"]:
                        wheels += _page_wheels(package["name"], version, torch, build, host == "https://data.pyg.org/")
    bundled = load_oracle_config(DATA_DIR)
    assert bundled is not None
    config = OracleConfig(releases=3, pythons=["3.12"], platforms=bundled.platforms)
    with metadata_index(recorded_projects(DATA_DIR), flat_pages=pages) as index:

        def on_loopback(url: str) -> str:
            host = next(h for h in PAGE_HOSTS if url.startswith(h))
            return f"{index.base}/{PAGE_HOSTS[host]}{url.removeprefix(host)}"

        def resolver(pins: list[str], target: OracleTarget, **kwargs: Any) -> Resolution:
            kwargs["find_links"] = [on_loopback(u) for u in kwargs["find_links"]]
            return resolve_closure(pins, target, **kwargs)

        location = IndexLocation(url=index.simple, label="loopback", origin="--index-url")
        asked_packages = ["torch-scatter", "torch-sparse", "mmcv", "dgl", "pyg-lib"]
        checked = run_stack_oracle(DATA_DIR, location, packages=asked_packages, config=config, write=False,
                                   concurrency=2, cache_dir=tmp_path / "uv-cache", resolver=resolver)
        asked = set(index.requests)
    assert {o.package for o in checked.outcomes} == {"torch-scatter", "torch-sparse", "mmcv", "dgl", "pyg-lib"}, (
        checked.refused)
    assert {o.platform for o in checked.outcomes} == {"linux-x86_64", "linux-aarch64", "windows-x86_64"}
    assert {o.package for o in checked.outcomes if o.platform == "linux-aarch64"} == {"pyg-lib"}  # 0.8.0's arm64
    for outcome in checked.outcomes:
        assert outcome.resolvable and not outcome.changed, outcome
        assert len(outcome.find_links) == 1 and outcome.find_links[0].startswith(tuple(PAGE_HOSTS)), outcome
        assert on_loopback(outcome.find_links[0]).removeprefix(index.base) in asked
        assert f"{outcome.package}=={outcome.version}" in outcome.requested
    (tmp_path / "index").mkdir()
    written = write_oracle(tmp_path, StackOracleFile.model_validate({
        "schema": "stack_oracle/v1", "index": "loopback", "retrieved": "2026-12-06", "resolver": "uv",
        "outcomes": checked.outcomes}))
    again = StackOracleFile.model_validate(yaml.safe_load(written.read_text()))
    assert [o.find_links for o in again.outcomes] == [o.find_links for o in sorted(
        checked.outcomes, key=lambda o: (o.package, o.version, o.platform, o.python))]
