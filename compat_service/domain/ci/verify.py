"""`accelenv verify-env`'s comparison: does the job's environment hold what its CI cell says?

`expectations(...)` reads what is expected — ``--expect torch==2.3.1+cu121`` (any distribution; a local tag on
torch names the build label), ``--python 3.11``, or a cell of ``GET /v1/ci-matrix`` — and `compare(expected,
facts)` lists every difference against the facts ``probes/host/installed.py`` gathers in the job's
interpreter: a package missing or at another version (the torch a later install replaced), a torch of
another build (the CPU wheel that slipped into a GPU job: the build is the local tag, else what
``torch.version.cuda`` / ``hip`` / ``xpu`` say), a build whose runtime is not the cell's (cu121 must carry
CUDA 12.1), a CUDA/ROCm runtime library loaded that the build does not use, another Python.

Pure: no I/O here (the CLI runs the script and prints).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from compat_service.domain.backends import is_build_label, label_family
from compat_service.domain.json_types import JsonObject
from compat_service.domain.resolver.request import invalid_request, parse_python

_EXPECT_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s]+)\s*$")


@dataclass(frozen=True)
class Expected:
    """What the cell says the environment holds."""

    #: distribution name -> version as expected (a local tag only where one was given)
    packages: dict[str, str] = field(default_factory=dict)
    #: torch's build label (cu121, rocm6.0, cpu, xpu); None = not checked
    build: str | None = None
    #: "3.11" / "3.13t"; None = not checked
    python: str | None = None
    #: the CUDA/ROCm version the build stands for (12.1), from the cell; None = derived from the label
    runtime: str | None = None


@dataclass(frozen=True)
class Difference:
    what: str
    expected: str
    found: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"what": self.what, "expected": self.expected, "found": self.found, "message": self.message}


def expectations(expect: list[str], python: str | None = None, cell: JsonObject | None = None) -> Expected:
    """The expectations of ``--expect NAME==VERSION`` (repeatable), ``--python`` and a CI-matrix cell."""
    packages: dict[str, str] = {}
    build = runtime = None
    want_python = None
    if cell is not None:
        build, runtime, want_python = _cell_expectations(cell, packages)
    for text in expect:
        name, version, label = _expectation(text)
        if label is not None:
            build = label
        packages[name] = version
    if python is not None:
        want_python = python
    return Expected(
        packages=packages,
        build=build,
        python=parse_python(want_python) if want_python else None,
        runtime=runtime,
    )


def _cell_expectations(cell: JsonObject, packages: dict[str, str]) -> tuple[str | None, str | None, str | None]:
    """A CI-matrix cell's pins (into ``packages``), and its build, runtime and Python."""
    if not isinstance(cell, dict) or "torch" not in cell or "pins" not in cell:
        raise invalid_request(
            "--cell is not a cell of GET /v1/ci-matrix (it needs torch, build, python and pins)",
            "pass one object of the matrix's include list, e.g. --cell '${{ toJSON(matrix) }}'",
            "--cell",
            str(cell)[:60],
        )
    for name, version in dict(cell["pins"]).items():
        packages[_normal(name)] = _public(str(version))
    packages["torch"] = _public(str(cell["torch"]))
    return cell.get("build"), cell.get("runtime"), cell.get("python")


def _expectation(text: str) -> tuple[str, str, str | None]:
    """One ``--expect NAME==VERSION``: the package, its version, and the build label torch's local tag names."""
    match = _EXPECT_RE.match(text)
    if not match:
        raise invalid_request(
            f"--expect {text!r} is not NAME==VERSION",
            "write each expectation as NAME==VERSION, e.g. --expect torch==2.3.1+cu121",
            "--expect",
            text,
        )
    name, version = _normal(match.group(1)), match.group(2)
    try:
        parsed = Version(version)
    except InvalidVersion:
        raise invalid_request(
            f"--expect {text!r}: {version!r} is not a version", "give an exact version such as 2.3.1",
            "--expect", text,
        ) from None
    if name != "torch" or not parsed.local:
        return name, version, None
    if not is_build_label(parsed.local):
        raise invalid_request(
            f"--expect {text!r}: +{parsed.local} is not a build label",
            "use torch==VERSION+LABEL with a label such as cpu, cu121, rocm6.0 or xpu",
            "--expect", text,
        )
    return name, parsed.public, parsed.local


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _public(version: str) -> str:
    return version.split("+", 1)[0]


def installed_build(torch: JsonObject) -> str | None:
    """The build label of the installed torch: its local tag, else what its build constants say."""
    local = str(torch.get("version") or "").partition("+")[2]
    if local and is_build_label(local):
        return local
    if torch.get("cuda"):
        return "cu" + str(torch["cuda"]).replace(".", "")[:3]
    if torch.get("hip"):
        return "rocm" + ".".join(str(torch["hip"]).split(".")[:2])
    if torch.get("xpu"):
        return "xpu"
    return "cpu" if torch.get("version") else None


def _runtime_of(label: str) -> str | None:
    if label.startswith("cu") and label[2:].isdigit():
        digits = label[2:]
        return f"{digits[:-1]}.{digits[-1]}"
    if label.startswith("rocm"):
        return label[4:]
    return None


def compare(expected: Expected, facts: JsonObject) -> list[Difference]:
    """Every way ``facts`` (probes/host/installed.py's object) differs from ``expected``."""
    out = _package_differences(expected, facts)
    torch = facts.get("torch")
    if expected.build is not None:
        if not torch or torch.get("error"):
            why = (torch or {}).get("error") or "torch was not examined"
            out.append(Difference("torch build", expected.build, "no torch", f"torch does not import: {why}"))
        else:
            out.extend(_build_differences(expected, torch, facts.get("loaded")))
    if expected.python is not None and facts.get("python") != expected.python:
        out.append(Difference(
            "python", expected.python, str(facts.get("python")),
            f"the job runs Python {facts.get('python')}, the cell is for Python {expected.python}",
        ))
    return out


def _package_differences(expected: Expected, facts: JsonObject) -> list[Difference]:
    out: list[Difference] = []
    installed = {_normal(k): v for k, v in (facts.get("packages") or {}).items()}
    for name, want in expected.packages.items():
        have = installed.get(name)
        if have is None:
            out.append(Difference(name, want, "not installed", f"{name} {want} is expected but not installed"))
            continue
        if _matches(want, have):
            continue
        out.append(Difference(
            name, want, have,
            f"{name} {have} is installed, the cell expects {want}"
            + (" (a later install replaced it?)" if name == "torch" else ""),
        ))
    return out


def _matches(want: str, have: str) -> bool:
    try:
        w, h = Version(want), Version(have)
    except InvalidVersion:
        return want == have
    return w == h if w.local else w.public == h.public and w.release == h.release


def _build_differences(expected: Expected, torch: JsonObject, loaded: list[str] | None) -> list[Difference]:
    out: list[Difference] = []
    want = str(expected.build)
    have = installed_build(torch) or "unknown"
    version = torch.get("version")
    if have != want:
        kind = "a CPU build" if have == "cpu" else f"the {have} build"
        out.append(Difference(
            "torch build", want, have,
            f"torch {version} is {kind}; the cell expects {want}"
            + (" (the CPU wheel slipped in: install from the cell's index)" if have == "cpu" else ""),
        ))
        return out
    family = label_family(want)
    out.extend(_runtime_difference(expected.runtime or _runtime_of(want), family, want, torch))
    for lib in _foreign_libraries(loaded or [], family):
        out.append(Difference(
            "loaded runtime", f"none for {want}", lib,
            f"{lib} is loaded into the job's Python, which a {want} torch does not use",
        ))
    return out


def _runtime_difference(runtime: str | None, family: str | None, want: str, torch: JsonObject) -> list[Difference]:
    """The CUDA or ROCm release torch carries, when it is not the build's."""
    if not runtime or family not in ("cuda", "rocm"):
        return []
    carried = torch.get("cuda") if family == "cuda" else torch.get("hip")
    if carried and str(carried).startswith(runtime):
        return []
    return [Difference(
        f"{family} runtime", runtime, str(carried),
        f"torch {torch.get('version')} carries {family.upper()} {carried}, the cell's {want} build is {runtime}",
    )]


def _foreign_libraries(loaded: list[str], family: str | None) -> list[str]:
    """The loaded runtime libraries another family's torch uses."""
    return [lib for lib in loaded if (lib.startswith("libcudart") and family != "cuda")
            or (lib.startswith("libamdhip64") and family != "rocm")]
