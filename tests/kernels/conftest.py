"""Fixtures of the kernel tests: the profiles the plans are made for."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def h200():
    import origami

    return origami.load_profile("h200")


@pytest.fixture(scope="session")
def mi300x(tmp_path_factory):
    """The shipped MI300X profile, or (while it is not there) one derived from h200.yaml."""
    import origami

    if "mi300x" in origami.list_profiles():
        return origami.load_profile("mi300x")
    from importlib import resources

    text = resources.files("hwprofiles").joinpath("h200.yaml").read_text()
    for old, new in (("name: h200", "name: amdtest"), ("vendor: nvidia", "vendor: amd"),
                     ("arch: sm_90", "arch: gfx942"), ("compute_units: 132", "compute_units: 304"),
                     ("chiplets: 1", "chiplets: 8"),
                     ("dispatch: linear", "dispatch: round_robin"), ("warp_size: 32", "warp_size: 64")):
        text = text.replace(old, new)
    path = tmp_path_factory.mktemp("profiles") / "amdtest.yaml"
    path.write_text(text)
    return origami.load_profile(str(path))
