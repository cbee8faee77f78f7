"""Vendor entries (tables.VENDOR) and tritonblas.versus: a measured "torch runs this problem" decision.

What must hold: a VENDOR entry round-trips through both file formats under the checksum; a malformed
one is dropped naming its key; the dispatcher, the warm path and enable() hand exactly that problem
to torch (results bitwise torch's, autograd included) and nothing else; versus decides by the
measured times with ties to torch; Inductor renders skip the entries."""

import pytest
import torch

import origami
import tritonblas
from tritonblas import dispatch, fastpath, gluon_route, tables, versus


@pytest.fixture(autouse=True)
def _clean(monkeypatch):
    monkeypatch.delenv(tables.ENV_TABLE, raising=False)
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    tables.set_table(None)
    dispatch.clear_caches()
    fastpath.clear()
    yield
    tables.set_table(None)
    dispatch.clear_caches()
    fastpath.clear()


# where the dispatcher's own paths run: the GPU when there is one (CPU tensors there are torch's), else the
# CPU under the interpreter
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def _rand(*shape, seed=0, dtype=torch.bfloat16, device="cpu"):
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(*shape, generator=g).to(dtype=dtype, device=device)


def _dev(*shape, **kw):
    """:func:`_rand` on :data:`DEV`."""
    return _rand(*shape, device=DEV, **kw)


def _problem(m, n, k, b_layout="N"):
    return origami.GemmProblem(m, n, k, "bf16", "bf16", "bf16", "N", b_layout)


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_vendor_entries_round_trip_under_the_checksum(tmp_path, fmt):
    hw = origami.load_profile("h200")
    p_torch, p_ours = _problem(64, 48, 32), _problem(96, 64, 32)
    table = tables.table_of({p_torch: tables.VENDOR, **tables.make_table([p_ours], hw).entries}, hw)
    path = tmp_path / f"t.{fmt}"
    tables.write_table(table, path, fmt)
    back = tables.load_table(path, strict=True)
    assert back.get(p_torch) is tables.VENDOR
    assert back.get(p_ours) == table.get(p_ours) and back.get(p_ours) is not tables.VENDOR
    assert back.checksum == table.digest()
    # an edited entry fails the checksum, as for config entries
    text = path.read_text()
    path.write_text(text.replace("torch", "dp", 1))
    with pytest.raises(tables.TableError, match="checksum"):
        tables.load_table(path, strict=True)


def test_a_torch_entry_with_tile_fields_is_dropped_naming_its_key():
    hw = origami.load_profile("h200")
    key = tables.problem_key(_problem(64, 48, 32))
    bad = {**tables.VENDOR.to_dict(), "block_m": 64}
    good, rejected = tables._check_entries({key: bad, tables.problem_key(_problem(32, 32, 32)): tables.VENDOR.to_dict()},
                                          hw)
    assert [k for k, _ in rejected] == [key] and "block_m" in rejected[0][1]
    assert list(good.values()) == [tables.VENDOR]


def test_a_misspelt_torch_kind_is_dropped_with_the_vendor_spelling():
    hw = origami.load_profile("h200")
    key = tables.problem_key(_problem(64, 48, 32))
    good, rejected = tables._check_entries({key: {**tables.VENDOR.to_dict(), "kind": "TORCH"}}, hw)
    assert not good and [k for k, _ in rejected] == [key]
    assert "'torch'" in rejected[0][1] and "TORCH" in rejected[0][1], rejected


def test_inductor_render_skips_vendor_entries():
    hw = origami.load_profile("h200")
    p = _problem(64, 48, 32)
    doc, skipped = tables.render_inductor(tables.table_of({p: tables.VENDOR}, hw))
    assert skipped == 1 and list(doc) == [tables.INDUCTOR_PROVENANCE_KEY]


@pytest.mark.timeout(300)
def test_dispatcher_runs_torch_for_a_vendor_problem_only():
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    a2, b2 = _dev(96, 32, seed=2), _dev(32, 64, seed=3)
    tables.set_table(tables.table_of({_problem(64, 48, 32): tables.VENDOR}, "h200"))
    dispatch.reset_stats()
    for _ in range(2):
        got = tritonblas.matmul(a, b)
        assert torch.equal(got, torch.matmul(a, b))  # torch's own result, bit for bit
    s = dispatch.stats()
    # the first call plans (the table's VENDOR entry) and runs torch through the dispatcher; the second
    # is known warm and goes to torch's matmul directly
    # (both count under fallbacks: torch ran them)
    assert s["vendor"] == 1 and s["fallbacks"] == 2 and s["launches"] == 0 and s["plans"] == 0, s
    other = tritonblas.matmul(a2, b2)  # not in the table: our kernel
    assert dispatch.stats()["launches"] == 1
    ref = a2.float() @ b2.float()
    assert float((other.float() - ref).norm() / ref.norm()) < 2e-2


@pytest.mark.timeout(300)
def test_enable_hands_a_vendor_linear_to_torch_warm_with_autograd():
    x = _dev(2, 24, 32, seed=4).requires_grad_()
    w = torch.nn.Parameter(_dev(48, 32, seed=5))
    bias = torch.nn.Parameter(_dev(48, seed=6))
    # F.linear(x, w) is x (48, 32) @ w.T: b is w's transposed view (layout T)
    tables.set_table(tables.table_of({_problem(48, 48, 32, "T"): tables.VENDOR}, "h200"))
    ref = torch.nn.functional.linear(x, w, bias)
    ref.sum().backward()
    rg = (x.grad.clone(), w.grad.clone(), bias.grad.clone())
    for i in range(3):
        x.grad = w.grad = bias.grad = None
        dispatch.reset_stats()
        with tritonblas.enable():
            y = torch.nn.functional.linear(x, w, bias)
        assert torch.equal(y, ref)
        y.sum().backward()
        # the forward is torch's; the backward GEMMs are other problems (ours on the first call,
        # torch's own autograd once the signature is known warm)
        torch.testing.assert_close(x.grad, rg[0], rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(w.grad, rg[1], rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(bias.grad, rg[2], rtol=0, atol=0)
        s = dispatch.stats()
        if i:  # warm: torch's F.linear served the call, nothing of ours ran
            assert s["routed"] == 0 and s["intercepted"] == 1 and s["launches"] == 0 and s["fallbacks"] == 1, s
    with torch.no_grad(), tritonblas.enable():
        dispatch.reset_stats()
        assert torch.equal(torch.nn.functional.linear(x, w, bias), ref.detach())
        assert dispatch.stats()["routed"] == 0


def test_versus_decides_by_the_times_with_ties_to_torch():
    assert versus.decide(1.0, 1.0, 0.0) is True
    assert versus.decide(0.97, 1.0, 0.02) is False
    assert versus.decide(0.99, 1.0, 0.02) is True
    assert versus.decide(1.2, 1.0, 0.0) is True
    for bad in (-0.1, 1.0, 2):
        with pytest.raises(ValueError, match="margin"):
            versus.decide(1.0, 1.0, bad)


@pytest.mark.timeout(300)
def test_measure_table_gives_vendor_entries_where_torch_is_not_faster(monkeypatch):
    import tritonblas.plan as plan_mod

    ours_win, tie, torch_win = _problem(64, 48, 32), _problem(96, 64, 32), _problem(32, 32, 32)
    fp8 = origami.GemmProblem(64, 64, 64, "fp8_e4m3", "fp8_e4m3", "bf16", "N", "T")
    ours_ms = {ours_win: 0.5, tie: 1.0, torch_win: 2.0}
    now, seen = [], []
    real = plan_mod.example_tensors

    def tensors(p, dev):  # measure() builds each problem's operands here: note which one is timed
        now[:] = [p]
        seen.append(p)
        return real(p, dev)

    def timer(fn):  # torch 1 ms; ours as above
        fn()
        return ours_ms[now[0]] if fn.__name__ == "ours" else 1.0

    monkeypatch.setattr(plan_mod, "example_tensors", tensors)
    kept = tables.table_of({}, "h200")
    tables.set_table(kept)
    table, rows = versus.measure_table([ours_win, tie, fp8, torch_win, ours_win], timer=timer, margin=0.02)
    assert seen == [ours_win, tie, torch_win]  # duplicates once, fp8 skipped
    by = {r.problem: r for r in rows}
    assert by[fp8].note.startswith("fp8") and by[fp8].ours_ms is None and not by[fp8].vendor
    assert (by[ours_win].vendor, by[tie].vendor, by[torch_win].vendor) == (False, True, True)
    assert by[torch_win].ours_ms == 2.0 and by[torch_win].torch_ms == 1.0
    assert dict(table.entries) == {tie: tables.VENDOR, torch_win: tables.VENDOR}
    assert tables.explicit_table() is kept  # the table set aside while measuring is back


def test_planned_problems_lists_what_ran():
    a, b = _dev(40, 32), _dev(32, 24, seed=1)
    tritonblas.matmul(a, b)
    tritonblas.matmul(a, b)
    assert dispatch.planned_problems() == [origami.GemmProblem(40, 24, 32, "bf16", "bf16", "bf16",
                                                               align_bytes=16)]



@pytest.mark.timeout(300)
def test_a_warm_vendor_signature_keeps_the_checked_paths_dtype_under_autocast():
    # tritonblas.linear / matmul do not autocast (the checked path, VENDOR entry or not, returns fp32):
    # the warm path must not switch to torch's function, which would, once the signature is known
    x, w = _dev(24, 32, seed=7, dtype=torch.float32), _dev(48, 32, seed=8, dtype=torch.float32)
    tables.set_table(tables.table_of({origami.GemmProblem(24, 48, 32, "fp32", "fp32", "fp32", "N", "T"): tables.VENDOR},
                                     "h200"))
    tritonblas.linear(x, w)  # the signatures known warm outside the autocast region too
    tritonblas.matmul(x, w.t())
    for i in range(3):
        with torch.autocast(DEV, dtype=torch.bfloat16):
            got = (tritonblas.linear(x, w), tritonblas.matmul(x, w.t()))
        assert [r.dtype for r in got] == [torch.float32] * 2, i
    assert dispatch.stats()["vendor"] == 1


@pytest.mark.timeout(300)
def test_a_vendor_problem_keeps_its_dtype_precision_under_autocast():
    # torch runs the VENDOR problem as the kernels would: in the operands' dtype, not autocast's bf16
    x, w, c = (_dev(24, 32, seed=9, dtype=torch.float32), _dev(48, 32, seed=10, dtype=torch.float32),
               _dev(48, seed=11, dtype=torch.float32))
    tables.set_table(tables.table_of({origami.GemmProblem(24, 48, 32, "fp32", "fp32", "fp32", "N", "T"): tables.VENDOR},
                                     "h200"))
    xd, wd, cd = x.double(), w.double(), c.double()
    with torch.autocast(DEV, dtype=torch.bfloat16):
        got = {"linear": tritonblas.linear(x, w, c), "matmul": tritonblas.matmul(x, w.t()),
               "addmm": tritonblas.addmm(c, x, w.t(), beta=0.5, alpha=2.0)}
    want = {"linear": xd @ wd.T + cd, "matmul": xd @ wd.T, "addmm": 0.5 * cd + 2.0 * (xd @ wd.T)}
    for name, r in got.items():
        assert r.dtype == torch.float32, name
        torch.testing.assert_close(r.double(), want[name], rtol=1e-5, atol=1e-5, msg=name)
    assert dispatch.stats()["vendor"] >= 1


@pytest.mark.timeout(300)
def test_measure_times_a_tf32_problem_with_tf32_allowed():
    # a TF32 problem is fp32 tensors with TF32 allowed (c_dtype fp32): measured, not "mixed dtypes"
    p = origami.GemmProblem(32, 24, 16, "tf32", "tf32", "fp32", "N", "N")
    before = torch.backends.cuda.matmul.allow_tf32
    (row,) = versus.measure([p], timer=lambda fn: (fn(), 1.0)[1])
    assert row.note == "" and row.ours_ms == 1.0 and row.torch_ms == 1.0 and row.vendor, row
    assert p in dispatch.planned_problems()  # our side ran the TF32 problem itself
    assert torch.backends.cuda.matmul.allow_tf32 == before


def test_explain_names_the_vendor_entry():
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    tables.set_table(tables.table_of({_problem(64, 48, 32): tables.VENDOR}, "h200"))
    text = tritonblas.explain(a, b)
    assert "VENDOR" in text and "torch runs it" in text and "model found no valid config" not in text, text
    tables.set_table(None)
    assert "VENDOR" not in tritonblas.explain(a, b)


@pytest.mark.timeout(300)
def test_measure_inside_enable_times_torchs_own_matmul():
    # enable() routes torch.matmul to our kernels: the torch side must still be torch's (else ours vs ours)
    launched = {}

    def timer(fn):
        dispatch.reset_stats()
        fn()
        launched[fn.__name__] = dispatch.stats()["launches"]
        return 1.0

    with tritonblas.enable():
        versus.measure([_problem(32, 24, 16)], timer=timer)
    assert launched == {"ours": 1, "vendor": 0}, launched


@pytest.mark.timeout(300)
def test_clear_cache_forgets_the_vendor_table_for_warm_calls_too():
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    tables.set_table(tables.table_of({_problem(64, 48, 32): tables.VENDOR}, "h200"))
    for _ in range(2):
        tritonblas.matmul(a, b)
    tables.clear_cache()  # no table is active now: the model (our kernel) runs the problem
    assert tables.active_table() is None
    dispatch.reset_stats()
    got = tritonblas.matmul(a, b)
    assert dispatch.stats()["launches"] == 1, dispatch.stats()
    ref = a.double() @ b.double()
    assert float((got.double() - ref).norm() / ref.norm()) < 1e-2


@pytest.mark.timeout(300)
def test_a_table_switched_by_another_thread_mid_plan_does_not_stick(monkeypatch):
    # another thread's set_table landing between the dispatcher's key (which names the table) and its
    # table lookup: the plan cached under the key must be the named table's, both ways
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    vendor = tables.table_of({_problem(64, 48, 32): tables.VENDOR}, "h200")
    real = tables.lookup

    def racing(other):
        def lookup(*args, **kw):
            before = tables.explicit_table()
            tables.set_table(other)
            try:
                return real(*args, **kw)
            finally:
                tables.set_table(before)
        return lookup

    ref = a.double() @ b.double()
    for active, other, ours in ((None, vendor, True), (vendor, None, False)):
        tables.set_table(active)
        tritonblas.clear_caches()
        monkeypatch.setattr(tables, "lookup", racing(other))
        tritonblas.matmul(a, b)
        monkeypatch.setattr(tables, "lookup", real)
        for _ in range(2):
            dispatch.reset_stats()
            got = tritonblas.matmul(a, b)
            assert (dispatch.stats()["launches"] == 1) is ours, (active, dispatch.stats())
            assert float((got.double() - ref).norm() / ref.norm()) < 1e-2


@pytest.mark.timeout(300)
def test_dispatch_clear_caches_alone_forgets_warm_vendor_signatures(tmp_path, monkeypatch):
    # a $TRITONBLAS_TABLE file regenerated in place (same path, same table token): dispatch.clear_caches()
    # is documented to drop every warm entry, the ops' VENDOR signatures included
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    path = tmp_path / "t.json"
    tables.write_table(tables.table_of({_problem(64, 48, 32): tables.VENDOR}, "h200"), path, "json")
    monkeypatch.setenv(tables.ENV_TABLE, str(path))
    for _ in range(2):
        tritonblas.matmul(a, b)
    dispatch.reset_stats()
    tritonblas.matmul(a, b)
    assert dispatch.stats()["launches"] == 0  # warm: torch's matmul
    hw = origami.load_profile("h200")
    tables.write_table(tables.make_table([_problem(96, 64, 32)], hw), path, "json")  # no VENDOR entry now
    tables.clear_cache()
    dispatch.clear_caches()
    dispatch.reset_stats()
    got = tritonblas.matmul(a, b)
    assert dispatch.stats()["launches"] == 1, dispatch.stats()
    ref = a.double() @ b.double()
    assert float((got.double() - ref).norm() / ref.norm()) < 1e-2


@pytest.mark.timeout(300)
@pytest.mark.parametrize("in_table", [False, True])
def test_the_gluon_experiment_never_replaces_a_table_entry(monkeypatch, in_table):
    # TRITONBLAS_GLUON=1 replaces origami's pick only: a tile table's entry (a config or VENDOR) stands.
    # On CPU the Gluon route declines every call; a stand-in records which calls were offered to it.
    a, b = _dev(64, 32), _dev(32, 48, seed=1)
    hw = origami.load_profile("h200")
    offered = []
    monkeypatch.setenv("TRITONBLAS_GLUON", "1")
    monkeypatch.setattr(gluon_route, "gluon_gemm", lambda *args: offered.append(args[0].shape))
    entries = {_problem(64, 48, 32): tables.VENDOR, **tables.make_table([_problem(96, 64, 32)], hw).entries}
    if in_table:
        tables.set_table(tables.table_of(entries, hw))
    a2, b2 = _dev(96, 32, seed=2), _dev(32, 64, seed=3)
    dispatch.reset_stats()
    got = tritonblas.matmul(a, b)
    if in_table:
        assert torch.equal(got, torch.matmul(a, b)) and dispatch.stats()["vendor"] == 1  # torch's bits
    tritonblas.matmul(a2, b2)
    assert dispatch.stats()["launches"] == (1 if in_table else 2)  # origami's pick or the table's config ran
    assert offered == ([] if in_table else [a.shape, a2.shape]), offered
