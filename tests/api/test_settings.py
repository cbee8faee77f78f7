"""tritonblas.settings' per-call environment readers follow every change made through os.environ."""

from __future__ import annotations

import os

from tritonblas import settings


def test_raw_readers_follow_os_environ(monkeypatch):
    monkeypatch.delenv("TRITONBLAS_FAST", raising=False)
    monkeypatch.delenv("TRITONBLAS_TABLE", raising=False)
    read = settings.raw_reader("TRITONBLAS_FAST", "TRITONBLAS_TABLE")
    off = settings.raw_equals("TRITONBLAS_FAST", "0")
    before = read()
    assert before == (None, None) and not off()
    monkeypatch.setenv("TRITONBLAS_FAST", "0")
    assert off() and read() != before
    os.environ["TRITONBLAS_FAST"] = "1"
    assert not off()
    os.environ["TRITONBLAS_TABLE"] = "t.json"
    assert read()[1] is not None and read() != (read()[0], None)
    del os.environ["TRITONBLAS_TABLE"]
    assert read()[1] is None


def test_interpret_reads_triton_interpret_as_triton_does(monkeypatch):
    """Triton takes TRITON_INTERPRET=true/yes/on (any case) as on and interprets the kernels; tritonblas
    took only "1", so with "true" it sent every CPU call to torch while Triton interpreted."""
    from triton._C.libtriton import getenv_bool

    from tritonblas import _interpreter

    for value in ("1", "true", "TRUE", "yes", "On", "y", "0", "false", "no", "", "banana", " 1"):
        monkeypatch.setenv("TRITON_INTERPRET", value)
        assert settings.interpret() is bool(getenv_bool("TRITON_INTERPRET", False)), value
        # the kernels run interpreted only if they were decorated under the interpreter too (a GPU process
        # built them for the GPU: CPU tensors are refused there, _interpreter.cpu_refusal)
        assert _interpreter.interpreting() is (settings.interpret() and _interpreter.kernels_interpreted())
    monkeypatch.delenv("TRITON_INTERPRET")
    assert not settings.interpret()


def test_triton_interpret_true_runs_the_kernels_on_cpu(monkeypatch):
    import pytest
    import torch

    import tritonblas
    from tritonblas import dispatch

    if torch.cuda.is_available():
        pytest.skip("a CPU-only check (the interpreter running CPU tensors); the GPU suite runs the kernels on the GPU")
    monkeypatch.setenv("TRITON_INTERPRET", "true")
    monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    a, b = torch.randn(9, 12, dtype=torch.float64).float(), torch.randn(12, 7, dtype=torch.float64).float()
    dispatch.reset_stats()
    out = tritonblas.matmul(a, b)
    assert dispatch.stats()["launches"] == 1 and dispatch.stats()["fallbacks"] == 0
    torch.testing.assert_close(out, (a.double() @ b.double()).float(), rtol=1e-5, atol=1e-5)


def test_the_readme_documents_every_variable():
    """README.md's environment table names every variable tritonblas reads (settings.ALL)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme[readme.index("### Environment variables"):]
    missing = [name for name in settings.ALL if f"`{name}" not in table]
    assert not missing, f"README.md's environment table does not document: {missing}"
