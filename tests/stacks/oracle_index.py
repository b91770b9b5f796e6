"""A loopback index built from the recorded metadata: the generated facts (matrix_data/index/<package>.yaml) and
tests/data/stack_cases/oracle/extra_projects.yaml, for the resolution oracle to check stack answers against.

Each release's wheels are served with the requirements the refresh recorded for their platform (markers kept)
on the projects served here; requirements on other projects (nvidia-* runtimes, the long tail of vLLM's) are
left out: the check is about the pins between torch, its companions and the ecosystem packages. Yanked releases
are left out (the stack resolver never picks one).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from compat_service.domain.matrix.index.index_facts import PackageFacts, RefreshConfig
from compat_service.domain.matrix.index.index_layer import read_index_file
from tests.index.metadata_index import RecordedWheel

EXTRA = Path(__file__).resolve().parents[1] / "data" / "stack_cases" / "oracle" / "extra_projects.yaml"


def recorded_projects(data_dir: Path) -> dict[str, list[RecordedWheel]]:
    config, problems = read_index_file(data_dir, "refresh.yaml", RefreshConfig)
    assert config is not None and not problems, problems
    extra = yaml.safe_load(EXTRA.read_text())["projects"]
    served = {p.name for p in config.packages} | set(extra)
    projects: dict[str, list[RecordedWheel]] = {}
    for package in config.packages:
        facts, problems = read_index_file(data_dir, f"{package.name}.yaml", PackageFacts)
        assert not problems, problems
        if facts is None:
            continue  # the index has no such project (pyg-lib's wheels are on its own pages)
        wheels = projects.setdefault(package.name, [])
        for release in facts.releases:
            if release.yanked:
                continue
            for wheel in release.wheels:
                requires = tuple(
                    f"{r.name}{r.specifier}" + (f"; {r.marker}" if r.marker else "")
                    for r in release.requirements if r.platform == wheel.platform and r.name in served
                )
                wheels.append(RecordedWheel(wheel.file, requires, release.requires_python))
    for name, row in extra.items():
        projects[name] = [RecordedWheel(row["wheel"].format(version=v)) for v in row["versions"]]
    return projects
