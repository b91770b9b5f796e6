"""`--with`: companions and ecosystem packages, repeatable, a specifier's commas kept; the query-string form
round-trips."""

from __future__ import annotations

from typing import Any

import pytest

from compat_service.domain.errors import InvalidRequestError
from compat_service.domain.resolver.request import DEFAULT_COMPANIONS, PackageRequest, ResolveRequest


@pytest.mark.parametrize(
    ("values", "companions", "stack"),
    [
        (["vllm"], DEFAULT_COMPANIONS, (PackageRequest("vllm"),)),
        (["vllm==0.15.1", "flash-attn"], DEFAULT_COMPANIONS,
         (PackageRequest("vllm", "==0.15.1"), PackageRequest("flash-attn"))),
        (["xformers>=0.0.30,<0.0.33"], DEFAULT_COMPANIONS, (PackageRequest("xformers", "<0.0.33,>=0.0.30"),)),
        ("torchvision,Flash_Attn", ("torchvision",), (PackageRequest("flash-attn"),)),
        (["none", "vllm"], (), (PackageRequest("vllm"),)),
        (["vllm", "vllm"], DEFAULT_COMPANIONS, (PackageRequest("vllm"),)),
        ("torchvision,torchaudio", ("torchvision", "torchaudio"), ()),
    ],
)
def test_with_values(values: list[str] | str, companions: tuple[str, ...], stack: tuple[PackageRequest, ...]) -> None:
    request = ResolveRequest.from_strings(with_=values)
    assert request.with_ == companions and request.stack == stack
    strings: dict[str, Any] = {("with_" if k == "with" else k): v for k, v in request.to_strings().items()}
    again = ResolveRequest.from_strings(**strings)
    assert (again.with_, again.stack) == (request.with_, request.stack)


@pytest.mark.parametrize("value", ["vllm 0.15", "torch==2.3", "torchvision==0.18", "vllm==not-a-version", "-x"])
def test_a_malformed_package_request_is_refused(value: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        ResolveRequest.from_strings(with_=[value])
    assert caught.value.exit_code == 2 and "--with" in caught.value.message
