"""Fixtures shared by the torch-layer tests."""

from __future__ import annotations

import pytest

from tritonblas import dispatch, routing


@pytest.fixture
def cpu_profile(device, monkeypatch):
    """On CPU (the interpreter) the dispatcher needs a named profile: h200. Stats start from zero."""
    if device == "cpu":
        monkeypatch.setenv("TRITONBLAS_PROFILE", "h200")
    dispatch.reset_stats()
    yield


@pytest.fixture
def route_checks(monkeypatch):
    """Counts the routes' kernel checks (``routing._kernel_ok``, read from the module at call time): a call
    the hot path serves adds none."""
    calls = []
    original = routing._kernel_ok

    def counted(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(routing, "_kernel_ok", counted)
    return calls


def _copies(fn) -> int:
    """Tensor copies made by ``fn()``, not counting the interpreter's own argument copies (they run
    inside its launch range, ``_interpreter.INTERPRETER_RANGE``; a GPU launch makes none)."""
    from torch.profiler import ProfilerActivity, profile

    from tritonblas._interpreter import INTERPRETER_RANGE

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()

    def inside_launch(e) -> bool:
        p = e.cpu_parent
        while p is not None:
            if p.name == INTERPRETER_RANGE:
                return True
            p = p.cpu_parent
        return False

    return sum(1 for e in prof.events() if e.name in ("aten::copy_", "aten::clone", "aten::contiguous")
               and not inside_launch(e))


@pytest.fixture
def count_copies():
    """``count_copies(fn)``: the tensor copies ``fn()`` makes outside the interpreter's launches."""
    return _copies
