"""The curated op list the ``ops`` group checks: a table, one row per op variant.

Each row: a name (the check id stem), the aten op it mainly exercises, the dtype kinds it applies to,
``build(torch, dtype, gen)`` making CPU inputs, ``fn(torch, *inputs)`` calling the op, and which inputs
get gradients (float dtypes only). Index tensors are always int64. ``ops.run_case`` does the rest:
device vs CPU reference, per-dtype tolerance, backward, unsupported/fallback classification.

Add an op by adding a row; no code branches per op.
"""

F = ("float",)
FI = ("float", "int")
ALL = ("float", "int", "bool")

# (atol, rtol) per dtype: |device - reference| <= atol + rtol * |reference|, elementwise. The defaults of
# torch.testing.assert_close (torch/testing/_comparison.py, _DTYPE_PRECISIONS: float16 rtol 1e-3, bfloat16 rtol
# 1.6e-2, float32 rtol 1.3e-6, atol 1e-5 each), not wider.
TOLERANCES = {
    "float32": (1e-5, 1.3e-6),
    "float16": (1e-5, 1e-3),
    "bfloat16": (1e-5, 1.6e-2),
    "int64": (0.0, 0.0),
    "bool": (0.0, 0.0),
}
# For the 16-bit floats also the output as a whole: ||device - reference|| <= eps * ||reference||, eps the
# dtype's machine epsilon (torch.finfo). assert_close's bfloat16 rtol is two of its ulps, so a kernel 1 % off
# passes elementwise; a correctly rounded result is within one eps normwise (its rounding errors are at most
# half an ulp each), a biased one is not.
NORMWISE = ("float16", "bfloat16")
KIND_OF_DTYPE = {"float32": "float", "float16": "float", "bfloat16": "float", "int64": "int", "bool": "bool"}


class OpCase(object):
    __slots__ = ("name", "aten", "kinds", "build", "fn", "grad")

    def __init__(self, name, aten, kinds, build, fn, grad=()):
        self.name = name
        self.aten = aten
        self.kinds = kinds
        self.build = build
        self.fn = fn
        self.grad = grad


def rand(torch, gen, shape, dtype):
    """Deterministic CPU input of ``dtype``: normal floats, small ints, or random bools."""
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=gen).bool()
    return torch.randint(-20, 20, shape, generator=gen).to(dtype)


def index(torch, gen, shape, high):
    return torch.randint(0, high, shape, generator=gen)


def _one(shape):
    return lambda torch, dt, g: (rand(torch, g, shape, dt),)


def _two(shape_a, shape_b=None):
    return lambda torch, dt, g: (rand(torch, g, shape_a, dt), rand(torch, g, shape_b or shape_a, dt))


def _out(torch, like):
    return torch.empty(0, dtype=like.dtype, device=like.device)


def _fn(torch_name, **kwargs):
    """Call ``torch.<name>(*inputs, **kwargs)``."""
    return lambda torch, *xs: getattr(torch, torch_name)(*xs, **kwargs)


def _nnf(name, **kwargs):
    """Call ``torch.nn.functional.<name>(*inputs, **kwargs)``."""
    return lambda torch, *xs: getattr(torch.nn.functional, name)(*xs, **kwargs)


def _sorted_pair(pair, x):
    values, indices = pair
    # Ties may order indices differently on a device; gathering through them is order-independent.
    return values, x.gather(-1, indices)


OP_CASES = (
    # pointwise add and its variants: Tensor, Scalar, out=, in-place, broadcasting, type promotion
    OpCase("add.Tensor", "aten::add.Tensor", FI, _two((8, 8)), _fn("add"), grad=(0, 1)),
    OpCase("add.Scalar", "aten::add.Tensor", FI, _one((8, 8)), lambda torch, a: a + 3, grad=(0,)),
    OpCase("add.out", "aten::add.out", FI, _two((8, 8)), lambda torch, a, b: torch.add(a, b, out=_out(torch, a))),
    OpCase("add_.inplace", "aten::add_.Tensor", FI, _two((8, 8)), lambda torch, a, b: a.clone().add_(b)),
    OpCase("add.broadcast", "aten::add.Tensor", FI, _two((4, 1, 3), (5, 3)), _fn("add"), grad=(0, 1)),
    OpCase("add.promotion", "aten::add.Tensor", ALL,
           lambda torch, dt, g: (rand(torch, g, (6, 5), dt), rand(torch, g, (6, 5), torch.float32)),
           _fn("add")),
    OpCase("mul.Tensor", "aten::mul.Tensor", ALL, _two((8, 8)), _fn("mul")),
    OpCase("div.Tensor", "aten::div.Tensor", F,
           lambda torch, dt, g: (rand(torch, g, (8, 8), dt), (rand(torch, g, (8, 8), dt).abs() + 0.5).to(dt)),
           _fn("div"), grad=(0, 1)),
    # matmul family
    OpCase("mm", "aten::mm", F, _two((8, 16), (16, 4)), _fn("mm"), grad=(0, 1)),
    OpCase("mm.out", "aten::mm.out", F, _two((8, 16), (16, 4)),
           lambda torch, a, b: torch.mm(a, b, out=_out(torch, a))),
    OpCase("bmm", "aten::bmm", F, _two((3, 8, 16), (3, 16, 4)), _fn("bmm"), grad=(0, 1)),
    OpCase("addmm", "aten::addmm", F,
           lambda torch, dt, g: (rand(torch, g, (4,), dt), rand(torch, g, (8, 16), dt), rand(torch, g, (16, 4), dt)),
           _fn("addmm"), grad=(0, 1, 2)),
    OpCase("matmul.broadcast", "aten::matmul", F, _two((2, 3, 8, 16), (16, 4)), _fn("matmul"), grad=(0, 1)),
    OpCase("linear", "aten::linear", F,
           lambda torch, dt, g: (rand(torch, g, (5, 16), dt), rand(torch, g, (4, 16), dt), rand(torch, g, (4,), dt)),
           _nnf("linear"), grad=(0, 1, 2)),
    # convolution and pooling, forward and backward
    OpCase("conv2d", "aten::convolution", F,
           lambda torch, dt, g: (rand(torch, g, (2, 3, 8, 8), dt), rand(torch, g, (4, 3, 3, 3), dt),
                                 rand(torch, g, (4,), dt)),
           _nnf("conv2d", padding=1), grad=(0, 1, 2)),
    OpCase("adaptive_avg_pool2d", "aten::_adaptive_avg_pool2d", F, _one((2, 3, 7, 7)),
           _nnf("adaptive_avg_pool2d", output_size=(2, 2)), grad=(0,)),
    # normalisation
    OpCase("batch_norm", "aten::native_batch_norm", F,
           lambda torch, dt, g: (rand(torch, g, (4, 3, 5, 5), dt), rand(torch, g, (3,), dt), rand(torch, g, (3,), dt)),
           lambda torch, x, w, b: torch.nn.functional.batch_norm(x, None, None, w, b, training=True), grad=(0, 1, 2)),
    OpCase("layer_norm", "aten::native_layer_norm", F,
           lambda torch, dt, g: (rand(torch, g, (4, 6, 8), dt), rand(torch, g, (8,), dt), rand(torch, g, (8,), dt)),
           lambda torch, x, w, b: torch.nn.functional.layer_norm(x, (8,), w, b), grad=(0, 1, 2)),
    OpCase("softmax", "aten::_softmax", F, _one((6, 10)), _nnf("softmax", dim=-1), grad=(0,)),
    OpCase("log_softmax", "aten::_log_softmax", F, _one((6, 10)), _nnf("log_softmax", dim=-1), grad=(0,)),
    # embedding and indexing
    OpCase("embedding", "aten::embedding", F,
           lambda torch, dt, g: (index(torch, g, (4, 5), 10), rand(torch, g, (10, 6), dt)),
           _nnf("embedding"), grad=(1,)),
    OpCase("index_select", "aten::index_select", ALL,
           lambda torch, dt, g: (rand(torch, g, (7, 5), dt), index(torch, g, (9,), 7)),
           lambda torch, x, i: torch.index_select(x, 0, i)),
    OpCase("gather", "aten::gather", ALL,
           lambda torch, dt, g: (rand(torch, g, (6, 5), dt), index(torch, g, (6, 3), 5)),
           lambda torch, x, i: torch.gather(x, 1, i)),
    OpCase("scatter.src", "aten::scatter.src", ALL,
           lambda torch, dt, g: (rand(torch, g, (6, 5), dt), torch.argsort(torch.rand(6, 5, generator=g), dim=1)[:, :3],
                                 rand(torch, g, (6, 3), dt)),
           lambda torch, x, i, s: x.scatter(1, i, s)),
    OpCase("cat", "aten::cat", ALL, _two((3, 4), (2, 4)), lambda torch, a, b: torch.cat([a, b], 0)),
    OpCase("stack", "aten::stack", ALL, _two((3, 4)), lambda torch, a, b: torch.stack([a, b], 1)),
    # reductions over dims
    OpCase("sum.dim", "aten::sum.dim_IntList", ALL, _one((4, 5, 6)), lambda torch, x: x.sum(dim=(0, 2))),
    OpCase("mean.dim", "aten::mean.dim", F, _one((4, 5, 6)), lambda torch, x: x.mean(dim=1), grad=(0,)),
    OpCase("amax", "aten::amax", FI, _one((4, 5, 6)), lambda torch, x: torch.amax(x, dim=-1)),
    OpCase("argmax", "aten::argmax", F, _one((4, 50)), lambda torch, x: torch.argmax(x, dim=-1)),
    # selection, scans, sorting
    OpCase("where.self", "aten::where.self", ALL,
           lambda torch, dt, g: (torch.rand(5, 6, generator=g) > 0.5, rand(torch, g, (5, 6), dt),
                                 rand(torch, g, (5, 6), dt)),
           _fn("where")),
    OpCase("cumsum", "aten::cumsum", FI, _one((5, 8)), lambda torch, x: torch.cumsum(x, dim=1), grad=(0,)),
    OpCase("sort", "aten::sort", FI, _one((4, 16)),
           lambda torch, x: _sorted_pair(torch.sort(x, dim=-1), x)),
    OpCase("topk", "aten::topk", FI, _one((4, 16)),
           lambda torch, x: _sorted_pair(torch.topk(x, 5, dim=-1), x)),
)


class RandomCase(object):
    """A seeded generator: same seed twice must give the same values; the values must look right."""

    __slots__ = ("name", "aten", "dtypes", "make", "sane")

    def __init__(self, name, aten, dtypes, make, sane):
        self.name = name
        self.aten = aten
        self.dtypes = dtypes
        self.make = make
        self.sane = sane


RANDOM_CASES = (
    RandomCase("rand", "aten::uniform_", ("float32", "float16", "bfloat16"),
               lambda torch, dev, dt: torch.rand(4096, device=dev, dtype=dt),
               lambda torch, x: bool(((x >= 0) & (x <= 1)).all()) and 0.45 <= float(x.double().mean()) <= 0.55),
    RandomCase("randn", "aten::normal_", ("float32", "float16", "bfloat16"),
               lambda torch, dev, dt: torch.randn(4096, device=dev, dtype=dt),
               lambda torch, x: abs(float(x.double().mean())) < 0.1 and 0.9 < float(x.double().std()) < 1.1),
    RandomCase("randint", "aten::random_.from", ("int64",),
               lambda torch, dev, dt: torch.randint(0, 10, (4096,), device=dev, dtype=dt),
               lambda torch, x: bool(((x >= 0) & (x < 10)).all()) and 4.0 < float(x.double().mean()) < 5.0),
    RandomCase("dropout", "aten::native_dropout", ("float32", "float16", "bfloat16"),
               lambda torch, dev, dt: torch.nn.functional.dropout(torch.ones(4096, device=dev, dtype=dt), 0.5),
               lambda torch, x: 0.45 <= float((x == 0).double().mean()) <= 0.55
               and bool(((x == 0) | (x == 2)).all())),
    RandomCase("randperm", "aten::randperm", ("int64",),
               lambda torch, dev, dt: torch.randperm(1000, device=dev, dtype=dt),
               lambda torch, x: bool((torch.sort(x.cpu())[0] == torch.arange(1000)).all())),
)
