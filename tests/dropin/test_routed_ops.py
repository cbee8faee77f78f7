"""baddbmm, addbmm, mv, addmv (public and routed by enable()) against torch: broadcasting, strides,
alpha/beta, out=, bad input; and the reliability fixes of the drop-in layer: out= overlapping the
accumulated input, None for a tensor, a 1-D weight with a bias, concurrent calls."""

from __future__ import annotations

import sys
import threading
from pathlib import Path

import pytest
import torch

import tritonblas
from tritonblas import dispatch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/_check.py
from _check import outcome  # noqa: E402  (torch's result or error against ours)

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py


def _ref(fn, *args, **kw):
    """torch's result in float64 from the same inputs, cast back."""
    dt = next(a for a in args if isinstance(a, torch.Tensor)).dtype
    up = [a.double() if isinstance(a, torch.Tensor) else a for a in args]
    return fn(*up, **kw).to(dt)


def _close(x, y, k):
    torch.testing.assert_close(x, y, atol=5e-5 * max(k, 1), rtol=1e-4)


@pytest.mark.parametrize("c_shape", [(4, 9, 7), (9, 7), (1, 7), (7,), ()])
@pytest.mark.parametrize("alpha,beta", [(1, 1), (0.5, 2.0), (2.0, 0.0)])
def test_baddbmm(device, c_shape, alpha, beta):
    a, b = torch.randn(4, 9, 11, device=device), torch.randn(4, 11, 7, device=device)
    c = torch.randn(c_shape, device=device)
    got = tritonblas.baddbmm(c, a, b, alpha=alpha, beta=beta)
    _close(got, _ref(torch.baddbmm, c, a, b, alpha=alpha, beta=beta), 11)
    assert got.shape == (4, 9, 7)


def test_baddbmm_beta0_ignores_nan_and_strided_operands(device):
    a = torch.randn(3, 11, 9, device=device).transpose(1, 2)   # (3, 9, 11), transposed
    b = torch.randn(7, 11, 3, device=device).permute(2, 1, 0)   # (3, 11, 7), batch not outermost
    c = torch.full((3, 9, 7), float("nan"), device=device)
    got = tritonblas.baddbmm(c, a, b, beta=0)
    assert not got.isnan().any()
    _close(got, _ref(torch.bmm, a, b), 11)


def test_addbmm(device):
    a, b = torch.randn(5, 9, 6, device=device), torch.randn(5, 6, 8, device=device)
    c = torch.randn(8, device=device)
    _close(tritonblas.addbmm(c, a, b, alpha=0.5, beta=1.5), _ref(torch.addbmm, c, a, b, alpha=0.5, beta=1.5), 30)
    out = torch.empty(9, 8, device=device)
    r = tritonblas.addbmm(torch.randn(9, 8, device=device), a, b, out=out)
    assert r is out


def test_mv_addmv(device):
    m = torch.randn(13, 10, device=device)
    v = torch.randn(20, device=device)[::2]  # strided vector
    _close(tritonblas.mv(m, v), _ref(torch.mv, m, v), 10)
    _close(tritonblas.mv(m.t().contiguous().t(), v), _ref(torch.mv, m, v), 10)
    for c in (torch.randn(13, device=device), torch.randn(1, device=device), torch.tensor(0.5, device=device)):
        _close(tritonblas.addmv(c, m, v, alpha=2, beta=0.5), _ref(torch.addmv, c, m, v, alpha=2, beta=0.5), 10)
    out = torch.empty(13, device=device)
    assert tritonblas.mv(m, v, out=out) is out
    _close(out, _ref(torch.mv, m, v), 10)


@pytest.mark.parametrize("call", [
    lambda d: tritonblas.baddbmm(torch.randn(2, 3, 4, device=d), torch.randn(2, 3, 5, device=d),
                                 torch.randn(3, 5, 4, device=d)),
    lambda d: tritonblas.baddbmm(torch.randn(2, 3, 4, device=d), torch.randn(3, 5, device=d),
                                 torch.randn(5, 4, device=d)),
    lambda d: tritonblas.baddbmm(torch.randn(5, 3, 4, device=d), torch.randn(2, 3, 5, device=d),
                                 torch.randn(2, 5, 4, device=d)),
    lambda d: tritonblas.addbmm(torch.randn(3, 4, device=d), torch.randn(2, 3, 5, device=d),
                                torch.randn(2, 6, 4, device=d)),
    lambda d: tritonblas.mv(torch.randn(3, 4, device=d), torch.randn(5, device=d)),
    lambda d: tritonblas.mv(torch.randn(3, 4, device=d), torch.randn(4, 1, device=d)),
    lambda d: tritonblas.addmv(torch.randn(5, device=d), torch.randn(3, 4, device=d), torch.randn(4, device=d)),
    lambda d: tritonblas.mv(torch.randn(3, 4, device=d), torch.randn(4, device=d, dtype=torch.float16)),
])
def test_bad_input_raises_like_torch(device, call):
    with pytest.raises(RuntimeError):
        call(device)


@pytest.mark.parametrize("fn,args", [
    (torch.baddbmm, lambda d: (torch.randn(2, 3, 4, device=d), torch.randn(2, 3, 5, device=d),
                               torch.randn(2, 5, 4, device=d))),
    (torch.addbmm, lambda d: (torch.randn(3, 4, device=d), torch.randn(2, 3, 5, device=d),
                              torch.randn(2, 5, 4, device=d))),
    (torch.mv, lambda d: (torch.randn(3, 5, device=d), torch.randn(5, device=d))),
    (torch.addmv, lambda d: (torch.randn(3, device=d), torch.randn(3, 5, device=d), torch.randn(5, device=d))),
])
def test_enable_routes_the_new_ops(device, fn, args):
    xs = args(device)
    ref = _ref(fn, *xs)
    dispatch.reset_stats()
    with tritonblas.enable():
        got = getattr(torch, fn.__name__)(*xs)  # looked up inside the block, as model code does
        method = getattr(xs[0], fn.__name__)(*xs[1:])
    assert dispatch.stats()["routed"] == 2 and dispatch.stats()["launches"] == 2
    _close(got, ref, 5)
    _close(method, ref, 5)


def test_enable_passes_bad_calls_to_torch(device):
    """Shapes torch rejects are torch's to reject, with torch's own message."""
    with tritonblas.enable():
        with pytest.raises(RuntimeError) as ours:
            torch.mv(torch.randn(3, 4, device=device), torch.randn(5, device=device))
    with pytest.raises(RuntimeError) as theirs:
        torch.mv(torch.randn(3, 4, device=device), torch.randn(5, device=device))
    assert str(ours.value) == str(theirs.value)


# --- reliability (issue 17, items 1, 4, 5, 8) ---------------------------------------------------
def test_addmm_out_partly_overlapping_c_raises(device):
    """A wrong answer before: out = c.t() or one row over c in the same storage ran and returned garbage."""
    a, b = torch.randn(48, 40, device=device), torch.randn(40, 48, device=device)
    c = torch.randn(48, 48, device=device)
    with pytest.raises(RuntimeError, match="single memory location"):
        tritonblas.addmm(c, a, b, out=c.t())
    base = torch.randn(49 * 48, device=device)
    c2, out2 = base[:48 * 48].view(48, 48), base[48:].view(48, 48)
    with pytest.raises(RuntimeError, match="single memory location"):
        tritonblas.addmm(c2, a, b, out=out2)
    with pytest.raises(RuntimeError, match="single memory location"):
        tritonblas.baddbmm(c2[None], a[None], b[None], out=out2[None])


def test_addmm_out_is_c_in_place(device):
    a, b = torch.randn(20, 12, device=device), torch.randn(12, 16, device=device)
    c = torch.randn(20, 16, device=device)
    want = _ref(torch.addmm, c, a, b, alpha=2.0, beta=0.5)
    r = tritonblas.addmm(c, a, b, alpha=2.0, beta=0.5, out=c)
    assert r is c
    _close(c, want, 12)


@pytest.mark.parametrize("strided", [False, True])
def test_addmv_out_is_c_in_place(device, strided):
    """addmv(c, a, v, out=c) is torch's in-place form; c's (N, 1) kernel view made it a 'partial
    overlap' RuntimeError before. A c one element over in the same storage still raises."""
    a, v = torch.randn(9, 13, device=device), torch.randn(13, device=device)
    base = torch.randn(20, device=device)
    c = base[::2][:9] if strided else base[:9]
    want = _ref(torch.addmv, c.clone(), a, v, alpha=2.0, beta=0.5)
    r = tritonblas.addmv(c, a, v, alpha=2.0, beta=0.5, out=c)
    assert r is c
    _close(c, want, 13)
    with tritonblas.enable():
        c2 = base[:9].clone()
        want2 = _ref(torch.addmv, c2.clone(), a, v, beta=-1.0)
        torch.addmv(c2, a, v, beta=-1.0, out=c2)
    _close(c2, want2, 13)
    with pytest.raises(RuntimeError, match="single memory location"):
        tritonblas.addmv(base[:9], a, v, out=base[1:10])


def test_dispatcher_computes_correctly_when_out_partly_overlaps_c(device):
    a, b = torch.randn(24, 16, device=device), torch.randn(16, 24, device=device)
    base = torch.randn(25 * 24, device=device)
    c, out = base[:24 * 24].view(24, 24), base[24:].view(24, 24)
    want = _ref(torch.addmm, c.clone(), a, b)
    dispatch.gemm(a, b, out, c=c, alpha=1.0, beta=1.0)
    _close(out, want, 16)


@pytest.mark.parametrize("call", [
    lambda t: tritonblas.matmul(None, t), lambda t: tritonblas.matmul(t, None),
    lambda t: tritonblas.bmm(t[None], None), lambda t: tritonblas.addmm(None, t, t),
    lambda t: tritonblas.linear(None, t), lambda t: tritonblas.explain(None, t),
    lambda t: tritonblas.mv(None, t[0]), lambda t: tritonblas.baddbmm(None, t[None], t[None]),
])
def test_none_for_a_tensor_is_a_type_error(device, call):
    t = torch.randn(4, 4, device=device)
    with pytest.raises(TypeError, match="must be Tensor, not NoneType"):
        call(t)


def test_linear_1d_weight_with_bias_raises_like_f_linear(device):
    x, w, bias = torch.randn(3, 5, device=device), torch.randn(5, device=device), torch.randn((), device=device)
    with pytest.raises(RuntimeError):
        torch.nn.functional.linear(x, w, bias)
    with pytest.raises(RuntimeError, match="mat2 must be a matrix"):
        tritonblas.linear(x, w, bias)
    with tritonblas.enable():  # routed: torch's own error
        with pytest.raises(RuntimeError):
            torch.nn.functional.linear(x, w, bias)
    _close(tritonblas.linear(x, w), _ref(torch.nn.functional.linear, x, w), 5)


def test_concurrent_calls_are_correct(device):
    """Three threads calling matmul at once (the interpreter serialises its launches)."""
    errors, wrong = [], []

    def work(seed):
        g = torch.Generator().manual_seed(seed)
        for i in range(6):
            a = torch.randn(33 + i, 40, generator=g).to(device)
            b = torch.randn(40, 24 + 2 * i, generator=g).to(device)
            try:
                r = tritonblas.matmul(a, b)
            except Exception as e:  # noqa: BLE001 - every failure is recorded and fails the test
                errors.append(repr(e))
                continue
            if not torch.allclose(r, _ref(torch.matmul, a, b), atol=2e-3, rtol=1e-4):
                wrong.append((seed, i))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and not wrong, (errors[:3], wrong)


def test_alpha_beta_numbers_torch_takes_still_run(device):
    import numpy as np

    c, a, b = torch.randn(3, 5, device=device), torch.randn(3, 4, device=device), torch.randn(4, 5, device=device)
    want = torch.addmm(c.double(), a.double(), b.double(), beta=2.0, alpha=-0.5).float()
    for beta, alpha in ((torch.tensor(2.0), -0.5), (np.float32(2.0), np.float64(-0.5)), (2, torch.tensor(-0.5))):
        torch.testing.assert_close(tritonblas.addmm(c, a, b, beta=beta, alpha=alpha), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["no_grad", "autograd", "eager_min_gflop"])
@pytest.mark.parametrize("value", ["0", "1"], ids=["rule_off", "rule_on"])
@pytest.mark.parametrize("layout", [torch.strided, torch.jagged], ids=["strided", "jagged"])
def test_nested_tensors_get_torchs_result_or_torchs_error(device, monkeypatch, layout, value, mode):
    """A nested tensor through every routed op under enable(): torch's result (bmm, matmul of two nested tensors,
    F.linear, matmul of a jagged one) or torch's own error (mm, addmm, mv, matmul of a strided nested tensor and a
    dense one), with the vendor rule off and on. Before session 40 the routes and bmm's hot path read the sizes of
    a strided-layout nested tensor, which it does not have: "NestedTensorImpl doesn't support sizes" instead of
    torch's result; the fronts of session 40 did the same for addmm. Under autograd (the first operand a leaf that
    requires grad) and with the TRITONBLAS_EAGER_MIN_GFLOP experiment set, matmul's hot path read them too."""
    import contextlib

    import torch.nn.functional as F

    monkeypatch.setenv("TRITONBLAS_VENDOR_ALIGNED", value)
    if mode == "eager_min_gflop":
        monkeypatch.setenv("TRITONBLAS_EAGER_MIN_GFLOP", "20")
    g = torch.Generator().manual_seed(3)

    def nested(*shapes, grad=False):
        return torch.nested.nested_tensor([torch.randn(*s, generator=g) for s in shapes], layout=layout,
                                          device=device, requires_grad=grad)

    n, n2 = nested((3, 8), (5, 8), grad=mode == "autograd"), nested((8, 16), (8, 16))
    w, lin = torch.randn(8, 16, generator=g).to(device), torch.nn.Linear(8, 16).to(device)
    cases = {"matmul": lambda: torch.matmul(n, w), "@": lambda: n @ w, "linear": lambda: F.linear(n, lin.weight, lin.bias),
             "linear_no_bias": lambda: F.linear(n, lin.weight), "bmm": lambda: torch.bmm(n, n2), ".bmm": lambda: n.bmm(n2),
             "matmul_nested": lambda: torch.matmul(n, n2), "mm": lambda: torch.mm(n, w),
             "addmm": lambda: torch.addmm(torch.randn(16, device=device), n, w),
             "mv": lambda: torch.mv(n, torch.randn(8, device=device))}
    computed = 0
    for name, f in cases.items():
        quiet = contextlib.nullcontext if mode == "autograd" else torch.no_grad
        with quiet():
            kind, ref = outcome(f)
        with quiet(), tritonblas.enable():
            got_kind, got = outcome(f)
        assert got_kind == kind, (name, ref, got)
        if kind == "error":
            assert got == ref, (name, ref, got)
        else:
            assert isinstance(got, torch.Tensor) and got.is_nested, (name, got)
            for r, o in zip(ref.unbind(), got.unbind()):
                torch.testing.assert_close(o.detach(), r.detach())
            computed += 1
    assert computed >= 3  # torch computes some of these (the test would otherwise compare errors only)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("op", ["addmm", "baddbmm", "addbmm", "addmv"])
def test_alpha_or_beta_beyond_the_float_range_gets_torchs_result_or_error(device, op, dtype):
    """An alpha or beta that is finite but beyond what torch converts it to (float; on some paths the operands'
    type) under enable(): torch's error ("value cannot be converted ... without overflow") or torch's result,
    never ours computed with an inf scale (a helper's hunt, session 40: ±inf where torch raised)."""
    g = torch.Generator().manual_seed(11)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(device=device, dtype=dtype)

    args = {"addmm": (r(5, 3), r(5, 7), r(7, 3)), "baddbmm": (r(2, 5, 3), r(2, 5, 7), r(2, 7, 3)),
            "addbmm": (r(5, 3), r(2, 5, 7), r(2, 7, 3)), "addmv": (r(5), r(5, 7), r(7))}[op]
    def fn(*a, **k):  # (looked up per call: under enable() torch's attribute is the routing wrapper)
        return getattr(torch, op)(*a, **k)

    routed = 0
    for kw in ({"alpha": 1e39}, {"beta": -1e300}, {"alpha": torch.tensor(1e39, dtype=torch.float64)},
               {"alpha": 7e4}, {"alpha": 2.0, "beta": 0.5}):
        kind, ref = outcome(lambda: fn(*args, **kw))
        with torch.no_grad(), tritonblas.enable():
            dispatch.reset_stats()
            got_kind, got = outcome(lambda: fn(*args, **kw))
            routed += dispatch.stats()["routed"]
        assert got_kind == kind, (op, kw, ref, got)
        if kind == "error":
            assert got == ref, (op, kw, ref, got)
        else:
            assert isinstance(got, torch.Tensor) and torch.isfinite(got).all() == torch.isfinite(ref).all(), (op, kw)
            torch.testing.assert_close(got.float(), ref.float(), rtol=2e-2, atol=2e-2 * float(ref.abs().max()))
    assert routed >= 1  # the in-range scales reach our kernels (else this compares torch with torch)


def test_the_public_ops_raise_torchs_overflow_error_for_alpha_beyond_float(device):
    """tritonblas.addmm called by name with an alpha beyond the float range raises torch's RuntimeError, naming
    the argument (it computed with an inf scale)."""
    a, b, c = torch.randn(5, 7, device=device), torch.randn(7, 3, device=device), torch.randn(5, 3, device=device)
    with pytest.raises(RuntimeError, match="without overflow: alpha"):
        tritonblas.addmm(c, a, b, alpha=1e39)
    with pytest.raises(RuntimeError, match="without overflow: beta"):
        tritonblas.addmm(c, a, b, beta=-1e300)
