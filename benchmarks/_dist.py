"""Benchmarks under ``torchrun``: one rank per GPU, any number of hosts, results merged on rank 0.

    torchrun --nproc-per-node gpu benchmarks/sweep.py --heldout                    # one host
    torchrun --nnodes 4 --nproc-per-node 8 --rdzv-backend c10d \\
             --rdzv-endpoint HOST0:29500 benchmarks/sweep.py --jobs llm grid       # four hosts

:func:`world` reads the launcher's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``,
``LOCAL_WORLD_SIZE``); without it (or with a world of one) a script keeps its single-process
behaviour. Under torchrun the process group is NCCL on GPUs and gloo on CPU (the CPU test lane:
kernels under Triton's interpreter). Ranks share nothing but the process group: no file system is
assumed common to the hosts, so results travel to rank 0 as pickled objects (``gather``), and
what rank 0 alone knows (the rows already recorded, for resuming) travels back (``broadcast``).

A sweep shard runs for hours while another finishes in minutes, so the group's collective timeout
is :data:`TIMEOUT` (a day), not torch's default (10 minutes for NCCL), which would abort the early
ranks waiting in the final gather.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass

__all__ = ["TIMEOUT", "World", "exit_process", "world"]

TIMEOUT = datetime.timedelta(hours=24)


@dataclass(frozen=True, slots=True)
class World:
    """This process's place among the ranks of one ``torchrun`` job."""

    rank: int
    size: int
    local_rank: int
    local_size: int

    def __post_init__(self):
        if not (0 <= self.rank < self.size and 0 <= self.local_rank < self.local_size <= self.size):
            raise ValueError(f"inconsistent torchrun environment: {self}")

    @property
    def is_root(self) -> bool:
        return self.rank == 0

    def shard(self, items: list) -> list:
        """This rank's items: every ``size``-th from ``rank`` (round-robin keeps long and short
        shapes mixed, as the shape sets are ordered by size)."""
        return list(items)[self.rank :: self.size]

    def device(self) -> str:
        """``cuda:<local rank>`` where there are GPUs, else ``cpu``."""
        import torch

        return f"cuda:{self.local_rank}" if torch.cuda.is_available() else "cpu"

    def init(self) -> None:
        """Join the process group (NCCL on GPU, gloo on CPU); on GPU the rank's device is made current
        first (NCCL's object collectives stage through the current device)."""
        import torch
        import torch.distributed as dist

        if dist.is_initialized():
            return
        if torch.cuda.is_available():
            torch.cuda.set_device(self.local_rank)
            dist.init_process_group("nccl", timeout=TIMEOUT, device_id=torch.device("cuda", self.local_rank))
        else:
            dist.init_process_group("gloo", timeout=TIMEOUT)

    def gather(self, obj) -> list | None:
        """Every rank's ``obj``, in rank order, on rank 0; None elsewhere."""
        import torch.distributed as dist

        out = [None] * self.size if self.is_root else None
        dist.gather_object(obj, out, dst=0)
        return out

    def broadcast(self, obj):
        """Rank 0's ``obj`` on every rank (the others pass anything, e.g. None)."""
        import torch.distributed as dist

        box = [obj]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def barrier(self) -> None:
        import torch.distributed as dist

        dist.barrier()

    def close(self) -> None:
        """Leave the group: a barrier first, so no rank tears its connections down while a peer still
        uses them (gloo then aborts the peer at exit: "terminate called without an active exception",
        seen once in CI under load, 2026-12-01), then destroy it."""
        import torch.distributed as dist

        if dist.is_initialized():
            try:
                dist.barrier()
            finally:
                dist.destroy_process_group()


def exit_process(rc: int) -> None:
    """End a benchmark script with exit status ``rc``. Under torchrun the process ends with
    ``os._exit`` once stdout, stderr and logging are flushed, skipping the interpreter's and C++'s
    exit-time destructors: a rank whose work, CSV (written atomically, closed) and :meth:`World.close`
    were all done was still seen to abort there with "terminate called without an active exception"
    (gloo/OpenMP worker threads torn down during finalisation; CI under load, twice on 2026-12-01,
    once after the barrier in ``close`` was added), which turns a finished job into a failed one.
    Outside torchrun it is ``sys.exit(rc)``."""
    import logging
    import sys

    if world() is None:
        sys.exit(rc)
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(int(rc or 0))


def world(environ=None) -> World | None:
    """The torchrun world this process is in, or None when it is not under torchrun (no
    ``WORLD_SIZE``/``RANK``) or the world has one rank: callers then run single-process."""
    env = os.environ if environ is None else environ
    if "WORLD_SIZE" not in env or "RANK" not in env:
        return None
    size = int(env["WORLD_SIZE"])
    if size <= 1:
        return None
    rank = int(env["RANK"])
    return World(rank, size, int(env.get("LOCAL_RANK", rank)), int(env.get("LOCAL_WORLD_SIZE", size)))
