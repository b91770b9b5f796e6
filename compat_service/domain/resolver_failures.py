"""Explain why nothing fits: the `Conflict` for the furthest stage any candidate patch reached.

Each message names the constraints that clashed and where they came from ("torch 2.3 supports Python
3.8–3.12; you asked for 3.13"); resolver_errors.py turns it into the public error.
"""

from __future__ import annotations

from packaging.version import Version

from compat_service.domain.hardware_rules import newest_cuda_for_driver
from compat_service.domain.resolver_conflict import Conflict
from compat_service.domain.resolver_steps import CPU_WHEEL_FAMILIES, Dropout, ResolverState


class FailureExplainer(ResolverState):
    def torch_not_found(self) -> Conflict:
        versions = [p.version for m in self.m.torch_minors() for p in self.m.torch_patches(m)]
        known = (
            f"the matrix knows torch {versions[-1]} to {versions[0]}" if versions else "the matrix is empty"
        )
        return Conflict(
            "torch-not-found",
            f"no torch release in the matrix matches --torch {self.r.torch.text}",
            hint="ask for a version the matrix lists (`accelenv matrix show`), or 'latest'",
            causes=[(f"torch {self.r.torch.text}", "request: --torch", known)],
        )

    def conflict(self, stage: str, deaths: list[Dropout]) -> Conflict:
        r = self.r
        asked = f"torch {r.torch.text}"
        torch_cause = (asked, "request: --torch", f"matches {_span(deaths)}")
        by_minor: dict[str, Dropout] = {}
        for d in deaths:
            by_minor.setdefault(d.minor.minor, d)
        if stage == "platform":
            causes = [torch_cause] + [
                (
                    f"torch {m} wheels",
                    f"matrix: torch_releases {m}",
                    f"published for {', '.join(d.info['platforms'])}",
                )
                for m, d in by_minor.items()
            ]
            causes.append((f"platform {r.platform}", "request: --os/--arch", None))
            unknown = self._unsourced(by_minor)
            causes += unknown
            if unknown and len(unknown) == len(by_minor):
                return Conflict(
                    "platform-unsupported",
                    f"the matrix does not know whether {asked} publishes wheels for {r.platform}: "
                    "no source lists its builds there",
                    hint="run `accelenv matrix refresh` to read the package index, or pick a release the matrix "
                    "knows for this platform",
                    causes=causes,
                )
            return Conflict(
                "platform-unsupported",
                f"{asked} publishes no wheels for {r.platform}",
                hint="pick another torch version or platform",
                causes=causes,
            )
        if stage == "python":
            parts = [
                f"torch {m} supports Python {_py_range(d.info['pythons'])} on {r.platform}"
                for m, d in by_minor.items()
            ]
            message = "; ".join(parts) + f"; you asked for {r.python}"
            causes = [
                (f"python in {_py_range(d.info['pythons'])}", f"matrix: torch_releases {m} python", None)
                for m, d in by_minor.items()
            ]
            causes.append((f"python == {r.python}", "request: --python", None))
            return Conflict(
                "python-unsupported",
                message,
                hint="use a Python the release supports, or a release that supports your Python",
                causes=causes,
                facts={"python": r.python},
            )
        if stage == "backend":
            return self._backend_conflict(asked, by_minor, torch_cause)
        if stage == "plugin":
            name = "torch-npu" if self.family == "npu" else "torch_mlu"
            rows = self.m.ascend_npu() if self.family == "npu" else self.m.cambricon_mlu()
            torches = sorted({row.torch for row in rows}, key=Version, reverse=True)
            causes = [
                torch_cause,
                (
                    f"{name} for torch {_span(deaths)} and Python {r.python or 'any'}",
                    "request: --backend " + r.backend.text,
                    f"vendor_backends lists {name} for torch {', '.join(torches[:8]) or 'nothing'}",
                ),
            ]
            return Conflict(
                "variant-not-published",
                f"{name} is not published for {asked} (Python {r.python or 'any'})",
                hint=f"choose a torch version {name} supports",
                causes=causes,
            )
        if stage == "gpu_arch":
            causes = [torch_cause, (f"gpu arch {r.gpu_arch}", "request: --gpu-arch", None)]
            for m, d in list(by_minor.items())[:2]:
                for label, verdict in d.info["verdicts"]:
                    causes.append(
                        (
                            f"{label} of torch {d.patch.version} ships {verdict.shipped}",
                            f"matrix: gpu_archs ({', '.join(verdict.row.source)})",
                            None,
                        )
                    )
            return Conflict(
                "gpu-arch-unsupported",
                f"no {self.family} build of {asked} for {r.platform} runs on {r.gpu_arch}",
                hint="pick a torch release whose builds still (or already) ship this architecture",
                causes=causes,
                facts={"gpu_arch": r.gpu_arch},
            )
        if stage == "driver":
            floors = [(label, f) for d in deaths for label, f in d.info["floors"]]
            needed = min((f.version for _, f in floors if f.version), key=Version)
            runs = newest_cuda_for_driver(self.m, r.driver or "0", r.os)
            lowest_cuda = min(
                (f.toolkit.version for _, f in floors if f.toolkit is not None), key=Version, default="?"
            )
            runs_text = (
                f"runs CUDA <= {runs}" if runs else "is older than every CUDA toolkit the matrix lists"
            )
            message = f"driver {r.driver} {runs_text}; every {asked} CUDA build for {r.platform} needs >= {lowest_cuda}"
            causes = [torch_cause, (f"driver {r.driver}", "request: --driver", runs_text)]
            for label, f in dict(floors).items():
                causes.append(
                    (
                        f"{label} needs driver >= {f.version}",
                        f"matrix: cuda {f.toolkit.version if f.toolkit else ''} ({', '.join(f.toolkit.source) if f.toolkit else 'unknown'})",
                        None,
                    )
                )
            mvc = self.m.minor_version_compat(int(Version(lowest_cuda).major)) if lowest_cuda != "?" else None
            hint = f"install NVIDIA driver >= {needed}, or use the CPU build"
            if (
                mvc is not None
                and mvc.min_driver_linux
                and Version(r.driver or "0")
                >= Version(mvc.min_driver_linux if r.os != "windows" else (mvc.min_driver_windows or "9999"))
            ):
                hint += (
                    f". NVIDIA's minor-version compatibility would run CUDA {mvc.cuda_major}.x on this driver for "
                    "some programs, but not PTX JIT, which PyTorch uses; accelenv requires the toolkit's own floor"
                )
            return Conflict(
                "driver-too-old", message, hint=hint, causes=causes, facts={"driver_needed": needed}
            )
        missing = sorted({n for d in deaths for n in d.info["missing"]})
        causes = [torch_cause] + [
            (
                f"{n} for torch {d.patch.version}",
                f"matrix: torch_releases {d.patch.version}",
                "unknown (null)",
            )
            for d in deaths[:4]
            for n in d.info["missing"]
        ]
        return Conflict(
            "companion-unknown",
            f"the matrix has no {' or '.join(missing)} version for {asked}",
            hint="drop the companion with --with, or pick another torch version",
            causes=causes,
            facts={"missing": missing},
        )

    def _unsourced(self, by_minor: dict[str, Dropout]) -> list[tuple[str, str, str | None]]:
        """Minors whose builds for this platform no source lists: 'not published' is unknown there."""
        return [
            (
                f"torch {m} builds for {self.r.platform}",
                f"matrix: torch_releases {m} platforms_unsourced",
                "no source lists them: unknown, not established as unpublished",
            )
            for m, d in by_minor.items()
            if self.r.platform in (getattr(d.minor, "platforms_unsourced", None) or [])
        ]

    def _backend_conflict(
        self, asked: str, by_minor: dict[str, Dropout], torch_cause: tuple[str, str, str | None]
    ) -> Conflict:
        r = self.r
        wanted = r.backend.text
        if self.family == "mps" and r.os != "macos":
            return Conflict(
                "backend-unavailable",
                f"MPS exists only on macOS; the target is {r.platform}",
                hint="use --os macos --arch arm64, or another backend",
                causes=[
                    (f"backend {wanted}", "request: --backend", None),
                    (f"platform {r.platform}", "request: --os/--arch", None),
                ],
            )
        anywhere = any(
            r.platform in v.platforms and self._family_matches(v.label)
            for m in self.m.torch_minors()
            for v in m.variants
        )
        causes = [torch_cause, (f"backend {wanted}", "request: --backend", None)]
        for m, d in list(by_minor.items())[:3]:
            causes.append(
                (
                    f"torch {m} on {r.platform} publishes {', '.join(d.info['labels'])}",
                    f"matrix: torch_releases {m} variants",
                    None,
                )
            )
        unknown = self._unsourced(by_minor)
        causes += unknown
        if unknown and len(unknown) == len(by_minor):
            return Conflict(
                "variant-not-published",
                f"the matrix does not know whether {asked} publishes a {wanted} build for {r.platform}: no source "
                f"lists its /whl/<label> builds there (known: {', '.join(sorted({l for d in by_minor.values() for l in d.info['labels']}))})",
                hint="run `accelenv matrix refresh` where PyTorch's variant indexes can be reached, or pick a "
                "release whose builds the matrix lists",
                causes=causes,
            )
        if not anywhere:
            return Conflict(
                "backend-unavailable",
                f"no torch release in the matrix publishes a {wanted} build for {r.platform}",
                hint="use another backend (cpu always exists) or another platform",
                causes=causes,
            )
        return Conflict(
            "variant-not-published",
            f"{asked} publishes no {wanted} build for {r.platform}",
            hint="pick a build label that release publishes, or a torch release that has it",
            causes=causes,
        )

    def _family_matches(self, label: str) -> bool:
        if self.r.backend.kind == "label":
            return label == self.r.backend.label
        build = self.m.build_variant(label)
        return build is not None and build.family == (
            "cpu" if self.family in CPU_WHEEL_FAMILIES else self.family
        )


def _py_range(pythons: list[str]) -> str:
    gil = [p for p in pythons if not p.endswith("t")]
    if not gil:
        return ", ".join(pythons) or "no Python"
    text = gil[0] if len(gil) == 1 else f"{gil[0]}–{gil[-1]}"
    threaded = [p for p in pythons if p.endswith("t")]
    return text + (f" (+{', '.join(threaded)})" if threaded else "")


def _span(deaths: list[Dropout]) -> str:
    versions = [d.patch.version for d in deaths]
    if not versions:
        return "nothing"
    return versions[0] if len(versions) == 1 else f"{versions[-1]}–{versions[0]}"
