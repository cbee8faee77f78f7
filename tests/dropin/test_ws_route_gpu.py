"""The H200 half of tests/dropin/test_ws_route.py: origami's 'ws' picks run the real Gluon kernel.

In a child process with a timeout (a hang fails instead of blocking the suite), on a profile whose
ws_efficiency makes the kernel win often (h200 with 2.0): every call whose pick is kind 'ws' runs
``gluon_hopper.gluon_matmul`` (then, warm, its raw launch) and matches the float64 reference within
RELIABILITY.md's tolerances (tests/_check.py); calls the kernel cannot run (alpha, a full C, a
batch) run origami's other pick, also checked.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import sys
import torch, torch.nn.functional as F
import origami, tritonblas
from origami import GemmProblem, Kind
from origami.hardware import render_profile
from tritonblas import dispatch
from tritonblas.kernels import gluon_hopper
from _check import assert_gemm_close, reference
ws = origami.load_profile("h200").replace_model(ws_efficiency=2.0)
open(sys.argv[1], "w").write(render_profile(ws.to_yaml_dict()))
ran = []
def spy(name, what):
    real = getattr(gluon_hopper, name)
    def wrapper(*args, **kw):
        ran.append(what(kw))
        return real(*args, **kw)
    setattr(gluon_hopper, name, wrapper)
spy("gluon_matmul", lambda kw: (kw.get("block_n"), kw.get("stages")))
spy("raw_launch", lambda kw: "raw")
g = torch.Generator(device="cuda").manual_seed(0)
cases = [(1536, 1024, 64, torch.bfloat16, torch.bfloat16, False, False), (4096, 4096, 4096, torch.bfloat16, torch.bfloat16, False, False),
         (2000, 1000, 1000, torch.float16, torch.float16, True, False), (3000, 1536, 520, torch.bfloat16, torch.bfloat16, False, True)]
name = {torch.bfloat16: "bf16", torch.float16: "fp16"}
took = 0
for m, n, k, dt, ot, nt, ta in cases:
    p = GemmProblem(m, n, k, name[dt], name[dt], name[ot], "T" if ta else "N", "T" if nt else "N")
    want = origami.select(p, ws).config
    a = torch.randn(k, m, device="cuda", generator=g).to(dt).t() if ta else torch.randn(m, k, device="cuda", generator=g).to(dt)
    b = torch.randn(n, k, device="cuda", generator=g).to(dt).t() if nt else torch.randn(k, n, device="cuda", generator=g).to(dt)
    out = torch.empty(m, n, device="cuda", dtype=ot)
    for rep in range(2):
        before = len(ran)
        dispatch.gemm(a, b, out)
        torch.cuda.synchronize()
        ref, mag, _ = reference(a, b)
        assert_gemm_close(out, ref, mag, k, what=f"{m}x{n}x{k} {dt}->{ot} nt={nt} ta={ta} pick {want.short()} call {rep}")
        if want.kind is Kind.WS:
            assert len(ran) == before + 1, ("the 'ws' pick did not run the Gluon kernel", m, n, k, rep, ran[before:])
            assert ran[-1] == ((want.block_n, want.num_stages) if rep == 0 else "raw"), ran[before:]
        else:
            assert len(ran) == before, ("a pick of another kind ran the Gluon kernel", m, n, k)
    took += want.kind is Kind.WS
assert took >= 4, f"only {took} of the cases picked 'ws': the test lost its point"
# the kernel itself writes either 16-bit type from 16-bit inputs (origami.space.check_ws); the
# dispatcher hands mixed dtypes to torch (fallback_reason), so this one is the kernel's own call
a16, b16 = (torch.randn(1024, 512, device="cuda", generator=g).to(torch.float16) for _ in range(2))
o16 = gluon_hopper.gluon_matmul(a16, b16.t(), out=torch.empty(1024, 1024, device="cuda", dtype=torch.bfloat16),
                                block_n=128, stages=4)
ref, mag, _ = reference(a16, b16.t())
assert_gemm_close(o16, ref, mag, 512, what="gluon_matmul fp16 x fp16 -> bf16")
a = torch.randn(2048, 512, device="cuda", generator=g).to(torch.bfloat16)
w = torch.randn(2048, 512, device="cuda", generator=g).to(torch.bfloat16)
bias = torch.randn(2048, device="cuda", generator=g).to(torch.bfloat16)
assert origami.select(GemmProblem(2048, 2048, 512, b_layout="T"), ws).config.kind is Kind.WS
before = len(ran)
with tritonblas.enable():
    for _ in range(2):
        y = F.linear(a.reshape(4, 512, 512), w, bias)
assert len(ran) == before + 2, ("F.linear + bias did not take the 'ws' pick", ran[before:])
ref, mag, _ = reference(a, w.t(), c=bias.expand(2048, 2048), beta=1.0)
assert_gemm_close(y.reshape(-1, 2048), ref, mag, 512, what="F.linear + bias on the 'ws' pick")
before = len(ran)
c = torch.randn(2048, 2048, device="cuda", generator=g).to(torch.bfloat16)
for alpha, beta, cc in ((0.5, 0.0, None), (1.0, 0.5, c), (1.0, 1.0, c)):
    got = dispatch.gemm(a, w.t(), c=cc, alpha=alpha, beta=beta)
    ref, mag, _ = reference(a, w.t(), c=cc, alpha=alpha, beta=beta) if cc is not None else reference(a, w.t(), alpha=alpha)
    assert_gemm_close(got, ref, mag, 512, what=f"alpha={alpha} beta={beta}: origami's other pick")
assert len(ran) == before, ("a call the kernel cannot run reached it", ran[before:])
print("WS ROUTE OK", ran)
"""


@pytest.mark.gpu
def test_ws_picks_run_the_gluon_kernel_on_the_h200(tmp_path):
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() != (9, 0):
        pytest.skip("needs an sm_90 GPU (the H200)")
    from tritonblas.kernels import gluon_hopper

    if not gluon_hopper.HAS_GLUON:
        pytest.skip("this Triton has no Gluon: the dispatcher never picks 'ws' here (ws_reason)")
    path = tmp_path / "h200_ws.yaml"
    env = dict(os.environ, TRITONBLAS_PROFILE=str(path), PYTHONPATH=f"{ROOT}{os.pathsep}{ROOT / 'tests'}")
    env.pop("TRITONBLAS_GLUON", None)
    r = subprocess.run([sys.executable, "-c", CHILD, str(path)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "WS ROUTE OK" in r.stdout, r.stdout[-2000:] + r.stderr[-4000:]
