"""The GEMM domain types that every other module speaks: problems, kernel configs, hardware.

Nothing here imports torch._inductor; these are plain, hashable, msgpack-friendly values.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

#: Ops whose lowerings DIODE ranks.
SUPPORTED_OPS = ("mm", "addmm", "bmm", "baddbmm")
#: Input dtypes DIODE ranks (names as in ``str(torch.float16)`` without the ``torch.`` prefix).
SUPPORTED_DTYPES = ("float16", "bfloat16", "float32")
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1, "int8": 1}
#: Shared memory of one H100/H200 block (opt-in, bytes): what DIODE assumes when the hardware
#: description does not say.
HOPPER_SHARED_MEMORY_PER_BLOCK = 232448
#: ``GemmProblem.a_layout``/``b_layout`` values and ``GemmProblem.bias`` values.
LAYOUTS = ("row", "col", "strided")
BIASES = ("none", "row", "full")


@dataclass(frozen=True)
class GemmProblem:
    """One matrix multiplication: ``out[b] = A[b] @ B[b] (+ bias)``, A is MxK, B is KxN.

    ``a_layout``/``b_layout`` say which dimension is contiguous: ``"row"`` means the last
    (reduction dimension for A, N for B) has stride 1, ``"col"`` the other one (a transposed
    operand, as nn.Linear's weight is), ``"strided"`` neither.
    ``bias`` is ``"none"``, ``"row"`` (one value per output column, broadcast over rows, as
    nn.Linear's bias) or ``"full"`` (a full MxN addend).
    """

    op: str
    m: int
    n: int
    k: int
    batch: int = 1
    dtype: str = "float16"
    out_dtype: str = ""
    a_layout: str = "row"
    b_layout: str = "row"
    bias: str = "none"
    allow_tf32: bool = False

    def __post_init__(self) -> None:
        if not self.out_dtype:
            object.__setattr__(self, "out_dtype", self.dtype)

    @property
    def flops(self) -> float:
        """Floating-point operations of the product (2*B*M*N*K)."""
        return 2.0 * self.batch * self.m * self.n * self.k

    @property
    def min_bytes(self) -> float:
        """The fewest bytes a kernel must move: read A, B (and bias) once, write C once."""
        in_b = DTYPE_BYTES.get(self.dtype, 4)
        out_b = DTYPE_BYTES.get(self.out_dtype, 4)
        total = self.batch * (self.m * self.k + self.k * self.n) * in_b
        total += self.batch * self.m * self.n * out_b
        if self.bias == "row":
            total += self.n * out_b
        elif self.bias == "full":
            total += self.batch * self.m * self.n * out_b
        return float(total)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GemmProblem:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def describe(self) -> str:
        """A short human-readable form, e.g. ``mm 1024x4096x2048 bfloat16 row/col``."""
        size = f"{self.m}x{self.n}x{self.k}"
        if self.batch != 1:
            size = f"{self.batch}x{size}"
        extra = "" if self.bias == "none" else f" bias={self.bias}"
        tf32 = " tf32" if self.allow_tf32 else ""
        return f"{self.op} {size} {self.dtype} {self.a_layout}/{self.b_layout}{extra}{tf32}"


#: Candidate kinds. ``triton`` is Inductor's Triton GEMM template (block sizes matter); the
#: others are single kernels whose tile fields are zero.
KIND_TRITON = "triton"
KIND_ATEN = "aten"


@dataclass(frozen=True)
class KernelConfig:
    """One candidate kernel for a problem.

    ``template`` is Inductor's template uid (``triton::mm``, ``aten::addmm``, ...); ``kind`` its
    family (``triton``, ``aten``, ``triton_tma``, ``decompose_k``, ...). Tile fields are 0 for
    kinds that have none, but for decompose-k's ``block_k``, the number of slices it cuts K into
    (``block_m`` 0 still marks it tile-less to the features).
    """

    kind: str
    template: str = ""
    block_m: int = 0
    block_n: int = 0
    block_k: int = 0
    num_stages: int = 0
    num_warps: int = 0
    group_m: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> KernelConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def describe(self) -> str:
        if not self.block_m:
            split = f" k_split {self.block_k}" if self.block_k else ""
            return f"{self.template or self.kind}{split}"
        return (
            f"{self.template or self.kind} {self.block_m}x{self.block_n}x{self.block_k}"
            f" s{self.num_stages} w{self.num_warps} g{self.group_m}"
        )


#: KernelConfig's fields in order: the columns of a dataset shard's configs and the positions of
#: a problem list's configs.
CONFIG_FIELDS = tuple(f.name for f in dataclasses.fields(KernelConfig))


@dataclass(frozen=True)
class HardwareInfo:
    """What a scorer needs to know about a device.

    ``name`` is the identity used in cache keys and model matching (e.g. ``NVIDIA H100 80GB
    HBM3``). Peak rates are dense, in TFLOP/s per dtype name and GB/s; ``None`` where unknown.
    ``triton_tf32_rule`` says which Triton kernels of a float32 problem run TF32 (one of
    :data:`diode_backend.tf32.RULES`): empty for the running Inductor's, as at compile time; offline,
    that of the kernels a dataset timed.
    """

    name: str
    vendor: str
    device_type: str = "cuda"
    sm_count: int = 0
    compute_capability: tuple[int, int] = (0, 0)
    memory_bytes: int = 0
    l2_bytes: int = 0
    shared_memory_per_block: int = 0
    clock_mhz: int = 0
    peak_tflops: dict[str, float] = field(default_factory=dict, hash=False, compare=False)
    memory_bandwidth_gbps: float | None = None
    triton_tf32_rule: str = ""

    @property
    def shared_memory_limit(self) -> int:
        """Shared memory of one block in bytes: ``shared_memory_per_block``, or Hopper's where
        the description does not say."""
        return self.shared_memory_per_block or HOPPER_SHARED_MEMORY_PER_BLOCK

    @property
    def key(self) -> str:
        """Identity used in cache keys: name plus compute capability and SM count."""
        major, minor = self.compute_capability
        return f"{self.vendor}:{self.name}:sm{major}{minor}:{self.sm_count}"

    def to_dict(self) -> dict[str, Any]:
        data = dataclasses.asdict(self)
        data["compute_capability"] = list(self.compute_capability)
        if not self.triton_tf32_rule:  # the running Inductor's: cache and decision keys stay as they were
            del data["triton_tf32_rule"]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HardwareInfo:
        names = {f.name for f in dataclasses.fields(cls)}
        kwargs = {k: v for k, v in data.items() if k in names}
        if "compute_capability" in kwargs:
            kwargs["compute_capability"] = tuple(kwargs["compute_capability"])
        return cls(**kwargs)
