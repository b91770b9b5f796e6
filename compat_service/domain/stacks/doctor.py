"""`accelenv doctor`'s stack check: an installed ecosystem package whose torch requirement (or companion pin)
the installed torch breaks. Pure: the caller passes the installed versions and turns each `StackIssue` into a
finding with the command that repairs it."""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from compat_service.domain.stacks.catalog import Catalog

COMPANIONS = ("torchvision", "torchaudio", "torch-npu")


@dataclass(frozen=True)
class StackIssue:
    package: str
    version: str
    #: "error": the installed torch (or a companion) breaks the package's requirement; "warning": not checkable
    severity: str
    message: str


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def stack_issues(installed: dict[str, str | None], catalog: Catalog, platform: str, python: str) -> list[StackIssue]:
    """One issue per installed ecosystem package the installed torch stack does not satisfy."""
    torch = installed.get("torch")
    issues: list[StackIssue] = []
    for name in catalog.names():
        version = installed.get(name)
        if version is None or torch is None:
            continue
        package = catalog.get(name)
        # a wheel from a project's own page carries a local tag (torch-scatter 2.1.2+pt25cu124): the release is 2.1.2
        release = package.release(_public(version)) if package is not None else None
        if release is None:
            issues.append(StackIssue(name, version, "warning",
                                     f"{name} {version} is not in the generated index facts: its torch "
                                     "requirement cannot be checked (run `accelenv matrix refresh`)"))
            continue
        stated = release.torch_specifier(platform, python)
        if stated:
            try:
                ok = SpecifierSet(stated).contains(_public(torch), prereleases=True)
            except (InvalidSpecifier, InvalidVersion):
                ok = True
            if not ok:
                issues.append(StackIssue(name, version, "error",
                                         f"{name} {version} requires torch{stated}; the installed torch {torch} "
                                         "breaks it (its compiled parts fail to load or misbehave)"))
                continue
        for companion, pinned in release.pins(platform, python).items():
            have = installed.get(companion)
            if companion in COMPANIONS and have is not None:
                try:
                    same = Version(_public(have)) == Version(_public(pinned))
                except InvalidVersion:
                    same = True
                if not same:
                    issues.append(StackIssue(name, version, "error",
                                             f"{name} {version} pins {companion}=={pinned}; {companion} {have} "
                                             "is installed"))
        if package is not None and package.torch_build == "wheel-pages":
            minor = ".".join(_public(torch).split(".")[:2])
            build = torch.split("+", 1)[1] if "+" in torch else None
            pages = [row for row in package.pages(release.version, platform) if minor in row["torch"]]
            if not pages or (build is not None and not any(build in row["builds"] for row in pages)):
                issues.append(StackIssue(name, version, "warning",
                                         f"{name} {version} has no wheel page for the installed torch {torch} (its "
                                         "project's pages, curated): unless it was built from source here, its "
                                         "binaries were built for another torch"))
        if stated is None and release.curated_torch and release.curated_torch.get("binaries"):
            specs = release.curated_torch["binaries"]
            if not any(SpecifierSet(s).contains(_public(torch), prereleases=True) for s in specs):
                issues.append(StackIssue(name, version, "error",
                                         f"{name} {version}'s binaries were built for torch {' or '.join(specs)} "
                                         f"(its compatibility table); the installed torch {torch} does not match"))
    return issues
