"""Known-bad combinations (matrix_data/known_bad.yaml): which cited rules a candidate build matches, and what
the answer says about them. Called from one place, the last step of the stages (`screen`).

A rule matches a candidate when every field it gives matches: the torch patch, the build's family and label,
the platform, the Python (its minor, and its full version for a CPython patch release), the GPU architecture,
the driver and macOS versions, a package installed beside torch. A field the request leaves open (no
--gpu-arch, --driver, --macos or full --python; a --with package without a version) cannot rule the rule out:
the rule *may* apply.

Per severity (documented in matrix_data/README.md):
- ``never`` and matched: the build is passed over; the answer names the rule beside the newer patch or the
  other build it passed over. When no build of any matching patch is left (an exact pin of a known-bad
  release), the failure is ``known-bad``: it names the rule and its source, and "what would work" lists
  requests that resolve (the nearest torch release that fits, the CPU build, ...).
- ``never`` that may apply: the build is kept and the answer says, in one line, when the rule applies.
- ``caveat`` and matched: one line in the answer's warnings with the rule's id and source; a caveat that only
  may apply is not said (the answer says caveats where they apply).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from compat_service.domain.backends import PLUGIN_FAMILIES
from compat_service.domain.matrix.memo import MatrixMemo
from compat_service.domain.versions import parse_specifier

if TYPE_CHECKING:
    from compat_service.domain.matrix.model.rows import KnownBadRule, TorchPatch
    from compat_service.domain.resolver.state import Candidate, ResolverState

Verdict = Literal["yes", "maybe", "no"]


def _arch_number(arch: str) -> int:
    return int("".join(ch for ch in arch if ch.isdigit()) or 0)


@lru_cache(maxsize=4096)
def _in_spec(spec_text: str, version: str) -> bool:
    """Kept (bounded): every build of every patch the stages try asks it of every rule for that release."""
    spec = parse_specifier(spec_text)
    return spec is not None and spec.contains(version, prereleases=True)


#: (patch, family, build label, platform, Python) -> the rules whose fixed fields (torch range, families, build
#: labels, platforms, Pythons) hold for that build, in file order: all drawn from the matrix, so bounded; `match`
#: reads the request's own fields against these only
_APPLICABLE: MatrixMemo[tuple[str, str, str, str, str], tuple[KnownBadRule, ...]] = MatrixMemo("known_bad_rules")


def applicable(state: ResolverState, patch: TorchPatch, python: str, c: Candidate) -> tuple[KnownBadRule, ...]:
    """The rules of this build of ``patch`` that the request's GPU, versions and packages decide (`match`)."""
    family = state.family if state.family in PLUGIN_FAMILIES or state.family == "mps" else c.build_row.family
    key = (patch.version, family, c.label, state.request.platform, python)
    memo = _APPLICABLE.table(state.matrix)
    found = memo.get(key)
    if found is None:
        found = memo[key] = tuple(
            rule
            for rule in state.matrix.known_bad(patch.version)
            if _in_spec(rule.torch, patch.version)
            and (rule.families is None or family in rule.families)
            and (rule.variants is None or c.label in rule.variants)
            and (rule.platforms is None or key[3] in rule.platforms)
            and (rule.python is None or python in rule.python)
        )
    return found


#: (words, field) of the version conditions `match` reads: a rule's version spec and the request's version, both
#: named ``field``
_VERSION_CHECKS = (("Python", "python_version"), ("NVIDIA driver", "driver"), ("macOS", "macos"))


def match(rule: KnownBadRule, state: ResolverState, patch: TorchPatch) -> tuple[Verdict, list[str]]:
    """Whether ``rule``, one of the build's `applicable` rules, holds on the request's target: "no", "yes", or
    "maybe" with the conditions the request leaves open (in words)."""
    r = state.request
    open_: list[str] = []
    if rule.gpu_archs is not None or rule.min_gpu_arch is not None:
        if r.gpu_arch is None:
            wanted = list(rule.gpu_archs or []) + ([f"{rule.min_gpu_arch} or newer"] if rule.min_gpu_arch else [])
            open_.append(f"the GPU is {' or '.join(wanted)}")
        elif not _arch_fits(rule, r.gpu_arch):
            return "no", []
    for name, field in _VERSION_CHECKS:
        spec = getattr(rule, field)
        if spec is None:
            continue
        have = getattr(r, field)
        if have is None:
            open_.append(f"the {name} is {spec}")
        elif not _in_spec(spec, have):
            return "no", []
    if rule.companion is not None:
        verdict = _companion(rule, state, patch)
        if verdict == "no":
            return "no", []
        if verdict == "maybe":
            open_.append(f"{rule.companion.name}{rule.companion.version} is installed")
    return ("maybe", open_) if open_ else ("yes", [])


def _arch_fits(rule: KnownBadRule, gpu: str) -> bool:
    if rule.gpu_archs is not None and gpu in rule.gpu_archs:
        return True
    if rule.min_gpu_arch is not None and gpu.startswith("sm_"):
        return _arch_number(gpu) >= _arch_number(rule.min_gpu_arch)
    return False


def _companion(rule: KnownBadRule, state: ResolverState, patch: TorchPatch) -> Verdict:
    """The rule's package beside torch: a pinned companion (its version is the answer's), or a --with package
    (its version is the stack resolver's: only a rule for every release of it is a sure match)."""
    assert rule.companion is not None
    name, spec = rule.companion.name, rule.companion.version
    if name in state.request.with_:
        pinned = getattr(patch, name).version
        if pinned is None:
            return "maybe"
        return "yes" if not spec or _in_spec(spec, pinned) else "no"
    if any(p.name.lower() == name for p in state.request.stack):
        return "yes" if not spec else "maybe"
    return "no"


def words(rule: KnownBadRule) -> str:
    """The rule in one line: what breaks, its id and its source."""
    return f"{rule.effect} [known issue {rule.id}: {', '.join(rule.source)}]"


#: (patch, Python, platform, family, the builds' labels, companions) -> what `screen` found: (label, the answer's
#: lines) per build kept, (label, rule) per build passed over. Kept for a request that gives none of the fields
#: `match` reads but its companions (no --gpu-arch, --driver, --macos, full --python or stack package): then
#: every verdict follows from matrix facts
_SCREENED: MatrixMemo[
    tuple[str, str, str, str, tuple[str, ...], tuple[str, ...]],
    tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[tuple[str, KnownBadRule], ...]],
] = MatrixMemo("known_bad_screened")


def screen(
    state: ResolverState, patch: TorchPatch, python: str, candidates: list[Candidate]
) -> tuple[list[Candidate], list[tuple[Candidate, KnownBadRule]]]:
    """The candidates no ``never`` rule matches, each with the lines the answer says about the rules that do
    or may apply (`Candidate.known_bad`), and the (candidate, rule) pairs passed over."""
    if not state.matrix.known_bad(patch.version):
        return candidates, []
    r = state.request
    if _target_given(state):
        return _screen(state, patch, python, candidates)
    memo = _SCREENED.table(state.matrix)
    key = (patch.version, python, r.platform, state.family, tuple([c.label for c in candidates]), r.with_)
    found = memo.get(key)
    if found is None:
        kept, refused = _screen(state, patch, python, candidates)
        memo[key] = (tuple([(c.label, tuple(c.known_bad)) for c in kept]), tuple([(c.label, b) for c, b in refused]))
        return kept, refused
    return _replayed(found, candidates)


def _target_given(state: ResolverState) -> bool:
    """Whether the request gives a field of the target `match` reads besides the companions."""
    r = state.request
    return r.gpu_arch is not None or bool(r.stack) or any(getattr(r, field) is not None for _, field in _VERSION_CHECKS)


def _replayed(
    found: tuple[tuple[tuple[str, tuple[str, ...]], ...], tuple[tuple[str, KnownBadRule], ...]],
    candidates: list[Candidate],
) -> tuple[list[Candidate], list[tuple[Candidate, KnownBadRule]]]:
    """What `_screen` found for these builds' labels (`_SCREENED`), said of these builds."""
    by_label = {c.label: c for c in candidates}
    for label, lines in found[0]:
        by_label[label].known_bad = list(lines)
    return [by_label[label] for label, _ in found[0]], [(by_label[label], rule) for label, rule in found[1]]


def _screen(
    state: ResolverState, patch: TorchPatch, python: str, candidates: list[Candidate]
) -> tuple[list[Candidate], list[tuple[Candidate, KnownBadRule]]]:
    kept: list[Candidate] = []
    refused: list[tuple[Candidate, KnownBadRule]] = []
    # what each rule says on this target: the same for every build it applies to (`match` reads no build)
    said: dict[str, tuple[KnownBadRule | None, str | None]] = {}
    for c in candidates:
        lines: list[str] = []
        bad = None
        for rule in applicable(state, patch, python, c):
            found = said.get(rule.id)
            if found is None:
                found = said[rule.id] = _said(rule, state, patch)
            bad, line = found
            if bad is not None:
                break
            if line is not None:
                lines.append(line)
        if bad is not None:
            refused.append((c, bad))
        else:
            c.known_bad = lines
            kept.append(c)
    if kept and refused:
        _say_passed_over(kept, refused)
    return kept, refused


def _say_passed_over(kept: list[Candidate], refused: list[tuple[Candidate, KnownBadRule]]) -> None:
    """Each kept build's answer names the builds passed over, and the rule that passed over each."""
    passed = "; ".join(f"{c.label} passed over: {words(rule)}" for c, rule in refused)
    for c in kept:
        c.known_bad = [*c.known_bad, passed]


def _said(rule: KnownBadRule, state: ResolverState, patch: TorchPatch) -> tuple[KnownBadRule | None, str | None]:
    """(the rule, when it passes the build over; else None) and the line the answer says about it (None: none)."""
    verdict, open_ = match(rule, state, patch)
    if verdict == "no":
        return None, None
    if rule.severity == "never" and verdict == "yes":
        return rule, None
    if rule.severity == "never":
        return None, f"if {' and '.join(open_)}: {words(rule)}"
    return None, words(rule) if verdict == "yes" else None


def skip_words(rule: KnownBadRule) -> str:
    """Why a patch was passed over, for the answer's "skipped newer" list."""
    return f"known bad: {rule.id}, {', '.join(rule.source)}"
