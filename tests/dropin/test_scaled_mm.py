"""``tritonblas.scaled_mm`` (fp8 with torch._scaled_mm's semantics) and its routing by ``enable()``.

Results are checked against a float64 product of the same fp8 values under RELIABILITY.md §4.2's
bound and against ``torch._scaled_mm`` itself; every error case is raised with torch's exception
type, and where torch (on this device) rejects the same call, torch is checked to reject it too.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import tritonblas
from tritonblas import dispatch
from _check import assert_gemm_close, operand, reference  # tests/_check.py: the §4.2 comparator

pytestmark = pytest.mark.usefixtures("cpu_profile")  # tests/dropin/conftest.py

E4M3, E5M2 = torch.float8_e4m3fn, torch.float8_e5m2


def _scales(recipe: str, m: int, n: int, device: str, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    if recipe == "tensor":
        return (torch.rand((), generator=g) + 0.25).to(device), (torch.rand((1,), generator=g) + 0.25).to(device)
    return (torch.rand(m, 1, generator=g) + 0.5).to(device), (torch.rand(1, n, generator=g) + 0.5).to(device)


def _fp8(rows, cols, dtype, transposed, device, seed):
    return operand(rows, cols, dtype, transposed, device, scale=2.0, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("out_dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape,dtypes,b_colmajor", [
    ((40, 64, 48), (E4M3, E4M3), True),     # torch's CUDA layout: a row-major, b column-major
    ((33, 70, 31), (E4M3, E4M3), False),    # ragged, K and N not multiples of 16, b row-major
    ((17, 48, 32), (E5M2, E4M3), True),     # mixed formats
])
def test_matches_float64_and_torch(recipe, out_dtype, shape, dtypes, b_colmajor, device):
    m, k, n = shape
    a = _fp8(m, k, dtypes[0], False, device, 1)
    b = _fp8(k, n, dtypes[1], b_colmajor, device, 2)
    sa, sb = _scales(recipe, m, n, device)
    bias = torch.randn(n, generator=torch.Generator().manual_seed(3)).to(device, out_dtype)
    for with_bias in (False, True):
        bb = bias if with_bias else None
        out = tritonblas.scaled_mm(a, b, sa, sb, bias=bb, out_dtype=out_dtype)
        assert out.dtype == out_dtype and tuple(out.shape) == (m, n)
        ref, mag, _ = reference(a, b, bias=bb, scale_a=sa, scale_b=sb)
        assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"scaled_mm {recipe} {out_dtype} bias={with_bias}")
        if device == "cpu" or (b_colmajor and k % 16 == 0 and n % 16 == 0 and dtypes != (E5M2, E5M2)
                               and (recipe == "tensor" or out_dtype == torch.bfloat16)
                               and (bb is None or out_dtype != torch.float32)):
            try:
                theirs = torch._scaled_mm(a, b, sa, sb, bias=bb, out_dtype=out_dtype)
            except RuntimeError:
                assert device == "cuda"  # a combination torch's CUDA kernel does not take; ours is checked above
            else:
                assert_gemm_close(theirs, ref, mag, k, fp8_mma=True, what="torch._scaled_mm (the bound is fair)")


def test_fast_accum_and_zero_k(device):
    a, b = _fp8(24, 64, E4M3, False, device, 4), _fp8(64, 32, E4M3, True, device, 5)
    sa, sb = _scales("tensor", 24, 32, device)
    out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.float32, use_fast_accum=True)
    ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
    assert_gemm_close(out, ref, mag, 64, fp8_mma=True, what="fast accumulation")
    bias = torch.randn(32, device=device).to(torch.bfloat16)
    z = tritonblas.scaled_mm(a[:, :0], b[:0], sa, sb, bias=bias, out_dtype=torch.bfloat16)
    assert torch.equal(z, bias.expand(24, 32))



def test_a_row_scale_whose_size_one_dim_is_strided_is_computed(device):
    """A row-wise scale_a of shape (M, 1) with stride(1) != 1 (``torch.ones(2, M)[:1].t()``: a size-1 dim, whose stride
    addresses nothing) is a valid scale: ours computes what the contiguous scale gives. torch disagrees with itself
    here (2.13's CPU check raises "expected scale_a.stride(1) to be 1", 2.11's CUDA kernel computes it: the GPU suite
    at f8fbb57), so we follow the math, not one torch's check."""
    a, b = _fp8(24, 64, E4M3, False, device, 8), _fp8(64, 32, E4M3, True, device, 9)
    sa = (torch.rand(2, 24, device=device) + 0.5)[:1].t()
    sb = (torch.rand(32, device=device) + 0.5).reshape(1, 32)
    assert sa.shape == (24, 1) and sa.stride(1) != 1
    out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
    ref, mag, _ = reference(a, b, scale_a=sa.contiguous(), scale_b=sb)
    assert_gemm_close(out, ref, mag, 64, fp8_mma=True, what="strided size-1 scale")

def _bad_cases(device):
    a, b = _fp8(32, 64, E4M3, False, device, 6), _fp8(64, 48, E4M3, True, device, 7)
    one = torch.tensor(1.0, device=device)
    bf = torch.bfloat16
    return {
        # name: (args, kwargs, exception, message fragment, where torch also rejects it: True on every device,
        # "cuda" on CUDA only, False nowhere)
        "a_3d": ((a[None], b, one, one), {"out_dtype": bf}, RuntimeError, "mat1 must be a matrix", True),
        "b_1d": ((a, b[:, 0], one, one), {"out_dtype": bf}, RuntimeError, "mat2 must be a matrix", False),
        "bf16_inputs": ((a.to(bf), b.to(bf), one, one), {"out_dtype": bf}, ValueError, "a must be float8", True),
        "inner_dims": ((a, b[:32], one, one), {"out_dtype": bf}, RuntimeError, "cannot be multiplied", True),
        # torch's CUDA check wants fp32 scales; its CPU path checks on some hosts only (2.13: raised on earlier
        # sessions' CI hosts, computes on an Intel Xeon one, 2026-12-02)
        "fp16_scale": ((a, b, one.half(), one), {"out_dtype": bf}, ValueError, "Invalid scaling configuration",
                       "cuda"),
        "row_scales_1d": ((a, b, torch.ones(32, device=device), torch.ones(48, device=device)), {"out_dtype": bf},
                          ValueError, "Invalid scaling configuration", True),
        "row_scale_wrong_m": ((a, b, torch.ones(31, 1, device=device), torch.ones(1, 48, device=device)),
                              {"out_dtype": bf}, ValueError, "Invalid scaling configuration", True),
        "tensor_row_mixed": ((a, b, one, torch.ones(1, 48, device=device)), {"out_dtype": bf},
                             ValueError, "Invalid scaling configuration", True),
        "bias_size": ((a, b, one, one), {"out_dtype": bf, "bias": torch.ones(47, device=device, dtype=bf)},
                      RuntimeError, "Bias must be size 48", True),
        "scale_not_tensor": ((a, b, 1.0, one), {"out_dtype": bf}, TypeError, "'scale_a' must be Tensor", True),
        "out_dtype_int": ((a, b, one, one), {"out_dtype": torch.int32}, ValueError, "out_dtype must be", False),
        "fp8_output": ((a, b, one, one), {}, NotImplementedError, "out_dtype=None", False),
        "block_scales": ((a, b, torch.ones(32, 1, device=device), torch.ones(1, 1, device=device)), {"out_dtype": bf},
                         NotImplementedError, "block-wise", False),
    }


@pytest.mark.parametrize("case", list(_bad_cases("cpu")))
def test_bad_input_raises_what_torch_raises(case, device):
    args, kwargs, exc, fragment, torch_rejects = _bad_cases(device)[case]
    with pytest.raises(exc, match=fragment) as ours:
        tritonblas.scaled_mm(*args, **kwargs)
    if torch_rejects is True or (torch_rejects == "cuda" and torch.device(device).type == "cuda"):
        # ours is an instance of the class torch raises here (it varies: 2.11's CUDA kernel says
        # RuntimeError, 2.13's CPU check ValueError)
        with pytest.raises(Exception) as theirs:
            torch._scaled_mm(*args, **kwargs)
        assert isinstance(ours.value, theirs.type), (type(ours.value), theirs.type, str(theirs.value)[:200])


def test_block_scales_are_a_valid_torch_recipe_we_do_not_run(device):
    """(M, ceil(K/128)) x (ceil(K/128), N) is torch's 1x128 block recipe: NotImplementedError, not 'invalid'."""
    a, b = _fp8(32, 256, E4M3, False, device, 8), _fp8(256, 48, E4M3, True, device, 9)
    with pytest.raises(NotImplementedError, match="block-wise"):
        tritonblas.scaled_mm(a, b, torch.ones(32, 2, device=device), torch.ones(2, 48, device=device),
                             out_dtype=torch.bfloat16)


def test_enable_routes_what_it_runs_and_passes_the_rest_to_torch(device):
    a, b = _fp8(32, 64, E4M3, False, device, 10), _fp8(64, 48, E4M3, True, device, 11)
    sa, sb = _scales("row", 32, 48, device)
    one = torch.tensor(1.0, device=device)
    with tritonblas.enable():
        dispatch.reset_stats()
        got = torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
        assert dispatch.stats()["routed"] == 1 and dispatch.stats()["launches"] == 1
        torch.testing.assert_close(got, tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16), rtol=0, atol=0)
        dispatch.reset_stats()
        inside = [_outcome(lambda: torch._scaled_mm(a, b, one, one)),   # fp8 output: torch's
                  _outcome(lambda: torch._scaled_mm(a, b, one, one, scale_result=one, out_dtype=torch.bfloat16)),
                  _outcome(lambda: torch._scaled_mm(a, b, one.half(), one, out_dtype=torch.bfloat16))]  # torch's error
        st = dispatch.stats()
        assert st["routed"] == 0 and st["intercepted"] == 3 and st["launches"] == 0, st
    outside = [_outcome(lambda: torch._scaled_mm(a, b, one, one)),
               _outcome(lambda: torch._scaled_mm(a, b, one, one, scale_result=one, out_dtype=torch.bfloat16)),
               _outcome(lambda: torch._scaled_mm(a, b, one.half(), one, out_dtype=torch.bfloat16))]
    for (r_in, e_in), (r_out, e_out) in zip(inside, outside):
        assert e_in == e_out  # the same error (type), or none
        assert (r_in is None) == (r_out is None) and (r_in is None or torch.equal(r_in.float(), r_out.float()))
    if torch.device(device).type == "cuda":
        assert outside[2][1] is not None  # an fp16 scale is torch's CUDA error (its CPU path varies by host)


def _outcome(fn):
    """(result, None) or (None, the exception's type)."""
    try:
        return fn(), None
    except Exception as e:  # noqa: BLE001 - comparing torch's behaviour inside and outside enable()
        return None, type(e)


def test_routing_keeps_torchs_cuda_rules():
    """On a CUDA tensor torch rejects a row-major b, K or N not a multiple of 16, e5m2 x e5m2, a
    row-wise call with a non-bf16 output and a bias with an fp32 output: enable() leaves those calls
    to torch (its errors): checked through the routing predicate (the CUDA-only rules where a GPU is
    present; the device-independent ones everywhere)."""
    from tritonblas import scaled

    class Fake(torch.Tensor):  # only the predicate's view of a tensor: never launched
        pass

    a = torch.empty(32, 64, dtype=E4M3)
    b = torch.empty(48, 64, dtype=E4M3).t()
    one = torch.tensor(1.0)
    assert scaled.routable(a, b, one, one, None, None, torch.bfloat16, False) is dispatch.has_profile(a.device)
    assert not scaled.routable(a, b, one, one, None, one, torch.bfloat16, False)         # scale_result
    assert not scaled.routable(a, b, one, one, None, None, None, False)                  # fp8 output
    assert not scaled.routable(a.as_subclass(Fake), b, one, one, None, None, torch.bfloat16, False)
    # the CUDA-only rules are checked on a CUDA tensor; on this machine only when one exists
    if torch.cuda.is_available():
        ca, cb, c1 = a.cuda(), b.cuda(), one.cuda()
        assert scaled.routable(ca, cb, c1, c1, None, None, torch.bfloat16, False)
        assert not scaled.routable(ca, cb.contiguous(), c1, c1, None, None, torch.bfloat16, False)
        assert not scaled.routable(ca.to(E5M2), cb.to(E5M2), c1, c1, None, None, torch.bfloat16, False)
        assert not scaled.routable(ca, cb, torch.ones(32, 1, device="cuda"), torch.ones(1, 48, device="cuda"),
                                   None, None, torch.float16, False)
        assert not scaled.routable(ca, cb, c1, c1, torch.ones(48, device="cuda"), None, torch.float32, False)


@pytest.mark.parametrize("recipe", ["tensor", "row"])
def test_warm_calls_bind_this_calls_scales_and_bias(recipe, device):
    """The second call of a signature is served by the dispatcher's warm entry; it must launch with the
    scales and bias of *this* call (new tensors, new values), bit for bit what the checked path gives."""
    m, k, n = 24, 64, 32
    a, b = _fp8(m, k, E4M3, False, device, 12), _fp8(k, n, E4M3, True, device, 13)
    sa1, sb1 = _scales(recipe, m, n, device, seed=1)
    sa2, sb2 = _scales(recipe, m, n, device, seed=2)
    bias1, bias2 = (torch.randn(n, generator=torch.Generator().manual_seed(s)).to(device, torch.bfloat16)
                    for s in (14, 15))
    tritonblas.clear_caches()
    dispatch.reset_stats()
    first = tritonblas.scaled_mm(a, b, sa1, sb1, bias=bias1, out_dtype=torch.bfloat16)   # checked: records
    assert dispatch.stats()["fast_hits"] == 0
    warm = tritonblas.scaled_mm(a, b, sa2, sb2, bias=bias2, out_dtype=torch.bfloat16)
    assert dispatch.stats()["fast_hits"] == 1, dispatch.stats()
    tritonblas.clear_caches()
    cold = tritonblas.scaled_mm(a, b, sa2, sb2, bias=bias2, out_dtype=torch.bfloat16)    # checked again
    assert torch.equal(warm, cold)
    assert not torch.equal(first, warm)
    ref, mag, _ = reference(a, b, bias=bias2, scale_a=sa2, scale_b=sb2)
    assert_gemm_close(warm, ref, mag, k, fp8_mma=True, what=f"warm scaled_mm {recipe}")
    dispatch.reset_stats()
    tritonblas.scaled_mm(a, b, sa2, sb2, out_dtype=torch.bfloat16)  # no bias: another signature, checked
    tritonblas.scaled_mm(a, b, sa2, sb2, out_dtype=torch.bfloat16, use_fast_accum=True)  # another again
    assert dispatch.stats()["fast_hits"] == 0


@pytest.mark.parametrize("bias_shape", [(32, 1), (1, 1, 32), (1, 32)])
def test_bias_of_n_elements_in_any_shape(bias_shape, device):
    """The contract (and torch's CUDA kernel) take a bias of N elements whatever its shape; an (N, 1)
    bias raised ValueError naming the dispatcher's internal 'c' before, through enable() too."""
    m, k, n = 24, 64, 32
    a, b = _fp8(m, k, E4M3, False, device, 16), _fp8(k, n, E4M3, True, device, 17)
    sa, sb = _scales("row", m, n, device, seed=3)
    bias = torch.randn(bias_shape, generator=torch.Generator().manual_seed(18)).to(device)
    out = tritonblas.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=torch.float32)
    ref, mag, _ = reference(a, b, bias=bias, scale_a=sa, scale_b=sb)
    assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"bias {bias_shape}")
    with tritonblas.enable():
        routed = torch._scaled_mm(a, b, sa, sb, bias=bias.to(torch.bfloat16), out_dtype=torch.bfloat16)
    ref, mag, _ = reference(a, b, bias=bias.to(torch.bfloat16), scale_a=sa, scale_b=sb)
    assert_gemm_close(routed, ref, mag, k, fp8_mma=True, what=f"routed bias {bias_shape}")


def test_use_fast_accum_must_be_a_bool(device):
    a, b = _fp8(16, 32, E4M3, False, device, 19), _fp8(32, 16, E4M3, True, device, 20)
    one = torch.tensor(1.0, device=device)
    with pytest.raises(TypeError, match="use_fast_accum"):
        tritonblas.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum="no")


@pytest.mark.parametrize("profile", [123, 1.5, ["h200"]])
def test_profile_of_the_wrong_type_is_named(profile, device):
    """profile= neither a name, a path nor a HardwareProfile: tritonblas.matmul raises TypeError naming
    ``profile``; scaled_mm raised os.fspath's "expected str, bytes or os.PathLike object, not int" from
    deep in the device lookup. Reproduction:
    tritonblas.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, profile=123)."""
    a, b = _fp8(16, 32, E4M3, False, device, 19), _fp8(32, 16, E4M3, True, device, 20)
    one = torch.tensor(1.0, device=device)
    with pytest.raises(TypeError, match="^profile: expected a profile name"):
        tritonblas.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, profile=profile)


@pytest.mark.parametrize("dtypes", [(E4M3, E4M3), (E4M3, E5M2), (E5M2, E5M2)])
def test_nan_and_inf_inputs_propagate_like_the_reference(dtypes, device):
    """A NaN in a row of a (e4m3fn has NaN, no inf) and an inf in a column of an e5m2 b: NaN/inf exactly
    where the float64 reference has them (RELIABILITY.md §6 item 9). Under the interpreter the e4m3fn
    NaN read as 480 before: a finite row."""
    m, k, n = 16, 32, 16
    a, b = _fp8(m, k, dtypes[0], False, device, 21), _fp8(k, n, dtypes[1], True, device, 22)
    a[3, 5] = float("nan")
    if dtypes[1] == E5M2:
        b[7, 2] = float("inf")
    sa, sb = _scales("tensor", m, n, device)
    for out_dtype in (torch.float32, torch.bfloat16):
        out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=out_dtype)
        ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
        assert ref[3].isnan().all()
        assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"non-finite {dtypes} {out_dtype}")


@pytest.mark.parametrize("recipe,out_dtype,dtypes,b_colmajor", [
    ("tensor", torch.bfloat16, (E4M3, E4M3), True),   # a call torch's CUDA kernel takes
    ("row", torch.float16, (E4M3, E4M3), False),      # row-wise to fp16, b row-major: torch's kernel refuses
    ("tensor", torch.float32, (E5M2, E5M2), True),    # e5m2 x e5m2: torch's kernel refuses
])
def test_a_call_our_kernels_cannot_run_still_gets_its_result(recipe, out_dtype, dtypes, b_colmajor, device,
                                                            monkeypatch):
    """When the compiler refuses every pick (dispatch.scaled_gemm returns None), scaled_mm's fallback
    gives the contract's result: torch._scaled_mm where torch's CUDA kernel accepts the call, else fp32
    on torch's matmul; never torch's refusal of a layout or recipe its own kernel lacks."""
    from triton.runtime.errors import OutOfResources

    from tritonblas import plan as _plan

    def refuse(self):
        raise OutOfResources(300_000, 232_448, "shared memory")

    monkeypatch.setattr(_plan.PreparedLaunch, "run_kernel", refuse)
    tritonblas.clear_caches()
    m, k, n = 24, 48, 32
    a = _fp8(m, k, dtypes[0], False, device, 11)
    b = _fp8(k, n, dtypes[1], b_colmajor, device, 12)
    sa, sb = _scales(recipe, m, n, device, seed=13)
    bias = None if out_dtype == torch.float32 else torch.randn(n, generator=torch.Generator().manual_seed(14)).to(
        device, out_dtype)
    before = dispatch.stats()["fallbacks"]
    with pytest.warns(Warning):  # the refusals are reported (FallbackWarning)
        out = tritonblas.scaled_mm(a, b, sa, sb, bias=bias, out_dtype=out_dtype)
    assert dispatch.stats()["fallbacks"] == before + 1
    assert out.dtype == out_dtype and tuple(out.shape) == (m, n)
    ref, mag, _ = reference(a, b, bias=bias, scale_a=sa, scale_b=sb)
    assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"scaled_mm fallback {recipe} {out_dtype} {dtypes}")
    tritonblas.clear_caches()


E4M3FNUZ, E5M2FNUZ = torch.float8_e4m3fnuz, torch.float8_e5m2fnuz


@pytest.mark.parametrize("recipe", ["tensor", "row"])
@pytest.mark.parametrize("dtypes", [(E4M3FNUZ, E4M3FNUZ), (E5M2FNUZ, E4M3FNUZ)])
def test_fnuz_runs_on_our_kernels_for_gfx942_and_gets_its_result_elsewhere(recipe, dtypes, device, monkeypatch):
    """AMD gfx942's fp8 encodings (torch._scaled_mm's on MI300X): on the mi300x profile our kernels run them (fp8
    MFMA there: origami's HardwareProfile.rate_key); on the h200 profile the compiler takes no fnuz operand, so the
    plan falls back and the call still gets its result. Both within the fp8 bound of a float64 product."""
    m, k, n = 33, 64, 40
    a = _fp8(m, k, dtypes[0], False, device, 5)
    b = _fp8(k, n, dtypes[1], True, device, 6)
    sa, sb = _scales(recipe, m, n, device)
    ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
    # (on an NVIDIA GPU the mi300x plan would compile for sm_90, whose compiler refuses fnuz: interpreter only)
    for profile, ours in ((("mi300x", True),) if device == "cpu" else ()) + (("h200", False),):
        dispatch.reset_stats()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dispatch.FallbackWarning)  # h200: "fp8_e4m3fnuz is not an operand type..."
            out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, profile=profile)
        assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"fnuz {dtypes} {recipe} on {profile}")
        st = dispatch.stats()
        assert (st["launches"], st["fallbacks"]) == ((1, 0) if ours else (0, 1)), (profile, st)


def test_fp8_encodings_do_not_mix(device):
    a = _fp8(16, 32, E4M3FNUZ, False, device, 7)
    b = _fp8(32, 16, E4M3, True, device, 8)
    one = torch.ones((), device=device)
    with pytest.raises(tritonblas.scaled.ScaledMMError, match="one encoding"):
        tritonblas.scaled_mm(a, b, one, one, out_dtype=torch.bfloat16)



def test_native_fnuz_is_rocm_gfx942_only(monkeypatch):
    """scaled.native_fnuz: the fp8 encoding torch._scaled_mm and the matrix cores take is fnuz on a ROCm gfx942
    device only (asked once per device index), OCP on NVIDIA, gfx950 and CPU."""
    from types import SimpleNamespace

    from tritonblas import scaled

    assert not scaled.native_fnuz(torch.device("cpu"))
    asked = []

    def props(index):
        asked.append(index)
        return SimpleNamespace(gcnArchName={0: "gfx942:sramecc+:xnack-", 1: "gfx950"}[index])

    monkeypatch.setattr(scaled, "_NATIVE_FNUZ", {})
    monkeypatch.setattr(torch.version, "hip", "6.4", raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_properties", props)
    assert scaled.native_fnuz(torch.device("cuda", 0)) and scaled.native_fnuz(torch.device("cuda", 0))
    assert not scaled.native_fnuz(torch.device("cuda", 1))
    assert asked == [0, 1]
    monkeypatch.setattr(scaled, "_NATIVE_FNUZ", {})
    monkeypatch.setattr(torch.version, "hip", None, raising=False)
    assert not scaled.native_fnuz(torch.device("cuda", 0))


def test_fnuz_nan_propagates_like_the_reference(device):
    """fnuz has one NaN (0x80) and no inf or negative zero: a NaN in a row of a gives a NaN row, exactly where the
    float64 reference has it, on our kernels (mi300x profile, under the interpreter, which reads fnuz through
    torch's own conversion table, tritonblas/_interpreter.py; an NVIDIA GPU's compiler refuses fnuz) and through
    the fallback where the profile's compiler refuses it (h200, on every device)."""
    m, k, n = 16, 32, 16
    a, b = _fp8(m, k, E4M3FNUZ, False, device, 23), _fp8(k, n, E4M3FNUZ, True, device, 24)
    a[3, 5] = float("nan")
    assert a.view(torch.uint8)[3, 5].item() == 0x80
    sa, sb = _scales("row", m, n, device)
    ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
    assert ref[3].isnan().all()
    for profile, launches in ((("mi300x", 1),) if device == "cpu" else ()) + (("h200", 0),):
        dispatch.reset_stats()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", dispatch.FallbackWarning)  # h200: "fp8_e4m3fnuz is not an operand type..."
            out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, profile=profile)
        assert dispatch.stats()["launches"] == launches, profile
        assert out[3].isnan().all(), profile
        assert_gemm_close(out, ref, mag, k, fp8_mma=True, what=f"fnuz with a NaN on {profile}")


@pytest.mark.parametrize("value", ["1", "0", None])
def test_the_vendor_switch_hands_torchs_fp8_calls_to_torch(device, monkeypatch, value):
    """``TRITONBLAS_VENDOR_ALIGNED`` (tritonblas.handover.vendor_scaled): ``1`` hands a ``torch._scaled_mm`` call we
    could run to torch's op (its result or its error, as outside the block), ``0`` routes it; unset is ``1`` for an
    NVIDIA GPU's tensors and ``0`` for the CPU's. ``tritonblas.scaled_mm``, called by name, stays ours."""
    from tritonblas import settings

    if value is None:
        monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
    else:
        monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, value)
    to_torch = value == "1" or (value is None and torch.device(device).type == "cuda" and torch.version.hip is None)
    a, b = _fp8(32, 64, E4M3, False, device, 21), _fp8(64, 48, E4M3, True, device, 22)
    sa, sb = _scales("row", 32, 48, device, seed=4)
    call = lambda: torch._scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)  # noqa: E731
    outside = _outcome(call)
    with tritonblas.enable():
        dispatch.reset_stats()
        inside = _outcome(call)
        st = dispatch.stats()
        dispatch.reset_stats()
        named = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16)
        assert dispatch.stats()["launches"] == 1  # by name: ours whatever the switch
    assert st["intercepted"] == 1 and st["routed"] == (0 if to_torch else 1), (value, st)
    if to_torch:
        assert inside[1] == outside[1] and (inside[0] is None) == (outside[0] is None)
        assert inside[0] is None or torch.equal(inside[0].float(), outside[0].float())
    else:
        torch.testing.assert_close(inside[0], named, rtol=0, atol=0)


def test_the_vendor_switch_default_reads_the_device(monkeypatch):
    """Unset, ``vendor_scaled`` is on for an NVIDIA GPU's tensors only, and off while a tile table is in force or on a
    ROCm build; ``1`` and ``0`` decide everywhere. The decision alone, on stand-ins for the operand (no GPU here)."""
    from types import SimpleNamespace

    from tritonblas import handover, settings

    gpu, cpu = SimpleNamespace(is_cuda=True), SimpleNamespace(is_cuda=False)
    monkeypatch.delenv(settings.ENV_VENDOR_ALIGNED, raising=False)
    monkeypatch.delenv(settings.ENV_TABLE, raising=False)
    monkeypatch.setattr(handover, "_NVIDIA_BUILD", True)
    assert handover.vendor_scaled(gpu) and not handover.vendor_scaled(cpu)
    monkeypatch.setenv(settings.ENV_TABLE, "/a/table.json")
    assert not handover.vendor_scaled(gpu)
    monkeypatch.delenv(settings.ENV_TABLE)
    monkeypatch.setattr(handover, "_NVIDIA_BUILD", False)
    assert not handover.vendor_scaled(gpu)
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "1")
    assert handover.vendor_scaled(gpu) and handover.vendor_scaled(cpu)
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "0")
    monkeypatch.setattr(handover, "_NVIDIA_BUILD", True)
    assert not handover.vendor_scaled(gpu)
    monkeypatch.setenv(settings.ENV_VENDOR_ALIGNED, "on")
    with pytest.raises(ValueError, match=settings.ENV_VENDOR_ALIGNED):
        handover.vendor_scaled(gpu)


def test_a_forced_config_is_the_one_launched(device, monkeypatch):
    """``dispatch.scaled_gemm(..., config=cfg)`` (how benchmarks/scaled_mm_configs.py times the space with the
    scale epilogue) launches ``cfg``, not the pick: forced split-K under deterministic mode raises naming the
    forced config, a forced data-parallel config computes the §4.2-close product and its warm call too."""
    import origami
    from origami.config import Kind

    a, b = _fp8(40, 96, E4M3, False, device, 6), _fp8(96, 48, E4M3, True, device, 7)
    sa, sb = _scales("row", 40, 48, device)
    ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
    dp = origami.TileConfig(kind="dp", block_m=16, block_n=32, block_k=32, num_warps=4, num_stages=2, group_m=1)
    for _ in range(2):  # cold, then the warm entry of the forced key
        out = torch.empty(40, 48, dtype=torch.bfloat16, device=device)
        assert dispatch.scaled_gemm(a, b, out, scale_a=sa, scale_b=sb, config=dp) is out
        assert_gemm_close(out, ref, mag, 96, fp8_mma=True, what="forced dp config")
    monkeypatch.setattr(dispatch, "DETERMINISTIC_KINDS", frozenset((Kind.DP,)))
    sk = origami.TileConfig(kind="splitk", block_m=16, block_n=32, block_k=32, num_warps=4, num_stages=2,
                            group_m=1, split_k=3)
    torch.use_deterministic_algorithms(True)
    try:
        with pytest.raises(RuntimeError, match=r"tritonblas\.scaled_mm: the splitk kernel .*\(forced by config="):
            dispatch.scaled_gemm(a, b, torch.empty(40, 48, dtype=torch.bfloat16, device=device),
                                 scale_a=sa, scale_b=sb, config=sk)
    finally:
        torch.use_deterministic_algorithms(False)


def test_fast_accumulation_selects_without_the_promoted_spill_rule(device, monkeypatch):
    """A use_fast_accum call keeps no promoted accumulator, so origami selects its config without
    model.fp8_promoted_spill_limit (origami.space.without_promotion); a promoting call of the same operands selects
    with it, under its own plan key. Checked by the profile origami.select is handed, and on the model's own space:
    the rule-free space holds the 128x256x128 w8 tile the rule leaves out."""
    import origami
    from origami import space

    seen = []
    real = origami.select

    def spy(problem, hw, *args, **kwargs):
        seen.append(hw.model["fp8_promoted_spill_limit"])
        return real(problem, hw, *args, **kwargs)

    monkeypatch.setattr(origami, "select", spy)
    dispatch.clear_caches()
    a, b = _fp8(48, 96, E4M3, False, device, 11), _fp8(96, 80, E4M3, True, device, 12)
    sa, sb = _scales("row", 48, 80, device)
    ref, mag, _ = reference(a, b, scale_a=sa, scale_b=sb)
    for fast in (True, False):
        seen.clear()
        out = tritonblas.scaled_mm(a, b, sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        assert_gemm_close(out, ref, mag, 96, fp8_mma=True, what=f"fast={fast}")
        assert seen, "no plan was built for this call (a stale plan cache?)"
        limit = dispatch.device_info(a.device).plan_profile.model["fp8_promoted_spill_limit"]
        assert set(seen) == ({0.0} if fast else {limit}), (fast, seen)
    hw = origami.load_profile("h200")
    p = origami.GemmProblem(8192, 8192, 8192, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T", 1, 16)
    tiles = lambda h: {(c.block_m, c.block_n, c.block_k, c.num_warps) for c in origami.candidates(p, h)}  # noqa: E731
    assert (128, 256, 128, 8) in tiles(space.without_promotion(hw)) and (128, 256, 128, 8) not in tiles(hw)
