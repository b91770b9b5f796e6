"""The probe report: one versioned schema, produced by probes/ (as plain JSON) and validated here.

The probes cannot import this module (they run on hosts with only Python and torch); they write JSON that
must validate against ``ProbeReport``. The service publishes ``ProbeReport.model_json_schema()`` and the
repository keeps the same schema in ``compat_service/schemas/probe-report.v1.json`` (a test keeps the two
equal).
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from typing import Annotated, Literal, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, StrictBool, StrictFloat

from compat_service.domain.json_types import JsonObject

SCHEMA_VERSION = "1"

#: the probe's groups, in report order (``probes.checks.registry``; a test keeps the two equal)
CheckGroup = Literal["detect", "smoke", "models", "ops", "opinfo", "compile", "runtime", "privateuse1", "allocator",
                     "amp", "distributed", "perf"]
CheckStatus = Literal["passed", "failed", "unsupported", "skipped", "timeout", "crashed", "error"]
CHECK_STATUSES: tuple[str, ...] = get_args(CheckStatus)

# Limits that keep a hostile or broken report from costing the service memory or storage.
MAX_CHECKS = 5000
MAX_DEVICES = 64
MAX_TEXT = 4000


class _Strict(BaseModel):
    # numbers must be finite (JSON has no inf/NaN: 1e309 would be stored as null); ints, floats and bools
    # are Strict* below: "5", 5.0 or true are not coerced
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _finite(value: object) -> object:
    """Refuse inf and NaN anywhere in free-form data (``1e309`` parses as inf, which JSON cannot hold)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError("numbers must be finite (no NaN, Infinity or values beyond 1.8e308)")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return value


def _in_utc_range(value: dt.datetime) -> dt.datetime:
    """A timestamp must have a UTC equivalent (``0001-01-01T00:00:00+05:00`` has none); kept as sent."""
    try:
        value.astimezone(dt.timezone.utc) if value.tzinfo else value
    except OverflowError:
        raise ValueError("the timestamp is outside the range of UTC dates (0001-01-01 to 9999-12-31)") from None
    return value


def _integral(value: object) -> object:
    """5.0 is the integer 5 (JSON Schema says so too); "5", true and 5.5 stay refused."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _timestamp_text(value: object) -> object:
    if isinstance(value, (int, float)):
        raise ValueError("timestamps are ISO 8601 strings (2026-01-31T12:00:00Z), not numbers")
    return value


#: an integer: no strings or booleans
StrictInt = Annotated[int, Strict(), BeforeValidator(_integral)]
#: ... and not negative (the bound inside: outside a union it would be published as an unknown keyword)
Count = Annotated[int, Strict(), Field(ge=0), BeforeValidator(_integral)]
#: free-form facts: any JSON, numbers finite
FreeData = Annotated[JsonObject, AfterValidator(_finite)]
#: what the server strips from a cell-key part: every character Python's str.strip() removes, written out
#: (the \s of JSON Schema's ECMA regexes, of pydantic's Rust regexes and of Python's re each differ on
#: U+001C-U+001F and U+0085), so that the published pattern means the same in every engine
_STRIPPED = r"\u0009-\u000d\u001c-\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
#: a cell-key part: at least one character the normalising strip keeps
KeyText = Annotated[str, Field(min_length=1, pattern=rf"[^{_STRIPPED}]")]
#: torch.__version__: as KeyText, and its public part (before any '+local' tag) not empty once stripped
TorchVersionText = Annotated[str, Field(min_length=1, pattern=rf"^[{_STRIPPED}]*[^{_STRIPPED}+]")]


class ToolInfo(_Strict):
    name: str = Field(max_length=64)
    version: str = Field(max_length=64)


class Environment(_Strict):
    """What decides compatibility on the probed host. No hostname, user name or secrets."""

    torch_version: TorchVersionText = Field(max_length=64, description="torch.__version__, e.g. '2.3.1+cu121'")
    #: build label: 'cpu', 'cu121', 'rocm6.0', 'xpu', ... derived from torch.version.cuda/hip or the local tag
    torch_build: str | None = Field(default=None, max_length=32)
    python_version: KeyText = Field(max_length=32, description="e.g. '3.11.7'; '3.13.1t' for free-threaded")
    os: Literal["linux", "windows", "macos", "other"]
    arch: KeyText = Field(max_length=32, description="x86_64, aarch64, arm64")
    #: the device type probed: 'cpu', 'cuda', 'mps', 'xpu', or a PrivateUse1 name such as 'npu', 'mlu', 'refdev'
    backend: KeyText = Field(max_length=32)
    #: CUDA / HIP / CANN / ... version torch was built with or the backend reports; null = none/unknown
    runtime_version: str | None = Field(default=None, max_length=64)
    driver_version: str | None = Field(default=None, max_length=64)
    #: the architecture of the probed device: 'sm_90', 'gfx942', the PrivateUse1 backend name, or null
    device_arch: str | None = Field(default=None, max_length=64)
    device_name: str | None = Field(default=None, max_length=256)
    #: salted sha256 of stable host facts; counts distinct hosts without identifying them
    host_fingerprint: str = Field(min_length=16, max_length=128)
    companions: dict[str, str | None] = Field(default_factory=dict, max_length=32)
    extra: FreeData = Field(default_factory=dict, max_length=64)


class Device(_Strict):
    index: StrictInt = Field(ge=0)
    type: str = Field(max_length=32)
    name: str | None = Field(default=None, max_length=256)
    arch: str | None = Field(default=None, max_length=64)
    capability: str | None = Field(default=None, max_length=16)
    total_memory_bytes: Count | None = None
    #: verdict "this build ships kernels (or PTX) for this device"; null = cannot tell
    kernels_for_device: StrictBool | None = None
    extra: FreeData = Field(default_factory=dict, max_length=64)


class CheckResult(_Strict):
    #: stable dotted id, e.g. 'smoke.train_step', 'ops.add.Tensor.float16', 'allocator.cache_reuse'
    id: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9_.:\-\[\]]+$")
    group: CheckGroup
    status: CheckStatus
    duration_s: StrictFloat = Field(ge=0)
    detail: str | None = Field(default=None, max_length=MAX_TEXT)
    #: structured facts: {'aten_op': 'aten::mm', 'dtype': 'float16', 'max_abs_err': 0.1, 'signal': 'SIGSEGV', ...}
    data: FreeData = Field(default_factory=dict, max_length=64)


class Summary(_Strict):
    """What the checks add up to. The service stores the summary derived from the checks, not the one
    sent, so a summary contradicting its checks cannot mislead a reader."""

    total: StrictInt = Field(ge=0)
    counts: dict[CheckStatus, StrictInt]
    #: true when no check is failed, timeout, crashed or error, and no smoke or models check is unsupported
    ok: StrictBool
    #: what a group's checks add up to, where the probe computes it (opinfo: counts, missing aten ops); the
    #: service stores the summary derived from the checks, without this part
    groups: dict[str, FreeData] | None = Field(default=None, max_length=32)


#: units a perf figure may carry
PerfUnit = Literal["FLOP/s", "B/s", "s", "ratio", "count"]


class PerfFigure(_Strict):
    """One figure of the perf group: the device's value beside the same figure on the host's CPU."""

    #: stable name, e.g. 'matmul.float32', 'copy.h2d.pinned', 'launch_latency', 'models.resnet.step'
    name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.:\-]+$")
    unit: PerfUnit
    value: StrictFloat | None = None
    cpu_value: StrictFloat | None = None
    #: value / the device's peak from the probe's sourced peak table; null when the table does not know it
    peak_fraction: StrictFloat | None = Field(default=None, ge=0)
    note: str | None = Field(default=None, max_length=400)
    #: the perf check that measured it
    check: str | None = Field(default=None, max_length=200)
    #: false when the figure cannot be trusted (taken through a CPU fallback, synchronize() failed, samples
    #: too spread out); ``invalid_reason`` says why. Null in reports from probes that did not judge it
    valid: StrictBool | None = None
    invalid_reason: str | None = Field(default=None, max_length=400)
    #: how many timed samples the value is the median of, and their spread ((max - min) / median)
    samples: Count | None = None
    spread: StrictFloat | None = Field(default=None, ge=0)
    #: what bounds the figure at the size measured: the arithmetic units, memory bandwidth or launch latency
    regime: Literal["compute-bound", "memory-bound", "latency-bound"] | None = None
    #: intra-op threads torch used while measuring (torch.get_num_threads())
    threads: Count | None = None
    #: where the peak behind ``peak_fraction`` comes from: a sourced datasheet row, or this host measured
    peak_source: str | None = Field(default=None, max_length=400)
    #: where the CPU did the work: the share of the measuring's wall time the probe's busy threads ran (older
    #: probes: its CPU time over the wall time of all torch's threads); well under 1 means other processes
    #: shared the cores (the figure is then marked invalid)
    cpu_share: StrictFloat | None = Field(default=None, ge=0)


class PerfBlock(_Strict):
    """The perf group's figures (how fast, not whether it works)."""

    figures: list[PerfFigure] = Field(default_factory=list, max_length=200)
    extra: FreeData = Field(default_factory=dict, max_length=64)


class RelayTestResults(_Strict):
    passed: Count
    failed: Count
    skipped: Count


class RelayFailedTest(_Strict):
    """One entry of the relay action's ``failed-tests-detail`` (a check that made the run not ok)."""

    name: str = Field(min_length=1, max_length=200)
    classname: str = Field(max_length=200)
    #: status and detail, at most 1 KB (the action's cap)
    message: str = Field(max_length=1024)
    duration: StrictFloat = Field(ge=0)


class CiRelay(_Strict):
    """What PyTorch's Cross-Repository CI Relay takes from a downstream run: the inputs of pytorch/test-infra's
    ``cross-repo-ci-relay-callback`` action (RFC-0050), filled from the run (``probes.harness.relay``)."""

    #: the callback payload's schema version (the action's SCHEMA_VERSION)
    schema_version: Literal["1"]
    status: Literal["completed"]
    #: the check run's conclusion: success when the report is ok, else failure
    conclusion: Literal["success", "failure"]
    #: the upstream check run is named crcr/<repo>/<workflow>/<job-name>
    job_name: str = Field(min_length=1, max_length=100)
    test_results: RelayTestResults
    failed_tests_detail: list[RelayFailedTest] = Field(max_length=1000)
    source: str = Field(max_length=400)


class ProbeReport(_Strict):
    """The report. ``schema_version`` changes only when the shape changes incompatibly (a field removed,
    renamed or given another meaning); an optional field or block added keeps it (every report valid before
    stays valid), as the CI relay's callback schema versions its payload."""

    schema_version: Literal["1"]
    report_id: uuid.UUID
    created_at: Annotated[dt.datetime, BeforeValidator(_timestamp_text), AfterValidator(_in_utc_range)]
    tool: ToolInfo
    environment: Environment
    devices: list[Device] = Field(max_length=MAX_DEVICES)
    checks: list[CheckResult] = Field(max_length=MAX_CHECKS)
    summary: Summary
    #: the perf group's figures; absent when the group did not run
    perf: PerfBlock | None = None
    #: the dispatcher's backend-relevant overloads this run reached on the device, fell back or found
    #: missing (see probes.checks.dispatcher); absent from probes that did not count them
    coverage: FreeData | None = Field(default=None, max_length=64)
    #: ``--certify``: the run scored on the measurable rows of the PyTorch Compute Platform Quality Levels
    #: rubric (probes.harness.certify), with the evidence per row; absent without --certify
    certification: FreeData | None = Field(default=None, max_length=64)
    #: the fields PyTorch's Cross-Repository CI Relay takes from a downstream run (a vendor posts them with
    #: the relay's callback action); absent from probes that did not fill them
    ci_relay: CiRelay | None = None


#: JSON's escape for U+0000 (a raw NUL byte is not valid JSON, so this is the only way one gets in)
NUL_ESCAPE = b"\\u0000"


def nul_character_paths(report: ProbeReport, body: bytes) -> list[str]:
    """Where ``report`` (parsed from ``body``) holds a NUL character, in a key or a string value.

    Reports are stored as text and PostgreSQL text cannot hold U+0000, so such a report is refused on every
    database alike. ``body`` is searched first (in C), so the common report costs no walk of its strings.
    """
    if NUL_ESCAPE not in body:
        return []
    found: list[str] = []

    def walk(value: object, path: str) -> None:
        if isinstance(value, str):
            if "\x00" in value:
                found.append(path)
        elif isinstance(value, dict):
            for key, item in value.items():
                if "\x00" in str(key):
                    found.append(f"{path}.{key!r}")
                walk(item, f"{path}.{key}")
        elif isinstance(value, list):
            for i, item in enumerate(value):
                walk(item, f"{path}.{i}")

    walk(report.model_dump(mode="json"), "report")
    return found
