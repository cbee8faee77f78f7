"""Fixtures shared by the torch-layer tests."""

from __future__ import annotations

import pytest

from tritonblas import dispatch


@pytest.fixture
def cpu_profile(device, monkeypatch):
    """On CPU (the interpreter) the dispatcher needs a named profile: h200. Stats start from zero."""
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    dispatch.reset_stats()
    yield
