"""The host as its detection describes it (``probes.host.facts.detect_host``): what `accelenv resolve` on the
host and `accelenv doctor` both start from (`ResolveRequest.for_host` turns it into a request)."""

from __future__ import annotations

from dataclasses import dataclass

from compat_service.domain.json_types import JsonMapping


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
    #: the C library and OS version (`platform_versions`): glibc 2.36, musl 1.2, macOS 14.5; None = not read
    glibc: str | None = None
    musl: str | None = None
    macos: str | None = None

    @classmethod
    def from_detected(cls, found: JsonMapping) -> HostFacts:
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
            glibc=found.get("glibc"),
            musl=found.get("musl"),
            macos=found.get("macos"),
        )


def platform_versions(os_name: str) -> dict[str, str | None]:
    """This host's glibc or musl version (Linux) or macOS version, as pip's tag logic reads them: packaging's
    own glibc and musl detection (``packaging._manylinux``, ``packaging._musllinux``, the interpreter's C
    library) and `platform.mac_ver`. What cannot be read is None (then the answer states the floor it assumes)."""
    out: dict[str, str | None] = {"glibc": None, "musl": None, "macos": None}
    if os_name == "linux":
        import sys

        from packaging import _manylinux

        glibc = _manylinux._get_glibc_version()
        if glibc[0] > 0:
            out["glibc"] = f"{glibc[0]}.{glibc[1]}"
        else:
            from packaging import _musllinux

            musl = _musllinux._get_musl_version(sys.executable)
            if musl is not None:
                out["musl"] = f"{musl.major}.{musl.minor}"
    elif os_name == "macos":
        import platform

        release = platform.mac_ver()[0]
        if release:
            out["macos"] = ".".join(release.split(".")[:2])
    return out
