"""`accelenv matrix refresh`: read the index, derive the facts, diff them with the generated layer, write.

Nothing is written until every page and metadata file has been read: a refresh that fails midway leaves
``matrix_data/index/`` as it was. A variant index that cannot be reached keeps its previous facts (unknown
is not "absent") and is reported as a notice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from pypi_simple import DistributionPackage, ProjectPage

from compat_service.domain.errors import Cause
from compat_service.domain.matrix.index.index_facts import (
    PackageConfig,
    PackageFacts,
    RefreshConfig,
    VariantIndexFacts,
    VariantsJsonFact,
)
from compat_service.index.client import IndexClient, RetryPolicy
from compat_service.index.errors import IndexUnreachableError, RefreshRemovesFactsError
from compat_service.index.facts import (
    BuildLabel,
    IndexFile,
    derive_package,
    metadata_wanted,
    parse_file,
    since_filter,
    variant_wheels,
)
from compat_service.index.generated import FactsDiff, diff_facts, fact_atoms, load_config, load_facts, write_facts
from compat_service.index.location import IndexLocation
from compat_service.index.wheel_metadata import WheelRef, metadata_notices, read_metadata

#: a refresh that would remove more than this share of a project's facts stops (``allow_removals`` lets it)
REMOVAL_SHARE = 0.10


def removal_guard(diffs: dict[str, FactsDiff], previous: dict[str, int]) -> None:
    """Refuse when any project would lose more than ``REMOVAL_SHARE`` of its ``previous`` facts: an index
    answering something else than its pages (a sign-in page, a truncated mirror) must not delete data."""
    causes = [
        Cause(
            constraint=f"at most {REMOVAL_SHARE:.0%} of a project's facts removed by one refresh",
            origin=f"{name}: {len(diff.removed)} of {previous[name]} facts would be removed",
        )
        for name, diff in diffs.items()
        if previous.get(name) and len(diff.removed) > REMOVAL_SHARE * previous[name]
    ]
    if causes:
        raise RefreshRemovesFactsError(
            "the index's answer would remove a large share of the generated facts; nothing was written",
            hint="check that --index-url serves the real index (no sign-in page, no partial mirror); if the "
            "removals are real (releases deleted from the index), run again with --allow-removals",
            causes=causes,
        )


class Progress(Protocol):
    def stage(self, description: str, total: int) -> None: ...

    def advance(self) -> None: ...


class _NoProgress:
    def stage(self, description: str, total: int) -> None:
        pass

    def advance(self) -> None:
        pass


@dataclass
class RefreshResult:
    facts: dict[str, PackageFacts] = field(default_factory=dict)
    diffs: dict[str, FactsDiff] = field(default_factory=dict)
    notices: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    stats: dict[str, int] = field(default_factory=dict)
    metadata_reads: dict[str, int] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return any(not d.empty for d in self.diffs.values())

    def counts(self) -> dict[str, int]:
        total = {"added": 0, "changed": 0, "removed": 0}
        for diff in self.diffs.values():
            for key, value in diff.counts().items():
                total[key] += value
        return total


def index_files(page: ProjectPage) -> list[IndexFile]:
    return [_index_file(p) for p in page.packages]


def _index_file(package: DistributionPackage) -> IndexFile:
    upload = package.upload_time
    if upload is not None and upload.tzinfo is None:
        upload = upload.replace(tzinfo=dt.timezone.utc)
    return IndexFile(
        filename=package.filename,
        url=package.url,
        upload_time=upload.astimezone(dt.timezone.utc).replace(microsecond=0) if upload else None,
        yanked=package.is_yanked,
        yanked_reason=package.yanked_reason or None,
        requires_python=package.requires_python or None,
        sha256=(package.digests or {}).get("sha256"),
        has_metadata=package.has_metadata,
        size=package.size,
    )


def build_labels(matrix_path: Path) -> tuple[list[BuildLabel], dict[str, str]]:
    """The build variants (label, family, runtime) and each label's index URL, from build_variants.yaml."""
    from compat_service.domain.matrix.loading.loader import load_matrix_data

    variants = load_matrix_data(matrix_path, index_layer=False).build_variants.variants
    labels = [BuildLabel(v.label, v.family, v.runtime) for v in variants]
    return labels, {v.label: v.index_url for v in variants if v.index_url}


def _map(pool: ThreadPoolExecutor, fn: Callable, items: Iterable, progress: Progress) -> list:
    def run(item):
        try:
            return fn(item)
        finally:
            progress.advance()

    return list(pool.map(run, items))


def run_refresh(
    client: IndexClient,
    index: IndexLocation,
    matrix_path: Path,
    *,
    packages: list[str] | None = None,
    write: bool = True,
    variants: bool = True,
    variant_urls: dict[str, str] | None = None,
    concurrency: int = 8,
    progress: Progress | None = None,
    today: dt.date | None = None,
    allow_removals: bool = False,
) -> RefreshResult:
    progress = progress or _NoProgress()
    config: RefreshConfig = load_config(matrix_path)
    selected = [p for p in config.packages if packages is None or p.name in packages]
    labels, label_urls = build_labels(matrix_path)
    if variant_urls is not None:
        label_urls = dict(variant_urls)  # given: read only these labels, there
    retrieved = today or dt.datetime.now(dt.timezone.utc).date()
    result = RefreshResult()
    previous = _PreviousFacts(matrix_path)

    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        read = _Reads(client, pool, progress, result)
        found = read.project_pages(index, selected)
        metadata = read.wheel_metadata(found, config)
        variants_json = read.variants_json(index, found)
        variant_facts: dict[str, list[VariantIndexFacts]] = {}
        if variants:
            variant_facts = read.variant_indexes(found, config, label_urls, previous)

    to_write = []
    previous_counts: dict[str, int] = {}
    for package, files in found:
        facts = derive_package(
            package, config, files, metadata, labels,
            index=index.label, retrieved=retrieved, variant_indexes=variant_facts.get(package.name),
        )
        old = previous.get(package.name)
        previous_counts[package.name] = len(fact_atoms(old))
        facts = _compared(result, package.name, old, _with_variants_json(facts, variants_json.get(package.name)))
        if write and (old is None or facts is not old):
            to_write.append(facts)
    if write and not allow_removals:
        removal_guard(result.diffs, previous_counts)
    for facts in to_write:
        result.written.append(write_facts(matrix_path, facts))
    result.stats = client.stats.as_dict()
    return result


def _with_variants_json(facts: PackageFacts, found: list[VariantsJsonFact] | None) -> PackageFacts:
    return facts.model_copy(update={"variants_json": found}) if found else facts


def _compared(result: RefreshResult, name: str, old: PackageFacts | None, facts: PackageFacts) -> PackageFacts:
    """Record the difference from the previous facts; the previous ones when nothing is new (the earlier
    retrieval date kept, the file untouched)."""
    diff = diff_facts(name, old, facts)
    result.diffs[name] = diff
    if old is not None and diff.empty:
        facts = old
    result.facts[name] = facts
    return facts


class _PreviousFacts:
    """The facts files as they were before this run, each read once."""

    def __init__(self, matrix_path: Path) -> None:
        self.matrix_path = matrix_path
        self.loaded: dict[str, PackageFacts | None] = {}

    def get(self, name: str) -> PackageFacts | None:
        if name not in self.loaded:
            self.loaded[name] = load_facts(self.matrix_path, name)
        return self.loaded[name]


class _Reads:
    """The run's reads from the index, each stage fanned out over the pool, its notices kept in the result."""

    def __init__(
        self, client: IndexClient, pool: ThreadPoolExecutor, progress: Progress, result: RefreshResult
    ) -> None:
        self.client = client
        self.pool = pool
        self.progress = progress
        self.result = result

    def project_pages(
        self, index: IndexLocation, selected: list[PackageConfig]
    ) -> list[tuple[PackageConfig, list[IndexFile]]]:
        """Each selected project's files (a project the index does not have keeps its facts)."""
        self.progress.stage("project pages", len(selected))
        pages = _map(self.pool, lambda p: self.client.project_page(index.url, p.name), selected, self.progress)
        found: list[tuple[PackageConfig, list[IndexFile]]] = []
        for package, page in zip(selected, pages, strict=True):
            if page is None:
                self.result.notices.append(f"{package.name}: the index has no such project (404); its facts are kept")
                continue
            found.append((package, index_files(page)))
        return found

    def wheel_metadata(
        self, found: list[tuple[PackageConfig, list[IndexFile]]], config: RefreshConfig
    ) -> dict[str, bytes]:
        """filename -> the metadata of each wheel whose requirements the facts record."""
        wanted: list[WheelRef] = []
        for package, files in found:
            parsed = since_filter([p for p in (parse_file(f, package.name) for f in files) if p], package)
            if package.requirements:
                for item in metadata_wanted(parsed, config).values():
                    f = item.file
                    wanted.append(WheelRef(f.filename, f.url, f.sha256, f.has_metadata, f.size))
        unique = list({ref.filename: ref for ref in wanted}.values())
        self.progress.stage("wheel metadata", len(unique))
        raws = _map(self.pool, lambda ref: read_metadata(self.client, ref), unique, self.progress)
        metadata = {ref.filename: raw for ref, (raw, _how) in zip(unique, raws, strict=True)}
        for ref, (raw, how) in zip(unique, raws, strict=True):
            self.result.metadata_reads[how] = self.result.metadata_reads.get(how, 0) + 1
            self.result.notices.extend(metadata_notices(raw, ref.filename))  # nothing skipped silently
        return metadata

    def variants_json(
        self, index: IndexLocation, found: list[tuple[PackageConfig, list[IndexFile]]]
    ) -> dict[str, list[VariantsJsonFact]]:
        """The PEP 825 variants JSON files the projects publish, per project."""
        variants_json: dict[str, list[VariantsJsonFact]] = {}
        listed = [(package, index.url, f) for package, files in found for f in files
                  if variants_json_version(f.filename, package.name) is not None
                  or variant_wheel(f.filename, package.name) is not None]
        if not listed:
            return variants_json
        self.progress.stage("variants JSON", len(listed))
        read = _map(self.pool, lambda job: _read_variants_json(self.client, *job), listed, self.progress)
        for (package, _url, _file), (fact, notice) in zip(listed, read, strict=True):
            if fact is not None:
                variants_json.setdefault(package.name, []).append(fact)
            if notice:
                self.result.notices.append(notice)
        return variants_json

    def variant_indexes(
        self,
        found: list[tuple[PackageConfig, list[IndexFile]]],
        config: RefreshConfig,
        label_urls: dict[str, str],
        previous: _PreviousFacts,
    ) -> dict[str, list[VariantIndexFacts]]:
        """What each build label's index serves of each project that has variant indexes (an unreachable one
        keeps what it served before: unknown, not absent)."""
        client = self.client
        variant_client = IndexClient(
            cache=client.cache, http=client.http, retry=RetryPolicy(attempts=2, wait_initial=0.1, timeout=30),
            limits=client.limits, run_deadline=client.run_deadline,  # the run's bounds, not fresh ones
        )
        jobs = [(package, label, url) for package, _ in found if package.variant_indexes
                for label, url in sorted(label_urls.items())]
        self.progress.stage("variant indexes", len(jobs))
        answers = _map(self.pool, lambda job: _read_variant(variant_client, config, *job), jobs, self.progress)
        client.stats.add(**variant_client.stats.as_dict())
        variant_facts: dict[str, list[VariantIndexFacts]] = {}
        unreachable: dict[str, list[str]] = {}
        for (package, label, _url), answer in zip(jobs, answers, strict=True):
            old = previous.get(package.name)
            before = next((v for v in (old.variant_indexes if old else []) if v.label == label), None)
            if answer.status == "unreachable":
                unreachable.setdefault(package.name, []).append(label)
                if before is not None:
                    answer = before
            variant_facts.setdefault(package.name, []).append(answer)
        for name, missed in unreachable.items():
            self.result.notices.append(
                f"{name}: {len(missed)} variant index(es) could not be reached ({', '.join(missed)}); what they "
                "serve stays as it was (unknown, not absent)"
            )
        return variant_facts


def _read_variant(client: IndexClient, config: RefreshConfig, package: PackageConfig, label: str,
                  url: str) -> VariantIndexFacts:
    try:
        page = client.project_page(url, package.name)
    except IndexUnreachableError:
        return VariantIndexFacts(label=label, index=url, status="unreachable")
    if page is None:
        return VariantIndexFacts(label=label, index=url, status="absent")
    return VariantIndexFacts(
        label=label, index=url, status="read",
        releases=variant_wheels(index_files(page), package, config, label),
    )


def variants_json_version(filename: str, project: str) -> str | None:
    """The version of a PEP 825 ``{name}-{version}-variants.json`` of ``project``; None for any other file."""
    from packaging.utils import canonicalize_name

    if not filename.endswith("-variants.json"):
        return None
    name, _, version = filename.removesuffix("-variants.json").rpartition("-")
    return version if name and canonicalize_name(name) == canonicalize_name(project) else None


def variant_wheel(filename: str, project: str) -> tuple[str, str] | None:
    """(version, variant label) of a PEP 825 variant wheel of ``project``
    (``{name}-{version}(-{build})?-{python}-{abi}-{platform}-{label}.whl``); None for any other file."""
    from packaging.utils import InvalidWheelFilename, canonicalize_name, parse_wheel_filename

    if not filename.endswith(".whl"):
        return None
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) not in (6, 7) or (len(parts) == 6 and parts[2][:1].isdigit()):
        return None  # a plain wheel (a build tag starts with a digit)
    try:
        name, version, _build, _tags = parse_wheel_filename("-".join(parts[:-1]) + ".whl")
    except InvalidWheelFilename:
        return None
    return (str(version), parts[-1]) if canonicalize_name(name) == canonicalize_name(project) else None


def _read_variants_json(client: IndexClient, package: PackageConfig, index_url: str,
                        file: IndexFile) -> tuple[VariantsJsonFact | None, str | None]:
    """The variant properties a linked variants JSON, or a variant wheel's ``*.dist-info/variant.json`` (read
    with range requests, like METADATA), states (PEP 825), or a notice why none were read."""
    import hashlib
    import json

    wheel = variant_wheel(file.filename, package.name)
    version = wheel[0] if wheel else variants_json_version(file.filename, package.name) or ""
    if wheel is not None:
        from compat_service.index.errors import IndexResponseError
        from compat_service.index.wheel_metadata import RangeFile, dist_info_member

        try:
            body = dist_info_member(RangeFile(client, file.url.split("#", 1)[0]), file.filename,
                                    "variant.json", client.limits.metadata_bytes)
        except IndexResponseError as exc:
            return None, f"{package.name}: {file.filename}: {exc.message}; its variant properties were not read"
    else:
        linked = client.get_optional(file.url)
        if linked is None:
            return None, f"{package.name}: {file.filename} is linked but not served (404)"
        body = linked
        if file.sha256 and hashlib.sha256(body).hexdigest() != file.sha256:
            return None, f"{package.name}: {file.filename} does not match the sha256 its page states; not read"
    try:
        data = json.loads(body)
        variants = {
            str(label): {str(ns): {str(f): [str(v) for v in values] for f, values in features.items()}
                         for ns, features in props.items()}
            for label, props in data["variants"].items()
        }
        namespaces = [str(n) for n in data.get("default-priorities", {}).get("namespace", [])]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return None, f"{package.name}: {file.filename} is not a PEP 825 variants JSON ({exc}); not read"
    return VariantsJsonFact(version=version, index=index_url, file=file.filename, sha256=file.sha256,
                            default_namespaces=namespaces, variants=variants), None
