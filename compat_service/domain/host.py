"""The host as its detection describes it (``probes.host.facts.detect_host``): what `accelenv resolve` on the
host and `accelenv doctor` both start from (`ResolveRequest.for_host` turns it into a request)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class HostFacts:
    """The host being checked or resolved for, as the caller detected it."""

    os: str
    arch: str
    python: str
    #: cpu, cuda, rocm, xpu, mps, npu, mlu, or what ACCELENV_BACKEND says (a family or a build label)
    backend: str
    driver: str | None = None
    gpu_arch: str | None = None
    gpu_name: str | None = None
    #: the vendor runtime detected (CANN for npu, ROCm, the MLU runtime); None = unknown
    runtime: str | None = None

    @classmethod
    def from_detected(cls, found: Mapping[str, Any]) -> HostFacts:
        """From ``probes.host.facts.detect_host()``'s dict."""
        return cls(
            os=found["os"],
            arch=found["arch"],
            python=found["python"],
            backend=found["backend"],
            driver=found["driver_version"],
            gpu_arch=found["device_arch"],
            gpu_name=found["device_name"],
            runtime=found.get("runtime_version"),
        )
