"""ResolveRequest.for_host: the one mapping of detected host facts to a request (resolve and doctor)."""

from __future__ import annotations

from typing import Any

import pytest

from compat_service.domain.host import HostFacts
from compat_service.domain.resolver.request import ResolveRequest


def _host(backend: str, driver: str | None = "575.57.08", gpu_arch: str | None = "sm_90") -> HostFacts:
    return HostFacts(os="linux", arch="x86_64", python="3.12", backend=backend, driver=driver, gpu_arch=gpu_arch)


@pytest.mark.parametrize(
    ("host", "driver", "gpu_arch", "family"),
    [
        (_host("cuda"), "575.57.08", "sm_90", "cuda"),
        (_host("cu126"), "575.57.08", "sm_90", "cuda"),
        (_host("rocm", driver=None, gpu_arch="gfx942"), None, "gfx942", "rocm"),
        (_host("cpu"), None, None, "cpu"),
        (_host("xpu", driver="1.6", gpu_arch=None), None, None, "xpu"),
    ],
    ids=["cuda", "label-override", "rocm", "cpu-with-a-driver", "xpu-with-a-driver"],
)
def test_a_hosts_facts_become_its_request(
    host: HostFacts, driver: str | None, gpu_arch: str | None, family: str
) -> None:
    request = ResolveRequest.for_host(host, torch="2.13")
    assert (request.driver, request.gpu_arch, request.backend.family) == (driver, gpu_arch, family)
    assert (request.os, request.arch, request.python) == ("linux", "x86_64", "3.12")


def test_a_flag_given_wins_over_the_detected_fact() -> None:
    request = ResolveRequest.for_host(_host("cuda"), python="3.11", with_="none")
    assert request.python == "3.11"


def test_detect_hosts_dict_is_read_once() -> None:
    found: dict[str, Any] = {
        "os": "linux",
        "arch": "aarch64",
        "python": "3.11",
        "backend": "cuda",
        "driver_version": "580.1",
        "device_arch": "sm_90",
        "device_name": "GH200",
        "runtime_version": None,
        "sources": {},
    }
    assert HostFacts.from_detected(found) == HostFacts("linux", "aarch64", "3.11", "cuda", "580.1", "sm_90", "GH200")
