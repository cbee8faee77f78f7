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

from origami.select import Estimate, clear_cache, explain, predict, rank, select, select_among, select_many, warmup  # noqa: E402
from origami.space import candidates  # noqa: E402

__all__ += ["Estimate", "rank", "select", "select_among", "predict", "explain", "select_many", "candidates", "warmup", "clear_cache"]
