"""origami test options: ``--update-golden`` regenerates tests/origami/golden/*.yaml.

pytest only honours ``pytest_addoption`` in conftest files it loads at start-up, i.e. when
``tests/origami`` (or a file in it) is on the command line. ``UPDATE_GOLDEN=1`` works from anywhere.
"""

from __future__ import annotations

import os

import pytest


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="rewrite tests/origami/golden/<profile>.yaml from the current model")


@pytest.fixture(scope="session")
def update_golden(request) -> bool:
    try:
        flag = bool(request.config.getoption("--update-golden"))
    except ValueError:  # option not registered (this conftest was not an initial one)
        flag = False
    return flag or os.environ.get("UPDATE_GOLDEN", "") not in ("", "0")


@pytest.fixture
def fitted_toolchain(monkeypatch):
    """The Triton release the shipped profiles and the golden rankings were made with (3.6): the
    model's compiler-dependent rule (gfx950's LDS, origami.toolchain) as there, whatever is installed."""
    from origami import toolchain

    monkeypatch.setenv(toolchain.ENV_TRITON_VERSION, "3.6")
