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
