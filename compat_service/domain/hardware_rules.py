"""How a build meets the hardware: GPU architecture coverage and the NVIDIA driver floor.

The numbers come from the matrix (gpu_archs.yaml, cuda.yaml, rocm.yaml); these functions only say how
to compare them.

GPU architecture rule: ``probes.host.arch_compat`` (cubin and PTX compatibility, gfx targets exact), the one
copy, which the probe applies to torch's compiled arch list on the target host; here it is applied to the
matrix's arch lists. probes is stdlib-only and imports nothing from accelenv, so the domain can share it
and it cannot share the domain's.

Driver rule (NVIDIA's CUDA compatibility guide, two floors, both from cuda.yaml):

| the GPU runs the build through            | the driver needs                                  | rule                 |
| ----------------------------------------- | ------------------------------------------------- | -------------------- |
| SASS (a cubin of its major, minor <= own) | its CUDA major's floor (the toolkit's, if lower)  | minor-version-compat |
| only the PTX (GPU newer than every cubin) | the toolkit's own floor (the driver JITs the PTX) | toolkit-floor        |
| unknown (no --gpu-arch, or no arch list)  | the major's floor; the answer says for which GPUs | minor-version-compat |
| CUDA 10.x (no minor-version compat)       | the toolkit's own floor                           | toolkit-floor        |

The toolkit's own floor is that of ``runtime_full`` when known, else the highest floor of that major.minor's
updates. The major's floor applies on every OS: CUDA 13.x needs an R580+ driver on Windows too, where
NVIDIA prints no per-toolkit Windows floor. Minor-version compatibility does not cover PTX JIT for a GPU
newer than the build's SASS, nor kernels that torch.compile's Triton builds with a ptxas newer than the
driver ("device kernel image is invalid"): the answer says so (``MVC_LIMITS``).

What a toolkit can compile (cuda.yaml ``toolkit_archs``): a GPU outside a build's toolkit range has no
SASS in it, known even when the build's own list is not; a list is only unknown within that range.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from packaging.version import InvalidVersion, Version

from compat_service.domain.matrix.memo import MatrixMemo
from compat_service.domain.record import Record
from compat_service.domain.versions import cached_version
from probes.host.arch_compat import cubin_runs_on, ptx_runs_on

if TYPE_CHECKING:
    from compat_service.domain.matrix.interface import Matrix
    from compat_service.domain.matrix.model.rows import ArchList, CudaToolkit, GpuName, MinorVersionCompat, Row

Coverage = Literal["kernels", "ptx", "no", "unknown"]
#: what a verdict rests on: the build's own arch list, its toolkit's compile range, ROCm's gfx list
Basis = Literal["list", "toolkit", "rocm", "none"]


class ArchVerdict(Record):
    __slots__ = ("coverage", "row", "shipped", "basis")
    coverage: Coverage
    #: the matrix row behind the verdict (an ArchList, a ToolkitArchRange or a RocmRelease), None = unknown
    row: Row | None
    #: what the build ships, for messages ("sm_50 … sm_90 + PTX sm_90")
    shipped: str | None
    basis: Basis

    def __init__(
        self, coverage: Coverage, row: Row | None = None, shipped: str | None = None, basis: Basis = "list"
    ) -> None:
        self.coverage = coverage
        self.row = row
        self.shipped = shipped
        self.basis = basis


def describe_archs(archs: list[str], ptx: str | None) -> str:
    text = ", ".join(archs)
    return f"{text} + PTX {ptx}" if ptx else text


def arch_coverage(
    matrix: Matrix, torch_version: str, label: str, runtime: str | None, platform: str, gpu_arch: str
) -> ArchVerdict:
    row = matrix.arch_list(torch_version, label, platform)
    if row is not None:
        return _list_verdict(row, gpu_arch)
    verdict = None
    if gpu_arch.startswith("gfx") and runtime is not None:
        verdict = _rocm_verdict(matrix, runtime, gpu_arch)
    if gpu_arch.startswith("sm_") and runtime is not None:
        verdict = _toolkit_verdict(matrix, runtime, gpu_arch)
    return verdict or ArchVerdict("unknown", basis="none")


def _list_verdict(row: ArchList, gpu_arch: str) -> ArchVerdict:
    """What the build's own arch list says: a cubin that runs on the GPU, else PTX it can JIT, else no."""
    shipped = describe_archs(list(row.archs), row.ptx)
    if any(cubin_runs_on(a, gpu_arch) for a in row.archs):
        return ArchVerdict("kernels", row, shipped)
    if row.ptx and ptx_runs_on(row.ptx, gpu_arch):
        return ArchVerdict("ptx", row, shipped)
    return ArchVerdict("no", row, shipped)


def _rocm_verdict(matrix: Matrix, runtime: str, gpu_arch: str) -> ArchVerdict | None:
    """What the ROCm release's gfx list says; None when the matrix has no list for it."""
    release = matrix.rocm_release(runtime)
    if release is None or release.gfx_targets is None:
        return None
    shipped = ", ".join(release.gfx_targets)
    return ArchVerdict("kernels" if gpu_arch in release.gfx_targets else "no", release, shipped, basis="rocm")


def _toolkit_verdict(matrix: Matrix, runtime: str, gpu_arch: str) -> ArchVerdict | None:
    """A "no" when the GPU is outside what the CUDA toolkit compiles SASS for; None otherwise."""
    span = matrix.toolkit_arch_range(runtime)
    if span is None or arch_in_range(gpu_arch, span.min_arch, span.max_arch):
        return None
    shipped = f"CUDA {runtime} compiles SASS for {span.min_arch} … {span.max_arch} only"
    return ArchVerdict("no", span, shipped, basis="toolkit")


def arch_number(arch: str) -> int:
    """'sm_86' -> 86, 'sm_120' -> 120, 'sm_90a' -> 90."""
    return int("".join(ch for ch in arch[3:] if ch.isdigit()) or 0)


def arch_in_range(gpu_arch: str, low: str, high: str) -> bool:
    """Can a toolkit whose nvcc targets ``low`` … ``high`` build SASS that runs on ``gpu_arch``? A GPU above
    the range could run the newest cubin only if it shares its major (sm_89 runs sm_86 cubins)."""
    number = arch_number(gpu_arch)
    if number < arch_number(low):
        return False
    return number <= arch_number(high) or number // 10 == arch_number(high) // 10


class DriverFloor(Record):
    __slots__ = ("version", "toolkit")
    version: str | None  # None = the matrix has no floor for this OS
    toolkit: CudaToolkit | None  # None when the runtime has no row

    def __init__(self, version: str | None, toolkit: CudaToolkit | None) -> None:
        self.version = version
        self.toolkit = toolkit


#: (runtime, runtime_full, os) -> its DriverFloor
_DRIVER_FLOORS: MatrixMemo[tuple[str | None, str | None, str], DriverFloor] = MatrixMemo("driver_floors")


def driver_floor(matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str) -> DriverFloor:
    memo = _DRIVER_FLOORS.table(matrix)
    key = (runtime, runtime_full, os)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _driver_floor(matrix, runtime, runtime_full, os)
    return found


def _driver_floor(matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str) -> DriverFloor:
    if runtime is None:
        return DriverFloor(None, None)
    attr = "min_driver_windows" if os == "windows" else "min_driver_linux"
    rows = _toolkit_rows(matrix, runtime, runtime_full)
    known = [t for t in rows if getattr(t, attr) is not None]
    if not known:
        return DriverFloor(None, rows[-1] if rows else None)
    best = max(known, key=lambda t: cached_version(getattr(t, attr)))
    return DriverFloor(getattr(best, attr), best)


def _toolkit_rows(matrix: Matrix, runtime: str, runtime_full: str | None) -> list[CudaToolkit]:
    """The toolkit rows of the runtime's major.minor; only the exact release's when ``runtime_full`` has one."""
    want = cached_version(runtime).release[:2]
    rows = [t for t in matrix.cuda_toolkits() if cached_version(t.version).release[:2] == want]
    if runtime_full is not None:
        exact = [t for t in rows if cached_version(t.version) == cached_version(runtime_full)]
        rows = exact or rows
    return rows


#: what minor-version compatibility does not cover, said with every answer that counts on it
MVC_LIMITS = (
    "minor-version compatibility does not cover PTX JIT for a GPU newer than every SASS the build ships, and "
    "kernels that torch.compile's Triton builds with its bundled ptxas (newer than the driver) fail with "
    "'device kernel image is invalid' until the driver reaches the toolkit's own floor, or TRITON_PTXAS_PATH "
    "points to a ptxas of the driver's CUDA version"
)
#: ``MVC_LIMITS`` in one line, for the answer's warnings (the reasons keep the long form); Windows has no Triton
MVC_LIMITS_SHORT = {
    "linux": "below it, PTX JIT and torch.compile's Triton kernels fail ('device kernel image is invalid')",
    "windows": "below it, PTX JIT fails for a GPU newer than every SASS the build ships",
}
#: the sources of ``MVC_LIMITS`` (sources.yaml keys)
MVC_LIMITS_SOURCES = ("nv_minor_compat", "pytorch_triton_ptxas")

Rule = Literal["minor-version-compat", "toolkit-floor"]


class DriverRule(Record):
    """The driver a build needs on this GPU, and which rule decided it (the table in the module docstring)."""

    __slots__ = ("version", "rule", "toolkit", "toolkit_floor", "major_floor", "major_row", "coverage")
    #: the floor the decision uses; None = neither floor is known for this OS
    version: str | None
    rule: Rule
    #: the CudaToolkit row of the toolkit's own floor (None when the runtime has no row)
    toolkit: CudaToolkit | None
    #: the toolkit's own floor on this OS (None = not in NVIDIA's table)
    toolkit_floor: str | None
    #: the CUDA major's minor-version-compatibility floor on this OS (None: no such row)
    major_floor: str | None
    #: the MinorVersionCompat row
    major_row: MinorVersionCompat | None
    #: the GPU's coverage the rule was applied with (None: no --gpu-arch)
    coverage: str | None

    def __init__(
        self,
        version: str | None,
        rule: Rule,
        toolkit: CudaToolkit | None,
        toolkit_floor: str | None,
        major_floor: str | None,
        major_row: MinorVersionCompat | None,
        coverage: str | None,
    ) -> None:
        self.version = version
        self.rule = rule
        self.toolkit = toolkit
        self.toolkit_floor = toolkit_floor
        self.major_floor = major_floor
        self.major_row = major_row
        self.coverage = coverage


#: (runtime, runtime_full, os, coverage) -> its DriverRule
_DRIVER_RULES: MatrixMemo[tuple[str | None, str | None, str, str | None], DriverRule] = MatrixMemo("driver_rules")


def driver_rule(
    matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str, coverage: str | None
) -> DriverRule:
    memo = _DRIVER_RULES.table(matrix)
    key = (runtime, runtime_full, os, coverage)
    found = memo.get(key)
    if found is None:
        found = memo[key] = _driver_rule(matrix, runtime, runtime_full, os, coverage)
    return found


def _driver_rule(
    matrix: Matrix, runtime: str | None, runtime_full: str | None, os: str, coverage: str | None
) -> DriverRule:
    own = driver_floor(matrix, runtime, runtime_full, os)
    row, major = _major_floor(matrix, runtime, os)
    if major is None or coverage == "ptx":
        # no minor-version compatibility, or the GPU runs the build only by JIT-compiling its PTX
        needed = [v for v in (own.version, major) if v is not None]
        version = max(needed, key=cached_version) if needed else None
        return DriverRule(version, "toolkit-floor", own.toolkit, own.version, major, row, coverage)
    # SASS (or unknown): the major's floor, unless the toolkit's own is lower (11.0 GA shipped 450.51)
    version = major
    if own.version is not None and cached_version(own.version) < cached_version(major):
        version = own.version
    return DriverRule(version, "minor-version-compat", own.toolkit, own.version, major, row, coverage)


def _major_floor(matrix: Matrix, runtime: str | None, os: str) -> tuple[MinorVersionCompat | None, str | None]:
    """The runtime's CUDA major's minor-version-compatibility row and its floor on this OS (None: no such row,
    or no floor for the OS)."""
    row = matrix.minor_version_compat(cached_version(runtime).major) if runtime else None
    if row is None:
        return None, None
    return row, row.min_driver_windows if os == "windows" else row.min_driver_linux


#: os -> (the toolkit's own driver floor, the toolkit version), newest toolkit first
_TOOLKIT_FLOORS: MatrixMemo[str, tuple[tuple[Version, str], ...]] = MatrixMemo("toolkit_floors")


def newest_cuda_for_driver(matrix: Matrix, driver: str, os: str) -> str | None:
    """The newest toolkit whose own floor the driver meets ("driver 470.82 runs CUDA ≤ 11.4")."""
    # memoized per OS, not per driver: a request's driver string is free text
    memo = _TOOLKIT_FLOORS.table(matrix)
    floors = memo.get(os)
    if floors is None:
        attr = "min_driver_windows" if os == "windows" else "min_driver_linux"
        floors = memo[os] = tuple(
            (cached_version(getattr(t, attr)), t.version) for t in reversed(matrix.cuda_toolkits()) if getattr(t, attr)
        )
    have = cached_version(driver)
    return next((version for floor, version in floors if floor <= have), None)


def arch_is_known(gpu_arch: str, known: Sequence[str]) -> bool:
    """A gfx target the matrix names (any, while it names none), or an NVIDIA arch of a major some build
    ships (sm_89 runs sm_86 cubins; sm_999 is no GPU the matrix knows)."""
    if gpu_arch in known or gpu_arch.rstrip("af") in known:
        return True
    if gpu_arch.startswith("gfx"):
        # the gfx lists in the matrix are those of the sourced ROCm builds (to 2.4); later builds' lists are
        # unknown (gpu_archs.yaml `searched`), so a target no list names (gfx1101, gfx1201, gfx950) is not ruled out
        return True
    return _sm_major(gpu_arch) in {_sm_major(a) for a in known if a.startswith("sm_")}


def _sm_major(arch: str) -> int:
    number = int("".join(ch for ch in arch[3:] if ch.isdigit()) or 0)
    return number // 10


def too_new_for(gpu_arch: str, row: ArchList) -> bool:
    """True when an NVIDIA GPU is newer than every cubin and PTX a known arch list ships."""
    if not gpu_arch.startswith("sm_"):
        return False
    have = [a for a in (*row.archs, row.ptx) if a and a.startswith("sm_")]
    number = _sm_digits(gpu_arch)
    return bool(have) and all(_sm_digits(a) < number for a in have)


def _sm_digits(arch: str) -> int:
    """'sm_90a' -> 90 (an arch with no digits is an error, unlike `arch_number`)."""
    return int("".join(ch for ch in arch[3:] if ch.isdigit()))


def runtime_fits(family: str, have: str, needs: str | None) -> bool | None:
    """Does the host's vendor runtime ``have`` (--runtime) fit what a build or plugin needs?

    npu / mlu: the plugin row's CANN / Cambricon toolkit, the same release (8.0.0 is not 8.0.RC3); rocm: the
    build's ROCm release, the same major.minor (a ROCm 6.2.x host takes rocm6.2 and rocm6.2.4 builds).
    None when the matrix does not say what the build needs.
    """
    if needs is None:
        return None
    wanted = _runtime_version(needs)
    if wanted is None:
        return None
    host = cached_version(have)
    if family == "rocm":
        return host.release[:2] == wanted.release[:2]
    return host == wanted


def _runtime_version(text: str) -> Version | None:
    """'8.0.RC3' -> Version, 'CTR 2.15' -> Version('2.15'); None for text without a version."""
    for part in reversed(text.split()):
        try:
            return cached_version(part)
        except InvalidVersion:
            pass
    return None


class GpuLookup(Record):
    """GPU product names mapped to one architecture (gpu_names in cuda.yaml, rocm.yaml and xpu.yaml)."""

    __slots__ = ("arch", "family", "matched", "source", "note")
    arch: str
    family: str  # "cuda" (NVIDIA), "rocm" (AMD) or "xpu" (Intel: arch is the device family, bmg)
    #: (product name as given, architecture, the matrix's name that matched)
    matched: tuple[tuple[str, str, str], ...]
    source: tuple[str, ...]
    #: said when several GPUs disagree: which one the answer is for
    note: str | None

    def __init__(
        self,
        arch: str,
        family: str,
        matched: tuple[tuple[str, str, str], ...],
        source: tuple[str, ...],
        note: str | None = None,
    ) -> None:
        self.arch = arch
        self.family = family
        self.matched = matched
        self.source = source
        self.note = note


#: the trademark marks vendors' tools print inside product names ("AMD Radeon(TM) 8060S Graphics",
#: "Intel(R) Arc(TM) B580"): no part of the name
_MARKS = frozenset({"tm", "r"})


def _words(text: str) -> list[str]:
    return [w for w in "".join(ch if ch.isalnum() else " " for ch in text.lower()).split() if w not in _MARKS]


def gpu_for_name(matrix: Matrix, product: str) -> GpuName | None:
    """The matrix's GpuName row for a product string ("NVIDIA GeForce RTX 5090"): every word of the row's name
    appears, in order and adjacent, among the product's words; the longest such name wins. None: unknown."""
    words = _words(product)
    best = None
    for row in matrix.gpu_names():
        want = _words(row.name)
        n = len(want)
        found = any(words[i : i + n] == want for i in range(len(words) - n + 1))
        if found and (best is None or n > len(_words(best.name))):
            best = row
    return best


def _multi_gpu_note(matched: tuple[tuple[str, str, str], ...], nvidia: bool, picked: str) -> str | None:
    """Which GPU the answer is for, when the host's GPUs have more than one architecture."""
    if len({arch for _, arch, _ in matched}) <= 1:
        return None
    rule = "the lowest compute capability" if nvidia else "the first GPU"
    return (
        f"multi-GPU host ({', '.join(f'{p}: {a}' for p, a, _ in matched)}): the answer is for {rule}, "
        f"{picked}, so that the build runs on every GPU"
    )


def gpu_arch_for_names(matrix: Matrix, products: Sequence[str]) -> GpuLookup | None:
    """One architecture for a host's GPUs: the lowest NVIDIA compute capability (a build must run on every
    GPU), or the first AMD target; None when no name is known to the matrix."""
    rows, unknown = _named_gpus(matrix, products)
    if not rows:
        return None
    matched = tuple((p, row.arch, row.name) for p, row in rows)
    source = tuple(dict.fromkeys(k for _, row in rows for k in row.source))
    arch, nvidia = _lowest_arch([row.arch for _, row in rows])
    note = _lookup_note(matched, nvidia, arch, unknown)
    return GpuLookup(arch, gpu_family(arch), matched, source, note)


def _named_gpus(matrix: Matrix, products: Sequence[str]) -> tuple[list[tuple[str, GpuName]], list[str]]:
    """(product, its row) for the products the matrix names, and the (non-blank) products it does not."""
    found = [(p, gpu_for_name(matrix, p)) for p in products if p.strip()]
    return [(p, row) for p, row in found if row is not None], [p for p, row in found if row is None]


def _lowest_arch(archs: list[str]) -> tuple[str, bool]:
    """The lowest NVIDIA compute capability (a build must run on every GPU), else the first AMD target; and
    whether it is NVIDIA's."""
    nvidia = [arch for arch in archs if arch.startswith("sm_")]
    return (min(nvidia, key=arch_number), True) if nvidia else (archs[0], False)


def _lookup_note(
    matched: tuple[tuple[str, str, str], ...], nvidia: bool, picked: str, unknown: list[str]
) -> str | None:
    """The multi-GPU note and the note on GPUs the matrix does not name, joined."""
    note = _multi_gpu_note(matched, nvidia, picked)
    if not unknown:
        return note
    extra = f"no architecture known for {', '.join(unknown)}; the answer is for the GPUs the matrix names"
    return f"{note}; {extra}" if note else extra


def gpu_family(arch: str) -> str:
    """The backend family a named GPU's architecture belongs to: sm_ NVIDIA (cuda), gfx AMD (rocm), else an
    Intel device family (xpu.yaml's gpu_names: bmg, dg2, pvc, ...)."""
    if arch.startswith("sm_"):
        return "cuda"
    return "rocm" if arch.startswith("gfx") else "xpu"
