"""An Inductor-format tile table drives torch.compile on a real GPU (issue 7; `-m gpu` on the H200).

``python -m tritonblas table --format inductor`` writes the table; torch's own
``LookupTableChoices`` (installed as Inductor's choices handler, no overrides) reads it while
``torch.compile`` lowers a bf16 mm with max-autotune restricted to Triton templates; the generated
kernel must carry the table's BLOCK_M/N/K, and the result must be right. A shape the table lacks
must still compile (Inductor's own configs). Skipped where this torch has no lookup table.
"""

from __future__ import annotations

import json
import re

import pytest
import torch

import origami

from test_tables import _inductor, _shapes_yaml, run_cli  # noqa: E402  (same folder: the CLI helpers)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


def _constexpr(code: str, name: str) -> set[int]:
    return {int(v) for v in re.findall(rf"{name}\s*:\s*tl\.constexpr\s*=\s*(\d+)", code)}


@pytest.mark.timeout(600)
def test_inductor_table_drives_torch_compile(tmp_path):
    inductor_config, _ir, _inputs, LookupTableChoices, _sizevars, V = _inductor()
    from torch._inductor.utils import run_and_get_code

    hw = origami.load_profile("h200")
    p = origami.GemmProblem(1024, 768, 512)
    shapes = tmp_path / "s.yaml"
    shapes.write_text(_shapes_yaml([p]))
    out = tmp_path / "inductor.json"
    r = run_cli("table", "--profile", "h200", "--shapes", str(shapes), "-o", str(out), "--format", "inductor")
    assert r.returncode == 0, r.stdout + r.stderr
    table = json.loads(out.read_text())
    cfg = origami.select(p, hw).config

    a = torch.randn(p.m, p.k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(p.k, p.n, device="cuda", dtype=torch.bfloat16)
    torch._dynamo.reset()
    patch = {"lookup_table.table": table, "max_autotune_gemm": True, "max_autotune_gemm_backends": "TRITON"}
    with inductor_config.patch(patch), V.set_choices_handler(LookupTableChoices()):
        y, codes = run_and_get_code(torch.compile(lambda x, w: x @ w, dynamic=False), a, b)
    code = "\n".join(codes)
    ref = a.double() @ b.double()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    got = {n: _constexpr(code, n) for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    assert got == {"BLOCK_M": {cfg.block_m}, "BLOCK_N": {cfg.block_n}, "BLOCK_K": {cfg.block_k}}, (
        f"Inductor did not use the table's config {cfg.short()} (torch {torch.__version__}); generated "
        f"constexprs {got}")
    print(f"torch {torch.__version__}: Inductor compiled {p.describe()} with the table's {cfg.short()}")


@pytest.mark.timeout(600)
def test_live_provider_drives_torch_compile():
    """tritonblas.inductor.OrigamiChoices, no table: Inductor compiles the provider's pick, and only it
    (one template config), and the result is right."""
    inductor_config, _ir, _inputs, _lookup, _sizevars, V = _inductor()
    from torch._inductor.utils import run_and_get_code

    import tritonblas.inductor as ind

    picks = []

    class Recording(ind.OrigamiChoices):
        def choose(self, kernel_inputs, op_name, template_uids):
            c = super().choose(kernel_inputs, op_name, template_uids)
            picks.append(c)
            return c

    a = torch.randn(1024, 512, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(512, 768, device="cuda", dtype=torch.bfloat16)
    torch._dynamo.reset()
    patch = {"max_autotune_gemm": True, "max_autotune_gemm_backends": "TRITON", "fx_graph_cache": False}
    with inductor_config.patch(patch), V.set_choices_handler(Recording()):
        y, codes = run_and_get_code(torch.compile(lambda x, w: x @ w, dynamic=False), a, b)
    torch._dynamo.reset()
    ref = a.double() @ b.double()
    assert ((y.double() - ref).norm() / ref.norm()).item() < 1e-2
    (pick,) = [c for c in picks if c is not None]
    assert pick.template_id in ("triton::mm", "triton::mm_persistent_tma"), pick
    code = "\n".join(codes)
    got = {n: _constexpr(code, n) for n in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
    want = {n: {pick.kwargs[n]} for n in got}
    assert got == want, (pick, got)
