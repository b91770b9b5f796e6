"""refdev as a device, each scenario in a fresh interpreter (install is once per process)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from typing import Any

import pytest

from tests.refdev.conftest import result

RunPython = Callable[..., subprocess.CompletedProcess[str]]

TRAINING = """
import json, torch, torch.nn as nn, torch.nn.functional as F
import probes.refdev
probes.refdev.install()

def mlp():
    return nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))

def cnn():
    return nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                         nn.AdaptiveAvgPool2d((2, 2)), nn.Flatten(), nn.Linear(16, 4))

CASES = {
    "mlp-adamw-foreach": (mlp, lambda p: torch.optim.AdamW(p, lr=1e-2), (64, 16)),
    "mlp-adamw-fused": (mlp, lambda p: torch.optim.AdamW(p, lr=1e-2, fused=True), (64, 16)),
    "cnn-sgd-momentum": (cnn, lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9), (8, 3, 16, 16)),
}

def train(device, make_model, make_opt, shape, steps=5):
    torch.manual_seed(0)
    model = make_model().to(device)
    opt = make_opt(model.parameters())
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.randn(*shape, generator=data).to(device)
        y = torch.randint(0, 4, (shape[0],), generator=data).to(device)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return [t.detach().to("cpu") for t in list(model.parameters()) + list(model.buffers())]

out = {}
for name, (make_model, make_opt, shape) in CASES.items():
    dev = train("refdev", make_model, make_opt, shape)
    cpu = train("cpu", make_model, make_opt, shape)
    out[name] = {"bitwise_equal": all(torch.equal(a, b) for a, b in zip(dev, cpu)), "tensors": len(dev)}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def training(refdev_available: None) -> dict[str, Any]:
    from tests.refdev.conftest import run_python

    return result(run_python(TRAINING))


@pytest.mark.parametrize("case", ["mlp-adamw-foreach", "mlp-adamw-fused", "cnn-sgd-momentum"])
def test_training_matches_cpu_bit_for_bit(training: dict[str, Any], case: str) -> None:
    assert training[case]["tensors"] >= 4
    assert training[case]["bitwise_equal"] is True


def test_tensors_device_module_and_accelerator(refdev_python: RunPython) -> None:
    out = result(refdev_python("""
        import json, torch
        before = torch.accelerator.current_accelerator()
        import probes.refdev
        mod = probes.refdev.install()
        x = torch.arange(6.0).view(2, 3)
        d = x.refdev()
        view = d[1]
        view.add_(10)  # in place through a view, on the device
        layer = torch.nn.Linear(3, 2).refdev()
        print(json.dumps({
            "before": str(before),
            "module_is_torch_refdev": mod is torch.refdev,
            "available": torch.refdev.is_available(),
            "count": torch.refdev.device_count(),
            "accelerator": str(torch.accelerator.current_accelerator()),
            "accelerator_count": torch.accelerator.device_count(),
            "device": str(d.device), "is_refdev": d.is_refdev, "type": type(d).__name__,
            "repr_has_device": "device='refdev:0'" in repr(d),
            "factory": torch.zeros(2, 2, device="refdev").is_refdev,
            "via_view": d.cpu().tolist(),
            "view_shares_storage": view.untyped_storage()._cdata == d.untyped_storage()._cdata,
            "module_param": str(next(layer.parameters()).device),
            "linear": torch.allclose(layer(d).cpu(), layer.cpu()(x + torch.tensor([0.0, 10.0]).view(2, 1))),
            "item": torch.tensor([2.5], device="refdev").item(),
            "wrapped_number_dtype": str((torch.tensor(3, dtype=torch.int32, device="refdev") + 5).dtype),
        }))
    """))
    assert out["before"] == "None"
    assert out["module_is_torch_refdev"] and out["available"] and out["count"] == 1
    assert out["accelerator"] == "refdev" and out["accelerator_count"] == 1
    assert out["device"] == "refdev:0" and out["is_refdev"] and out["type"] == "Tensor"
    assert out["repr_has_device"] and out["factory"] and out["module_param"] == "refdev:0"
    assert out["via_view"] == [[0.0, 1.0, 2.0], [13.0, 14.0, 15.0]]
    assert out["view_shares_storage"] and out["linear"]
    assert out["item"] == 2.5 and out["wrapped_number_dtype"] == "torch.int32"


def test_memory_stats_move_with_tensors(refdev_python: RunPython) -> None:
    out = result(refdev_python("""
        import json, torch, probes.refdev
        probes.refdev.install()
        m = torch.refdev
        seen = {"start": (m.memory_allocated(), m.memory_reserved())}
        t = torch.empty(1 << 20, dtype=torch.uint8, device="refdev")  # 1 MiB: small pool
        seen["one_mib"] = (m.memory_allocated(), m.memory_reserved())
        del t
        seen["freed"] = (m.memory_allocated(), m.memory_reserved())
        seen["peak"] = m.max_memory_allocated()
        m.reset_peak_memory_stats()
        seen["peak_after_reset"] = m.max_memory_allocated()
        m.empty_cache()
        seen["emptied"] = (m.memory_allocated(), m.memory_reserved())
        free, total = m.mem_get_info()
        seen["mem_get_info"] = (free, total)
        stats = m.memory_stats()
        seen["keys"] = [k for k in ("allocation.all.current", "allocated_bytes.all.peak",
                        "reserved_bytes.all.current", "num_ooms", "num_alloc_retries") if k in stats]
        print(json.dumps(seen))
    """))
    assert out["start"] == [0, 0]
    assert out["one_mib"] == [1 << 20, 2 << 20]
    assert out["freed"] == [0, 2 << 20]  # freed on the last reference, no gc; cached
    assert out["peak"] == 1 << 20 and out["peak_after_reset"] == 0
    assert out["emptied"] == [0, 0]
    assert out["mem_get_info"] == [1 << 30, 1 << 30]
    assert len(out["keys"]) == 5


def test_out_of_memory_is_raised_and_recoverable(refdev_python: RunPython) -> None:
    out = result(refdev_python("""
        import json, torch, probes.refdev
        probes.refdev.install()
        m = torch.refdev
        seen = {"capacity_from_env": m.get_memory_capacity()}
        keep = torch.empty(6 << 20, dtype=torch.uint8, device="refdev")
        try:
            torch.empty(8 << 20, dtype=torch.uint8, device="refdev")
        except torch.OutOfMemoryError as exc:
            seen["forward"] = str(exc).split(".")[0]
        del keep
        w = torch.ones(1 << 20, device="refdev", requires_grad=True)  # 4 MiB
        loss = (w * 2).sum()
        m.empty_cache()
        m.set_memory_capacity(m.memory_reserved())  # full: the gradient cannot fit
        try:
            loss.backward()
        except torch.OutOfMemoryError as exc:
            seen["backward"] = type(exc).__name__
        stats = m.memory_stats()
        seen["num_ooms"] = stats["num_ooms"]
        seen["retries"] = stats["num_alloc_retries"]
        m.set_memory_capacity(12 << 20)
        w.grad = None
        (w * 2).sum().backward()
        seen["recovered"] = w.grad.sum().item()
        m.set_memory_capacity(1 << 30)
        seen["bigger"] = torch.empty(100 << 20, dtype=torch.uint8, device="refdev").numel()
        print(json.dumps(seen))
    """, env={"ACCELENV_REFDEV_CAPACITY": str(12 << 20)}))
    assert out["capacity_from_env"] == 12 << 20
    assert out["forward"] == "refdev out of memory"
    assert out["backward"] == "OutOfMemoryError"
    assert out["num_ooms"] == 2 and out["retries"] == 2
    assert out["recovered"] == 2.0 * (1 << 20)
    assert out["bigger"] == 100 << 20


def test_autocast_runs_as_a_no_op(refdev_python: RunPython) -> None:
    out = result(refdev_python("""
        import json, torch, probes.refdev
        probes.refdev.install()
        a = torch.ones(4, 4, device="refdev")
        with torch.autocast("refdev", dtype=torch.bfloat16):
            y = a @ a
        print(json.dumps({"dtype": str(y.dtype), "value": y[0, 0].item()}))
    """))
    assert out == {"dtype": "torch.float32", "value": 4.0}


def test_second_install_same_faults_is_idempotent_other_faults_refused(refdev_python: RunPython) -> None:
    out = result(refdev_python("""
        import json, probes.refdev
        first = probes.refdev.install("leak")
        again = probes.refdev.install("leak")
        try:
            probes.refdev.install("")
            refused = None
        except RuntimeError as exc:
            refused = str(exc)
        print(json.dumps({"same": first is again, "refused": refused}))
    """))
    assert out["same"] is True
    assert "already installed in this process with faults 'leak'" in out["refused"]


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"ACCELENV_REFDEV_FAULTS": "explode:aten::mm"}, "unknown kind 'explode'"),
        ({"ACCELENV_REFDEV_FAULTS": "missing:aten::linear"}, "aten::linear has no refdev kernel of its own"),
        ({"ACCELENV_REFDEV_FAULTS": "crash:aten::no_such_op"}, "is not an operator in torch"),
        ({"ACCELENV_REFDEV_CAPACITY": "1GiB"}, "ACCELENV_REFDEV_CAPACITY must be a positive whole number"),
    ],
    ids=["unknown-kind", "composite-op", "unknown-op", "bad-capacity"],
)
def test_bad_configuration_is_a_clear_value_error_before_install(
    refdev_python: RunPython, env: dict[str, str], named: str
) -> None:
    out = result(refdev_python("""
        import json, torch, probes.refdev
        try:
            probes.refdev.install()
            error = None
        except ValueError as exc:
            error = str(exc)
        print(json.dumps({"error": error, "renamed": torch._C._get_privateuse1_backend_name()}))
    """, env=env))
    assert named in out["error"]
    assert out["renamed"] == "privateuseone"  # nothing changed: a corrected install can still follow
