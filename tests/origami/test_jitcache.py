"""A read-only install (package directory and HOME not writable, no NUMBA_CACHE_DIR) imports and
caches the scorer under a per-user temp directory, or runs uncached when that is read-only too.

The install is a copy of origami + hwprofiles with ``chmod -R a-w``. Root ignores file modes, so
the child also refuses writes under the read-only roots at ``os.mkdir``/``os.open`` (what numba's
cache probe and origami._jitcache call), which makes the test mean the same as root and as a user.
"""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_SHIM = """
import os
ro = tuple(os.environ.pop("_TEST_RO_ROOTS").split(os.pathsep))
def _denied(p):
    p = os.path.abspath(os.fsdecode(p))
    return any(p == r or p.startswith(r + os.sep) for r in ro)
_mkdir, _open = os.mkdir, os.open
def mkdir(p, *a, **k):
    if _denied(p):
        raise PermissionError(13, "Read-only file system", p)
    return _mkdir(p, *a, **k)
def open_(p, flags, *a, **k):
    if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and _denied(p):
        raise PermissionError(13, "Read-only file system", p)
    return _open(p, flags, *a, **k)
os.mkdir, os.open = mkdir, open_
import logging
logging.basicConfig(level=logging.INFO, format="LOG %(levelname)s %(message)s")
import origami
from origami import _core
print("CACHE", _core.CACHE, _core._cdiv(7, 2))
"""


def _read_only(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _writable(path: Path) -> None:
    for p in [path, *path.rglob("*")]:
        p.chmod(p.stat().st_mode | stat.S_IWUSR)


@pytest.fixture
def install(tmp_path):
    site, home, tmp = tmp_path / "site", tmp_path / "home", tmp_path / "tmp"
    for pkg in ("origami", "hwprofiles"):
        shutil.copytree(ROOT / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    home.mkdir()
    tmp.mkdir()
    _read_only(site)
    _read_only(home)
    yield site, home, tmp
    _writable(tmp_path)


def _run(site: Path, home: Path, tmp: Path, ro: list[Path]) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "XDG_", "ORIGAMI_"))}
    env.update(HOME=str(home), TMPDIR=str(tmp), PYTHONPATH=str(site), _TEST_RO_ROOTS=os.pathsep.join(map(str, ro)))
    return subprocess.run([sys.executable, "-c", _SHIM], env=env, cwd=str(tmp), capture_output=True, text=True,
                          timeout=120)


def test_read_only_install_caches_in_temp_dir(install):
    site, home, tmp = install
    r = _run(site, home, tmp, [site, home])
    assert r.returncode == 0, r.stderr
    assert "CACHE True 4" in r.stdout
    logs = [line for line in r.stderr.splitlines() if line.startswith("LOG")]
    assert len(logs) == 1 and logs[0].startswith("LOG INFO") and "origami-numba-" in logs[0], r.stderr
    cached = list(tmp.glob("origami-numba-*/*/*.nbi"))
    assert cached, "no numba index file under the temp cache"
    assert not list(site.rglob("*.nbi"))


def test_no_writable_location_runs_uncached(install):
    site, home, tmp = install
    # tempfile.gettempdir() skips an unwritable TMPDIR for /tmp, /var/tmp, /usr/tmp, then the cwd
    r = _run(site, home, tmp, [site, home, tmp, Path("/tmp"), Path("/var/tmp"), Path("/usr/tmp")])
    assert r.returncode == 0, r.stderr
    assert "CACHE False 4" in r.stdout
    logs = [line for line in r.stderr.splitlines() if line.startswith("LOG")]
    assert len(logs) == 1 and logs[0].startswith("LOG WARNING") and "compiles once per process" in logs[0], r.stderr
