"""origami: an analytical roofline model that picks GEMM kernel configurations without autotuning.

Pure CPU (numpy + numba); never imports torch or triton.
"""

from origami.config import Kind, TileConfig
from origami.hardware import HardwareProfile, ProfileError, list_profiles, load_profile
from origami.problem import DType, GemmProblem, Layout

__all__ = [
    "DType", "Layout", "GemmProblem", "Kind", "TileConfig",
    "HardwareProfile", "ProfileError", "load_profile", "list_profiles",
]

from origami.select import (Estimate, candidates, clear_cache, explain, predict, rank, select, select_among,  # noqa: E402
                            select_many, warmup)

__all__ += ["Estimate", "rank", "select", "select_among", "predict", "explain", "select_many", "candidates", "warmup", "clear_cache"]
