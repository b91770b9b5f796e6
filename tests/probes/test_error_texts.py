"""Classifying device errors: real exceptions from this torch where it can raise them, and the exact
texts other backends print (PrivateUse1 notes, section 6) where it cannot."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest

from probes.checks import error_texts
from tests.probes.conftest import quiet_torch

pytestmark = pytest.mark.torch


def raised(fn: Callable[[Any], Any]) -> BaseException:
    torch = quiet_torch()
    try:
        fn(torch)
    except Exception as exc:  # the point: catch whatever torch raises
        return exc
    raise AssertionError("expected torch to raise")


@pytest.mark.parametrize(
    ("fn", "op"),
    [
        pytest.param(lambda t: torch_sparse(t).cumsum(0), "aten::cumsum", id="cumsum-sparse"),
        pytest.param(lambda t: t.sort(torch_sparse(t)), "aten::sort.stable", id="sort-overload-kept"),
    ],
)
def test_real_dispatcher_error_names_op_and_backend(fn: Callable[[Any], Any], op: str) -> None:
    info = error_texts.classify_unsupported(raised(fn))
    assert info is not None
    assert info["aten_op"] == op and info["backend"] == "SparseCPU" and info["kind"] == "dispatcher"
    assert info["base_op"] == op.split(".")[0]


def torch_sparse(torch: Any) -> Any:
    return torch.eye(3).to_sparse()


def test_real_missing_dtype_kernel() -> None:
    exc = raised(lambda t: t.zeros(2, 2, dtype=t.bool) @ t.zeros(2, 2, dtype=t.bool))
    info = error_texts.classify_unsupported(exc)
    assert info == {"aten_op": None, "base_op": None, "backend": None, "kind": "dtype",
                    "kernel": "addmm_impl_cpu_", "dtype": "Bool"}


@pytest.mark.parametrize(
    ("text", "exc_type", "op", "backend", "kind"),
    [
        pytest.param(
            "Could not run 'aten::_adaptive_avg_pool2d_backward' with arguments from the 'refdev' backend. This "
            "could be because the operator doesn't exist for this backend, or was omitted during the "
            "selective/custom build process (if using custom build).",
            NotImplementedError, "aten::_adaptive_avg_pool2d_backward", "refdev", "dispatcher",
            id="privateuse1-renamed"),
        pytest.param(
            "convolution_overrideable not implemented. You are likely triggering this with tensor backend other "
            "than CPU/CUDA/MKLDNN, if this is intended, please use TORCH_LIBRARY_IMPL to override this function",
            NotImplementedError, "aten::convolution_overrideable", None, "overrideable", id="overrideable-default"),
        pytest.param(
            "The operator 'aten::_linalg_eigvals' is not currently implemented for the MPS device. If you want this "
            "op to be added in priority during the prototype phase of this feature, please comment on "
            "https://github.com/pytorch/pytorch/issues/77764.",
            NotImplementedError, "aten::_linalg_eigvals", "mps", "mps", id="mps-missing"),
        pytest.param("something else entirely", NotImplementedError, None, None, "unparsed", id="unparsed"),
    ],
)
def test_documented_texts(text: str, exc_type: type[Exception], op: str | None, backend: str | None,
                          kind: str) -> None:
    info = error_texts.classify_unsupported(exc_type(text))
    assert info is not None
    assert (info["aten_op"], info["backend"], info["kind"]) == (op, backend, kind)


def test_other_runtime_errors_are_not_unsupported() -> None:
    assert error_texts.classify_unsupported(RuntimeError("shape '[2, 3]' is invalid for input of size 5")) is None


def test_cpu_fallback_warning_names_the_op() -> None:
    text = ("The operator 'aten::linalg_qr.out' is not currently supported on the MPS backend and will fall back "
            "to run on the CPU. This may have performance implications.")
    assert error_texts.cpu_fallback_op([text]) == "aten::linalg_qr.out"
    assert error_texts.cpu_fallback_op(["TypedStorage is deprecated"]) is None


def test_oom_recognised_by_class_and_by_text() -> None:
    torch = quiet_torch()
    assert error_texts.is_oom(torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), torch)
    assert error_texts.is_oom(RuntimeError("MPS backend out of memory (MPS allocated: 1.2 GB)"), torch)
    assert not error_texts.is_oom(RuntimeError("expected scalar type Float"), torch)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert torch.OutOfMemoryError in error_texts.oom_error_types(torch)


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        pytest.param("Backend doesn't support synchronizing events.",
                     "Backend doesn't support synchronizing events.", id="event-sync"),
        pytest.param("Backend doesn't support getting device capabilities.\nException raised from "
                     "getDeviceCapability at c10/core/impl/DeviceGuardImplInterface.h:278",
                     "Backend doesn't support getting device capabilities.", id="capability-with-trace"),
        pytest.param("Backend doesn't support exchangeDevice()", "Backend doesn't support exchangeDevice()",
                     id="no-full-stop"),
        pytest.param("device_allocator INTERNAL ASSERT FAILED at \"c10/core/CachingDeviceAllocator.h\":261, "
                     "please report a bug to PyTorch. Allocator for refdev is not a DeviceAllocator.",
                     "Allocator for refdev is not a DeviceAllocator", id="accelerator-memory"),
        pytest.param("CUDA error: an illegal memory access was encountered", None, id="genuine-cuda-error"),
        pytest.param("Could not run 'aten::mm.out' with arguments from the 'refdev' backend.", None,
                     id="missing-op-is-not-a-declined-api"),
    ],
)
def test_backend_declining_an_api_is_told_from_a_real_failure(text: str, phrase: str | None) -> None:
    assert error_texts.backend_declines(RuntimeError(text)) == phrase
