"""What every benchmark script shares: the repository root on sys.path, the provenance of a run, and
the atomic CSV writer with ``#`` provenance lines (:func:`write_csv`).

``provenance(**extra)`` is the one definition of a run's provenance: git sha (``$GIT_SHA`` first,
for the device machine, whose copy of the tree has no ``.git``; ``-dirty`` when tracked files
differ), GPU (or "cpu"), torch / triton / python versions, UTC date; ``extra`` adds fields. Scripts
format it as their files need (``# key: value`` header lines, ``key=value`` cells).
"""

from __future__ import annotations

import datetime
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

__all__ = ["ROOT", "foreign_gpu", "git_sha", "provenance", "refuse_foreign_gpu", "utc_now", "watch_child", "write_csv"]


def foreign_gpu(hw, gpu_name: str, flag: str = "--any-gpu") -> str | None:
    """Why timings of the GPU named ``gpu_name`` must not land in the recorded data of profile ``hw``,
    or None when the profile names that part (:meth:`origami.hardware.HardwareProfile.name_match`, the
    dispatcher's rule). The device tool may hand out an H100 for an H200 call: its timings written into
    benchmarks/data/h200* would mix two parts in one sweep, the held-out split's included."""
    if hw.name_match(gpu_name):
        return None
    return (f"profile {hw.name} describes {', '.join(hw.device_names)}, but this GPU is "
            f"{gpu_name!r}: its timings do not belong in {hw.name}'s recorded data. Use this GPU's own "
            f"profile, or pass {flag} to time it anyway")


def refuse_foreign_gpu(ap, profile: str, index: int) -> None:
    """``ap.error`` (exit 2) naming ``--profile`` when CUDA GPU ``index`` is foreign to the profile
    (:func:`foreign_gpu`); the sweep scripts call it before timing anything unless ``--any-gpu``."""
    import origami
    import torch

    hw = origami.load_profile(profile)
    why = foreign_gpu(hw, torch.cuda.get_device_name(index))
    if why:
        ap.error(f"--profile {profile}: {why}")


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def git_sha(short: bool = False) -> str:
    """``$GIT_SHA``, else ``git rev-parse HEAD`` (+ ``-dirty`` when tracked files differ), else "unknown".
    On the device machine set ``GIT_SHA``: its copy of the tree may carry git metadata of an earlier
    commit (session 11's runs without it recorded the session's first commit, ``-dirty``)."""
    sha = os.environ.get("GIT_SHA", "")
    if sha:
        return sha
    try:
        sha = subprocess.run(["git", "rev-parse", *(["--short"] if short else []), "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (sha + ("-dirty" if dirty else "")) if sha else "unknown"


def provenance(*, short_sha: bool = False, **extra) -> dict:
    """The run's provenance as a dict (torch and triton imported here, lazily)."""
    out = {"git_sha": git_sha(short_sha)}
    try:
        import torch

        out["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        out["torch"] = torch.__version__
    except ImportError:
        out["gpu"], out["torch"] = "cpu", "none"
    try:
        import triton

        out["triton"] = triton.__version__
    except ImportError:
        out["triton"] = "none"
    out["python"] = platform.python_version()
    out.update(extra)
    out["date"] = utc_now()
    return out


def write_csv(path: "str | os.PathLike[str]", rows, fields, prov: dict, *, digits: int = 5) -> None:
    """Write ``rows`` (dicts) as CSV with columns ``fields``, after one ``# key: value`` line per
    provenance item, atomically (a temporary file renamed over ``path``: a reader never sees half a
    file, and an interrupted run keeps the previous one). Floats are written with ``digits``
    significant digits; missing cells are empty. The data is on disk (fsync) before the rename, and
    a failed write removes its temporary file and leaves ``path`` as it was. A provenance value is
    written on its one line (line breaks become spaces), so it cannot add a line that is not a
    ``#`` comment."""
    import csv
    import io

    from tritonblas.tables import AtomicFile

    buf = io.StringIO()
    for key, v in prov.items():
        buf.write(f"# {key}: {' '.join(str(v).splitlines())}\n")
    w = csv.DictWriter(buf, fieldnames=list(fields))
    w.writeheader()
    for r in rows:
        w.writerow({f: (f"{r[f]:.{digits}g}" if isinstance(r.get(f), float) else r.get(f, "")) for f in fields})
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with AtomicFile(path) as f:
        f.write(buf.getvalue())


def watch_child(cmd: list, *, timeout_s: float, first_timeout_s: float | None = None, env: dict | None = None):
    """Run ``cmd`` and yield what it reports, killing it when it goes quiet: for a child that prints
    one JSON object per line, ``{"start": ...}`` before each item and a result object after it.

    Yields ``("start", obj)``, ``("row", obj)``, then exactly one of ``("hang", last start or None)``
    (no line within ``timeout_s`` — ``first_timeout_s`` before the first line, which may include a
    compile — and the child was killed) or ``("exit", returncode, stderr tail)``. Used where a GPU
    launch may hang (a barrier waiting for ever): the hang becomes a result, not a stuck run."""
    import json
    import queue
    import threading

    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    err: list = []

    def pump_out():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=pump_out, daemon=True).start()
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    current, wait = None, first_timeout_s or timeout_s
    while True:
        try:
            line = lines.get(timeout=wait)
        except queue.Empty:
            proc.kill()
            proc.wait()
            yield ("hang", current)
            return
        wait = timeout_s
        if line is None:
            proc.wait()
            yield ("exit", proc.returncode, "".join(err)[-3000:])
            return
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        if "start" in obj:
            current = obj["start"]
            yield ("start", obj)
        else:
            yield ("row", obj)
