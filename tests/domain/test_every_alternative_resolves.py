"""Every "what would work" is an answer: each alternative of a failing request, applied to that request as its
``request`` says (a value sets the parameter, None drops it) and run as given, resolves (exit 0), and keeps the
backend family the user asked for unless it says it gives it up ("the CPU build"). Issue 29.

Over the golden cases (tests/data/resolver_cases/) and a sweep of failing requests built from the matrix's own
values (torch minors, Pythons, backends, drivers, GPU architectures, vendor runtimes).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.resolve_cmd import main as resolve_main
from compat_service.domain.errors import AccelenvError, UnsatisfiableError
from compat_service.domain.matrix.interface import InMemoryMatrix
from compat_service.domain.matrix.loading.loader import load_matrix_rows
from compat_service.domain.resolver.request import ResolveRequest
from compat_service.domain.resolver.stages import resolve

CASES_DIR = Path(__file__).resolve().parent.parent / "data" / "resolver_cases"


@pytest.fixture(scope="module")
def matrix() -> InMemoryMatrix:
    return InMemoryMatrix(load_matrix_rows())


def _strings(raw: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in raw.items()}


def _golden_failures() -> list[dict[str, str]]:
    out = []
    for path in sorted(CASES_DIR.glob("*.yaml")):
        for case in yaml.safe_load(path.read_text())["cases"]:
            if case.get("error") and case["error"] != "invalid-request":
                out.append(_strings(case["request"]))
    return out


def _sweep() -> list[dict[str, str]]:
    """Requests that mix old and new: old torch on new Pythons, new CUDA labels on old drivers, old GPUs on new
    torch, NPU/ROCm runtimes that do not match, old C libraries and macOS releases."""
    requests: list[dict[str, str]] = []
    for torch, python in itertools.product(["1.13", "2.3", "2.6", "2.10", "2.14"], ["3.8", "3.13", "3.14.1"]):
        requests.append({"torch": torch, "python": python, "backend": "cpu"})
    drivers = ["450.80.02", "525.60.13", "575.57.08"]
    for backend, driver in itertools.product(["cu118", "cu126", "cu130", "cuda"], drivers):
        requests.append({"backend": backend, "driver": driver, "gpu_arch": "sm_80", "python": "3.12"})
    for arch, torch in itertools.product(["sm_37", "sm_50", "sm_61", "sm_120"], ["latest", "2.3", "2.7"]):
        requests.append({"backend": "cuda", "gpu_arch": arch, "torch": torch, "python": "3.11"})
    for runtime in ["7.0.0", "8.0.RC1", "8.5.0"]:
        requests.append({"backend": "npu", "runtime": runtime, "python": "3.11", "torch": "2.1"})
    for runtime in ["5.7", "6.0.2", "6.4.1"]:
        requests.append({"backend": "rocm", "runtime": runtime, "python": "3.12", "torch": "2.3"})
    for glibc, torch in itertools.product(["2.17", "2.12"], ["2.7", "2.14", "latest"]):
        requests.append({"glibc": glibc, "torch": torch, "python": "3.12", "backend": "cuda", "os": "linux"})
    for macos, backend in itertools.product(["12.6", "13.6"], ["mps", "cpu"]):
        requests.append({"os": "macos", "macos": macos, "torch": "2.12", "backend": backend, "python": "3.12"})
    requests.append({"backend": "cpu", "python": "3.12", "musl": "yes"})
    # Jetson targets: NVIDIA's JetPack wheels only (matrix_data/jetson.yaml); each failure's alternatives stay Jetson
    jetson = {"arch": "aarch64", "os": "linux", "backend": "cuda"}
    for gpu_arch, extra in [
        ("sm_87", {"driver": "540.4.0", "torch": "2.13"}),
        ("sm_87", {"driver": "540.4.0", "python": "3.12"}),
        ("sm_87", {"runtime": "6.1", "torch": "2.4"}),
        ("sm_87", {"runtime": "6.0", "python": "3.8"}),
        ("sm_87", {"backend": "cu126", "python": "3.10"}),
        ("sm_62", {"runtime": "6.2"}),
        ("sm_53", {"torch": "2.3"}),
        ("sm_72", {"runtime": "5.1", "python": "3.10"}),
        ("sm_72", {"runtime": "7.0"}),
    ]:
        requests.append({**jetson, "gpu_arch": gpu_arch, **extra})
    return requests


def _failures(matrix: InMemoryMatrix) -> list[tuple[dict[str, str], UnsatisfiableError]]:
    out = []
    for strings in [*_golden_failures(), *_sweep()]:
        try:
            resolve(ResolveRequest.from_strings(**_kw(strings)), matrix)
        except UnsatisfiableError as exc:
            out.append((strings, exc))
        except AccelenvError:
            continue  # an invalid request has no alternatives to run
    return out


def _kw(strings: dict[str, str]) -> dict[str, Any]:
    return {("with_" if k == "with" else k): v for k, v in strings.items()}


def _applied(strings: dict[str, str], changes: dict[str, Any]) -> dict[str, str]:
    """The request with an alternative's changes, in the query-string form the CLI and API read."""
    base = ResolveRequest.from_strings(**_kw(strings)).to_strings()
    for name, value in changes.items():
        if value is None:
            base.pop(name, None)
        else:
            base[name] = str(value)
    if strings.get("gpu") is None:
        base.pop("gpu", None)
    return base


def test_every_alternative_of_every_failure_resolves_as_given(matrix: InMemoryMatrix) -> None:
    failures = _failures(matrix)
    with_alternatives = [(s, e) for s, e in failures if e.alternatives]
    assert len(failures) >= 50, len(failures)
    assert len(with_alternatives) >= 40, len(with_alternatives)
    broken = []
    for strings, err in failures:
        asked = ResolveRequest.from_strings(**_kw(strings)).backend.family
        for alt in err.alternatives:
            applied = _applied(strings, alt.request)
            try:
                res = resolve(ResolveRequest.from_query(applied), matrix)
            except AccelenvError as exc:
                broken.append((strings, alt.description, alt.request, exc.code, exc.message))
                continue
            if asked not in (None, "cpu") and not alt.description.startswith("the CPU build"):
                if res.family != asked:
                    broken.append((strings, alt.description, alt.request, "family", res.family))
    assert not broken, broken[:5]


def test_an_alternative_runs_through_the_cli_with_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    target = ["--os", "linux", "--arch", "x86_64", "--python", "3.12", "--glibc", "2.36"]
    code = resolve_main([*target, "--backend", "cu130", "--gpu", "A100", "--driver", "575.57.08", "--format", "json"])
    assert code == 5
    import json

    alternatives = json.loads(capsys.readouterr().out)["alternatives"]
    first = alternatives[0]
    assert first["request"]["backend"].startswith("cu12"), first  # the cu12x build the 575 driver runs
    argv = ["--gpu", "A100", "--driver", "575.57.08", *target]
    for name, value in first["request"].items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert resolve_main([*argv, "--format", "json"]) == 0
