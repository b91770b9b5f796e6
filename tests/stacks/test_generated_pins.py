"""Over the generated ecosystem data: `resolve --with PKG==X` pins exactly the torch, torchvision and torchaudio
each vLLM and xformers release's metadata requires, on every platform it publishes wheels for.

The expectations are read from the generated files themselves (matrix_data/index/<package>.yaml through the
catalog), never written here; the build asked for is the family of the default-index build the matrix names
for the pinned torch on that platform, or of the build a curated ``torch_index`` row names (the build the
package's binaries go with).
"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from compat_service.domain.errors import AccelenvError, PlatformUnsupportedError
from compat_service.domain.matrix.loading.snapshot import load_matrix_cached
from compat_service.domain.resolver.request import ResolveRequest, TorchSpec
from compat_service.domain.resolver.stages import resolve
from compat_service.domain.stacks.catalog import load_catalog
from compat_service.domain.stacks.resolve import resolve_stack
from compat_service.index.generated import load_facts
from matrix_data import DATA_DIR

MATRIX = load_matrix_cached()
CATALOG = load_catalog()


def _cases() -> list[tuple[str, str, str]]:
    out = []
    for name in ("vllm", "xformers"):
        package = CATALOG.get(name)
        assert package is not None, f"{name} is not in the generated ecosystem data"
        for release in package.releases:
            if release.yanked:
                continue
            for platform, tags in release.wheels.items():
                if tags and release.torch_specifier(platform, None) is not None:
                    out.append((name, release.version, platform))
    return out


CASES = _cases()
TORCH_FACTS = load_facts(DATA_DIR, "torch")


def _torch_publishes(spec: str, platform: str) -> bool:
    """Whether the generated torch facts have a final release admitted by ``spec`` with wheels for ``platform``."""
    assert TORCH_FACTS is not None
    return any(
        SpecifierSet(spec).contains(r.version) and any(w.platform == platform for w in r.wheels)
        for r in TORCH_FACTS.releases if not r.yanked and not r.prerelease
    )


def _default_family(torch_version: str, platform: str) -> str | None:
    for minor in MATRIX.torch_minors():
        if torch_version.startswith(minor.minor + "."):
            label = next((r.label for r in minor.default_index if r.platform == platform), None)
            row = MATRIX.build_variant(label) if label else None
            return row.family if row is not None else None
    return None


def _torch_alone_refused(request: ResolveRequest, torch_pin: str | None) -> str | None:
    """The error code of the torch resolver for the pinned torch alone on the request's target, or None."""
    if not torch_pin:
        return None
    alone = request.changed(stack=(), torch=TorchSpec(torch_pin.split("+")[0], "exact"))
    try:
        resolve(alone, MATRIX)
    except AccelenvError as exc:
        return exc.code if exc.code == "known-bad" else None
    return None


def test_every_vllm_and_xformers_release_is_covered() -> None:
    names = {name for name, _v, _p in CASES}
    assert names == {"vllm", "xformers"} and len(CASES) > 100


@pytest.mark.parametrize(("name", "version", "platform"), CASES, ids=[f"{n}=={v}-{p}" for n, v, p in CASES])
def test_with_exact_release_pins_what_its_metadata_requires(name: str, version: str, platform: str) -> None:
    package = CATALOG.get(name)
    assert package is not None
    release = package.release(version)
    assert release is not None
    stated = release.torch_specifier(platform, None)
    pins = release.pins(platform, None)
    os_name, arch = platform.split("-")
    torch_pin = pins.get("torch")
    family = _default_family(torch_pin, platform) if torch_pin else None
    if release.torch_index:  # the build its documents say its wheels were compiled against (vLLM's CUDA line)
        row = MATRIX.build_variant(release.torch_index["label"])
        family = row.family if row is not None else family
    request = ResolveRequest.from_strings(
        with_=[f"{name}=={version}"], os=os_name, arch=arch, backend=family or ("cuda" if os_name == "linux" else "cpu")
    )
    refused = release.oracle_failure(platform, None)
    if refused is not None:
        # a real resolver found the release's stack uninstallable (index/stack-oracle.yaml): refused, and why
        with pytest.raises(AccelenvError) as caught:
            resolve_stack(request, MATRIX, None, CATALOG)
        assert refused in caught.value.message
        return
    if not _torch_publishes(stated or "", platform):
        # a pure-Python wheel (py3-none-any) where no admitted torch has wheels: refused, naming the platform
        with pytest.raises(PlatformUnsupportedError, match=platform):
            resolve_stack(request, MATRIX, None, CATALOG)
        return
    refusal = _torch_alone_refused(request, torch_pin)
    if refusal is not None:
        # the pinned torch alone is refused on this target (a known-bad combination): so is the stack, alike
        with pytest.raises(AccelenvError) as caught:
            resolve_stack(request, MATRIX, None, CATALOG)
        assert caught.value.code == refusal
        return
    res = resolve_stack(request, MATRIX, None, CATALOG)
    assert [(p.name, p.version) for p in res.stack if p.name == name] == [(name, version)]
    # anything else in the stack is a package the release requires unpinned (vLLM >= 0.25: torchcodec)
    assert {p.name for p in res.stack} - {name} == {c["package"] for c in release.companions}
    public = res.torch_version.split("+")[0]
    assert SpecifierSet(stated or "").contains(public, prereleases=True)
    if torch_pin:
        assert public == torch_pin.split("+")[0]
    got = {p.name: p.version.split("+")[0] for p in res.packages}
    for companion in ("torchvision", "torchaudio"):
        if companion in pins:
            assert got[companion] == pins[companion]
    assert release.fits_python(platform, res.python)
