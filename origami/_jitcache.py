"""Where numba caches origami's compiled scorer: ``CACHE``, the ``cache=`` flag of every ``njit``.

numba's ``cache=True`` raises at decoration (so at ``import origami``) when none of its locations
is writable: ``$NUMBA_CACHE_DIR``, the ``__pycache__`` beside the source, the user-wide
``~/.cache/numba``. A read-only install with a read-only HOME (containers) has none. Then, and only
then, origami's own files are cached under a per-user temporary directory
(``<tempdir>/origami-numba-<uid>``, mode 0700, used only when this user owns it), with one INFO
line on the ``origami`` logger; if that is not writable either, the scorer runs uncached (compiled
once per process, ~10-20 s on 2 cores) with one WARNING line. Other packages' numba caching is
untouched: the extra locator answers only for files inside this package.
Evidence: tests/origami/test_jitcache.py imports a read-only copy of the package with a read-only
HOME and no NUMBA_CACHE_DIR (numba 0.68.1, 2026-12-01).
"""

from __future__ import annotations

import getpass
import logging
import os
import tempfile

from numba import njit

__all__ = ["CACHE", "temp_cache_dir"]

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_log = logging.getLogger("origami")


def temp_cache_dir() -> str | None:
    """The per-user fallback cache root (not created here); None when there is no usable temp dir."""
    uid = os.getuid() if hasattr(os, "getuid") else getpass.getuser()
    try:
        return os.path.join(tempfile.gettempdir(), f"origami-numba-{uid}")
    except OSError:  # tempfile: "No usable temporary directory found in [...]"
        return None


def _probe(x):
    return x


def _cacheable() -> bool:
    """Whether numba finds a cache location for a function in this package's directory."""
    try:
        njit(cache=True)(_probe)
    except RuntimeError:  # numba: "cannot cache function ...: no locator available for file ..."
        return False
    return True


def _own_dir(path: str) -> bool:
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError:
        return False
    return not hasattr(os, "getuid") or st.st_uid == os.getuid()


def _add_temp_locator(root: str | None) -> bool:
    """Append a locator for this package's files, rooted at temp_cache_dir(), to numba's list."""
    try:
        from numba.core import caching
        impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl")
        base = (caching._SourceFileBackedLocatorMixin, caching._CacheLocator)
    except (ImportError, AttributeError):
        return False
    if root is None or not _own_dir(root):
        return False

    class _TempDirLocator(*base):
        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = os.path.join(root, self.get_suitable_cache_subpath(py_file))

        def get_cache_path(self):
            return self._cache_path

        @classmethod
        def from_function(cls, py_func, py_file):
            if os.path.dirname(os.path.abspath(py_file)) != _PKG_DIR:
                return None
            return super().from_function(py_func, py_file)

    impl._locator_classes = [*impl._locator_classes, _TempDirLocator]
    return True


def _cache_flag() -> bool:
    if _cacheable():
        return True
    root = temp_cache_dir()
    if _add_temp_locator(root) and _cacheable():
        _log.info("origami: no writable numba cache location (NUMBA_CACHE_DIR, %s/__pycache__, ~/.cache); "
                  "caching the scorer in %s", _PKG_DIR, root)
        return True
    _log.warning("origami: no writable numba cache location (NUMBA_CACHE_DIR, %s/__pycache__, ~/.cache, %s); "
                 "the scorer compiles once per process", _PKG_DIR, root or "no temp dir")
    return False


CACHE = _cache_flag()
