"""The one dataset format: measured GEMM timings, versioned msgpack, columnar, append-only shards.

A dataset is a directory of shard files (``*.msgpack``, or ``*.msgpack.gz`` gzip-compressed: the
committed ones) or a single shard file. Each shard is one msgpack map, written once (temp file
then ``os.replace``) and never modified::

    {"format": "diode-gemm-timings", "version": 1,
     "meta": {"hardware": HardwareInfo.to_dict(), "environment": {...}},
     "problems": {column: [one value per problem], ..., "offset": [...], "count": [...]},
     "configs": {column: [one value per distinct config]},
     "timings": {"config": <uint32 little-endian bytes>, "time_us": <float32 little-endian bytes>}}

Problem ``i`` owns timing rows ``offset[i] : offset[i] + count[i]``; each row names a config by
its index in the ``configs`` table and its median time in microseconds. docs/dataset.md is the
full schema. Writers append new shards (:class:`ShardWriter`), so an interrupted collection keeps
every flushed problem and resumes by skipping :func:`collected_problems`.

One module because it is one versioned format: its reader, writer and checks change together.
"""

from __future__ import annotations

import array
import dataclasses
import math
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgpack

from .. import codec
from ..files import GZIP_SUFFIX, RefusedFile, compressed_as_named, decompressed_as_named, read_regular_file, write_atomic
from ..problem import BIASES, CONFIG_FIELDS, DTYPE_BYTES, LAYOUTS, SUPPORTED_DTYPES, SUPPORTED_OPS, GemmProblem, HardwareInfo, KernelConfig
from ..tf32 import RULES, inductor_rule

FORMAT = "diode-gemm-timings"
VERSION = 1
SPLITS = ("train", "validation")
SHARD_SUFFIX = ".msgpack"
#: The names of shard files: plain, and gzip-compressed.
SHARD_SUFFIXES = (SHARD_SUFFIX, SHARD_SUFFIX + GZIP_SUFFIX)
#: A shard of a whole collection run is a few MiB; the cap only stops a device or a runaway file.
MAX_SHARD_BYTES = 2**30

_PROBLEM_FIELDS = tuple(f.name for f in dataclasses.fields(GemmProblem))
_TAG_FIELDS = ("split", "generator", "source", "space", "failed")
_ROW_FIELDS = ("offset", "count")
#: What a shard's problem and config columns may hold, checked on read: one of a few names
#: (``_ALLOWED``), any text, a flag, or else a whole number (>= 1 for the sizes, >= 0 for the
#: tile fields and counts).
_ALLOWED: dict[str, tuple[str, ...]] = {
    "op": SUPPORTED_OPS, "dtype": SUPPORTED_DTYPES, "out_dtype": tuple(DTYPE_BYTES),
    "a_layout": LAYOUTS, "b_layout": LAYOUTS, "bias": BIASES, "split": SPLITS,
}  # fmt: skip
_TEXT = ("generator", "source", "space", "kind", "template")
_FLAGS = ("allow_tf32",)
_SIZES = ("m", "n", "k", "batch")


class DatasetError(ValueError):
    """A file is not a dataset this version can read; the message names the file."""


@dataclass(frozen=True)
class ProblemTimings:
    """Every measured candidate of one GEMM problem.

    ``times_us[i]`` is the median runtime of ``configs[i]`` in microseconds. Candidates that
    failed (did not compile, ran out of resources, gave a wrong result) are left out and counted
    in ``failed``. ``generator`` names the shape generator, ``source`` the collector (``sweep``,
    ``feedback``), ``space`` which candidates were timed (``exhaustive``, ``sample/4``,
    ``default``, ``observed``). ``tf32_rule`` is the rule (:mod:`diode_backend.tf32`) by which
    its timed Triton kernels ran TF32, set from its shard on read (:func:`timed_tf32_rule`); it is
    no shard column, since a shard has one rule, recorded in its meta. Empty where unknown (a
    problem not read from a shard), and then the hardware's rule holds (:func:`timed_hardware`).
    """

    problem: GemmProblem
    configs: tuple[KernelConfig, ...]
    times_us: tuple[float, ...]
    split: str = "train"
    generator: str = ""
    source: str = "sweep"
    space: str = ""
    failed: int = 0
    tf32_rule: str = ""

    def __post_init__(self) -> None:
        if len(self.configs) != len(self.times_us):
            raise ValueError(f"{len(self.configs)} configs but {len(self.times_us)} times")
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, not {self.split!r}")

    @property
    def best_us(self) -> float:
        """The fastest measured time, in microseconds (``inf`` with no candidates)."""
        return min(self.times_us, default=math.inf)

    @property
    def best_config(self) -> KernelConfig | None:
        if not self.times_us:
            return None
        return self.configs[min(range(len(self.times_us)), key=self.times_us.__getitem__)]


@dataclass(frozen=True)
class DatasetMeta:
    """Where and how a shard was measured. ``environment`` holds driver, torch and triton
    versions, the date, the command and the timing method (see docs/dataset.md)."""

    hardware: HardwareInfo
    environment: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"hardware": self.hardware.to_dict(), "environment": dict(self.environment)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DatasetMeta:
        return cls(HardwareInfo.from_dict(data["hardware"]), dict(data.get("environment", {})))


@dataclass
class Dataset:
    """Problems loaded from one or more shards of one device; ``runs`` is each shard's meta.
    Each problem's ``tf32_rule`` is the rule by which its timed Triton kernels ran TF32, and its
    features describe those kernels (:func:`timed_hardware`); ``hardware.triton_tf32_rule`` is
    the rule of them all where they share one, else empty."""

    hardware: HardwareInfo
    problems: list[ProblemTimings]
    runs: list[DatasetMeta]

    def split(self, name: str) -> list[ProblemTimings]:
        """The problems tagged ``name`` (``train`` or ``validation``)."""
        if name not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, not {name!r}")
        return [p for p in self.problems if p.split == name]

    def __len__(self) -> int:
        return len(self.problems)

    def __iter__(self) -> Iterator[ProblemTimings]:
        return iter(self.problems)


# -- writing ------------------------------------------------------------------------------------


def encode_shard(meta: DatasetMeta, problems: Sequence[ProblemTimings]) -> bytes:
    """One shard's bytes: the problems as columns, configs deduplicated into a table. Raises
    ValueError where a problem's ``tf32_rule`` is not the one the shard would read back as
    (:func:`meta_of_rule` makes the meta of one rule's shard)."""
    rules = {item.tf32_rule for item in problems} - {""}
    if rules and rules != {timed_tf32_rule(meta, problems)}:
        raise ValueError(
            f"problems of TF32 rule {', '.join(sorted(rules))} in a shard that reads back as "
            f"{timed_tf32_rule(meta, problems)!r}: write one shard per rule, each with meta_of_rule's meta"
        )
    config_index: dict[KernelConfig, int] = {}
    rows = array.array("I")
    times = array.array("f")
    offsets, counts = [], []
    for item in problems:
        offsets.append(len(rows))
        counts.append(len(item.configs))
        for config, time_us in zip(item.configs, item.times_us):
            rows.append(config_index.setdefault(config, len(config_index)))
            times.append(time_us)
    configs = list(config_index)
    problem_columns: dict[str, list[Any]] = {
        name: [getattr(item.problem, name) for item in problems] for name in _PROBLEM_FIELDS
    }
    problem_columns.update({name: [getattr(item, name) for item in problems] for name in _TAG_FIELDS})
    problem_columns["offset"] = offsets
    problem_columns["count"] = counts
    payload = {
        "format": FORMAT,
        "version": VERSION,
        "meta": meta.to_dict(),
        "problems": problem_columns,
        "configs": {name: [getattr(c, name) for c in configs] for name in CONFIG_FIELDS},
        "timings": {"config": codec.pack("I", rows), "time_us": codec.pack("f", times)},
    }
    return msgpack.packb(payload, use_bin_type=True)


def write_shard(path: str | os.PathLike, meta: DatasetMeta, problems: Sequence[ProblemTimings]) -> Path:
    """Write one shard atomically (a reader never sees half a file; gzip-compressed where
    ``path`` ends in ``.msgpack.gz``) and return its path."""
    return write_atomic(path, compressed_as_named(path, encode_shard(meta, problems)))


class ShardWriter:
    """Appends problems to a dataset directory, one new shard per :meth:`flush`.

    Flushes by itself every ``every`` problems or ``seconds`` seconds, and on ``close`` (also
    when the ``with`` block ends by an exception), so an interrupted collection keeps all but the
    problems added since the last flush. ``tag`` keeps the shard names of concurrent writers
    (one per GPU) apart.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        meta: DatasetMeta,
        *,
        tag: str = "",
        every: int = 64,
        seconds: float = 60.0,
    ) -> None:
        self.directory = Path(directory)
        self.meta = meta
        self.every = every
        self.seconds = seconds
        self.paths: list[Path] = []
        self._pending: list[ProblemTimings] = []
        self._last_flush = time.monotonic()
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
        self._prefix = f"shard-{stamp}-{os.getpid()}{'-' + tag if tag else ''}"

    def add(self, item: ProblemTimings) -> None:
        self._pending.append(item)
        if len(self._pending) >= self.every or time.monotonic() - self._last_flush >= self.seconds:
            self.flush()

    def flush(self) -> Path | None:
        self._last_flush = time.monotonic()
        if not self._pending:
            return None
        path = self.directory / f"{self._prefix}-{len(self.paths):05d}{SHARD_SUFFIX}"
        write_shard(path, self.meta, self._pending)
        self._pending = []
        self.paths.append(path)
        return path

    def close(self) -> None:
        self.flush()

    def __enter__(self) -> ShardWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- reading ------------------------------------------------------------------------------------


def shard_paths(path: str | os.PathLike) -> list[Path]:
    """The shard files of a dataset: the file itself, or a directory's ``*.msgpack`` and
    ``*.msgpack.gz`` (sorted)."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.name.endswith(SHARD_SUFFIXES) and not p.name.startswith("."))
    if path.is_file():
        return [path]
    raise DatasetError(f"{path}: no such dataset file or directory")


def read_shard(path: str | os.PathLike) -> tuple[DatasetMeta, list[ProblemTimings]]:
    """Decode one shard, checking every column (lengths, types, known ops, dtypes, layouts,
    config indices, finite positive times); a file that is not a shard this version reads, or a
    damaged one, raises :class:`DatasetError` naming the file, what is wrong and the fix."""
    path = Path(path)
    fix = "collect it again or move it out of the dataset"
    try:
        data = decompressed_as_named(path, read_regular_file(path, MAX_SHARD_BYTES), MAX_SHARD_BYTES)
    except RefusedFile as err:
        raise DatasetError(str(err)) from err
    except ValueError as err:
        raise DatasetError(f"{err}; {fix}") from err
    try:
        payload = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError) as err:
        raise DatasetError(f"{path}: not a msgpack dataset shard ({err}); {fix}") from err
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else type(payload).__name__
        raise DatasetError(f"{path}: format {found!r} is not {FORMAT!r}; {fix}")
    if payload.get("version") != VERSION:
        raise DatasetError(
            f"{path}: {FORMAT} version {payload.get('version')!r}, this diode-backend reads version "
            f"{VERSION}; read it with the diode-backend that wrote it, or {fix}"
        )
    try:
        meta, items = DatasetMeta.from_dict(payload["meta"]), _decode_problems(payload)
    except (KeyError, TypeError, ValueError) as err:
        detail = f"no {err.args[0]!r}" if isinstance(err, KeyError) else str(err)
        raise DatasetError(f"{path}: a damaged {FORMAT} v{VERSION} shard ({detail}); {fix}") from err
    try:
        rule = timed_tf32_rule(meta, items)
    except ValueError as err:
        raise DatasetError(f"{path}: {err}") from None
    return meta, [dataclasses.replace(item, tf32_rule=rule) for item in items]


def load_dataset(paths: str | os.PathLike | Iterable[str | os.PathLike]) -> Dataset:
    """Load every shard under ``paths`` (files or directories) as one dataset.

    All shards must come from the same device (:attr:`HardwareInfo.key`). Each problem keeps its
    shard's TF32 rule (:attr:`ProblemTimings.tf32_rule`); the dataset's
    ``hardware.triton_tf32_rule`` is the rule of all shards where they share one, else empty. A
    problem that appears in several shards is kept once (its first occurrence, in path order).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    files = [shard for p in paths for shard in shard_paths(p)]
    if not files:
        raise DatasetError(f"{', '.join(map(str, paths))}: no shards ({' or '.join(SHARD_SUFFIXES)} files)")
    runs: list[DatasetMeta] = []
    problems: list[ProblemTimings] = []
    seen: set[GemmProblem] = set()
    hardware: HardwareInfo | None = None
    rules: set[str] = set()
    for file in files:
        meta, items = read_shard(file)
        if hardware is None:
            hardware = meta.hardware
        elif meta.hardware.key != hardware.key:
            raise DatasetError(f"{file}: measured on {meta.hardware.key}, the others on {hardware.key}")
        rules.add(timed_tf32_rule(meta, items))
        runs.append(meta)
        for item in items:
            if item.problem not in seen:
                seen.add(item.problem)
                problems.append(item)
    assert hardware is not None
    shared = rules.pop() if len(rules) == 1 else ""
    return Dataset(dataclasses.replace(hardware, triton_tf32_rule=shared), problems, runs)


def timed_hardware(hardware: HardwareInfo) -> Callable[[ProblemTimings], HardwareInfo]:
    """A function giving the description to compute a problem's features or predictions with:
    ``hardware`` with the problem's ``tf32_rule`` (``hardware`` itself where that rule is empty or
    already ``hardware``'s), one copy per rule."""
    copies = {hardware.triton_tf32_rule: hardware, "": hardware}

    def of(item: ProblemTimings) -> HardwareInfo:
        found = copies.get(item.tf32_rule)
        if found is None:
            found = copies[item.tf32_rule] = dataclasses.replace(hardware, triton_tf32_rule=item.tf32_rule)
        return found

    return of


def timed_tf32_rule(meta: DatasetMeta, problems: Sequence[ProblemTimings]) -> str:
    """The rule (:mod:`diode_backend.tf32`) by which the Triton kernels of a shard ran TF32:
    ``environment.triton_tf32_rule`` where the collector recorded it; else, for the sweep's
    shards, ``"alignment"`` (its kernels' rule until it recorded one: every H100 shard), and for
    Inductor's own timings the default rule of the recorded ``environment.torch`` (the running
    torch's where none is). Raises ValueError for a recorded rule or version it does not know."""
    recorded = meta.environment.get("triton_tf32_rule")
    if recorded is not None:
        if recorded not in RULES:
            raise ValueError(f"environment.triton_tf32_rule {recorded!r} is not one of {', '.join(RULES)}")
        return recorded
    if problems and all(item.source == "sweep" for item in problems):
        return "alignment"
    return inductor_rule(str(meta.environment.get("torch") or ""))


def meta_of_rule(meta: DatasetMeta, rule: str, problems: Sequence[ProblemTimings]) -> DatasetMeta:
    """``meta`` for a shard of ``problems`` timed under TF32 rule ``rule``: as it is where such a
    shard reads back as ``rule`` (:func:`timed_tf32_rule`), else with ``rule`` recorded in its
    environment. A shard has one rule, so problems of different rules go to different shards."""
    if timed_tf32_rule(meta, problems) == rule:
        return meta
    return DatasetMeta(meta.hardware, {**meta.environment, "triton_tf32_rule": rule})


def collected_problems(directory: str | os.PathLike) -> set[GemmProblem]:
    """Problems already stored under ``directory`` (empty if it does not exist): what a resumed
    collection skips."""
    if not Path(directory).exists():
        return set()
    return {item.problem for shard in shard_paths(directory) for item in read_shard(shard)[1]}


def merge_datasets(inputs: Iterable[str | os.PathLike], output: str | os.PathLike, compress: bool = False) -> list[Path]:
    """Compact the shards under ``inputs`` into ``output`` (a directory): one shard per distinct
    run meta and TF32 rule (:func:`meta_of_rule`), problems deduplicated as in
    :func:`load_dataset`, each keeping its rule; gzip-compressed with ``compress``. Returns the
    shards written."""
    inputs = list(inputs)
    dataset = load_dataset(inputs)
    by_run: dict[tuple[bytes, str], tuple[DatasetMeta, list[ProblemTimings]]] = {}
    owner = {}
    for file in (shard for p in inputs for shard in shard_paths(p)):
        meta, items = read_shard(file)
        packed = msgpack.packb(meta.to_dict(), use_bin_type=True)
        for item in items:
            key = (packed, item.tf32_rule)
            by_run.setdefault(key, (meta, []))
            owner.setdefault(item.problem, key)
    for item in dataset.problems:
        by_run[owner[item.problem]][1].append(item)
    output = Path(output)
    return [
        write_shard(output / f"part-{i:03d}{SHARD_SUFFIXES[compress]}", meta_of_rule(meta, rule, items), items)
        for i, ((_, rule), (meta, items)) in enumerate((k, v) for k, v in by_run.items() if v[1])
    ]


def summarize(dataset: Dataset) -> dict[str, Any]:
    """Counts a person checks before training: problems and timed pairs per split, and problems
    per op, dtype (``float32+tf32`` when TF32 is allowed), layout, bias, generator and space."""

    def count(key) -> dict[str, int]:
        out: dict[str, int] = {}
        for item in dataset.problems:
            name = key(item)
            out[name] = out.get(name, 0) + 1
        return dict(sorted(out.items()))

    return {
        "hardware": dataset.hardware.key,
        "shards": len(dataset.runs),
        "problems": len(dataset.problems),
        "pairs": sum(len(p.times_us) for p in dataset.problems),
        "failed_pairs": sum(p.failed for p in dataset.problems),
        "split": count(lambda p: p.split),
        "pairs_by_split": {
            s: sum(len(p.times_us) for p in dataset.problems if p.split == s) for s in SPLITS
        },
        "op": count(lambda p: p.problem.op),
        "dtype": count(lambda p: p.problem.dtype + ("+tf32" if p.problem.allow_tf32 else "")),
        "layout": count(lambda p: f"{p.problem.a_layout}/{p.problem.b_layout}"),
        "bias": count(lambda p: p.problem.bias),
        "generator": count(lambda p: p.generator),
        "source": count(lambda p: p.source),
        "space": count(lambda p: p.space),
    }


def _decode_problems(payload: dict[str, Any]) -> list[ProblemTimings]:
    problems = _columns(payload["problems"], "problem", _PROBLEM_FIELDS + _TAG_FIELDS + _ROW_FIELDS)
    configs = [KernelConfig(**fields) for fields in _columns(payload["configs"], "config", CONFIG_FIELDS)]
    rows = codec.unpack("I", payload["timings"]["config"])
    times = codec.unpack("f", payload["timings"]["time_us"])
    if len(rows) != len(times):
        raise ValueError(f"{len(rows)} timing rows name a config but {len(times)} have a time")
    if rows and max(rows) >= len(configs):
        row = next(i for i, index in enumerate(rows) if index >= len(configs))
        raise ValueError(f"timing row {row} names config {rows[row]}, past the {len(configs)} configs")
    for row, time_us in enumerate(times):
        if not 0.0 < time_us < math.inf:  # NaN fails too
            raise ValueError(f"timing row {row} is {time_us} us; times are finite positive microseconds")
    items = []
    for i, fields in enumerate(problems):
        start, count = fields["offset"], fields["count"]
        if start + count > len(rows):
            raise ValueError(f"problem {i} points past the {len(rows)} timing rows")
        items.append(
            ProblemTimings(
                problem=GemmProblem(**{name: fields[name] for name in _PROBLEM_FIELDS}),
                configs=tuple(configs[j] for j in rows[start : start + count]),
                times_us=tuple(times[start : start + count]),
                **{name: fields[name] for name in _TAG_FIELDS},
            )
        )
    return items


def _columns(table: Any, what: str, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """A shard's column table (``what``: ``problem`` or ``config``) as one dict of fields per
    entry, every value checked against its column's rule."""
    if not isinstance(table, dict):
        raise ValueError(f"the {what} columns are a {type(table).__name__}, not a map")
    for name in names:
        if not isinstance(table.get(name), list):
            raise ValueError(f"no {what} column {name!r}")
    length = len(table[names[0]])
    for name in names:
        if len(table[name]) != length:
            raise ValueError(f"{what} column {name!r} has {len(table[name])} values, the other {what} columns {length}")
    records = []
    for i in range(length):
        fields = {name: table[name][i] for name in names}
        for name, value in fields.items():
            wanted = _wanted(name, value)
            if wanted:
                raise ValueError(f"{what} {i}: {name} {value!r} is not {wanted}")
        records.append(fields)
    return records


def _wanted(column: str, value: Any) -> str:
    """What ``value`` should have been in ``column``, or ``""`` when it is fine."""
    if column in _ALLOWED:
        allowed = _ALLOWED[column]
        return "" if isinstance(value, str) and value in allowed else f"one of {', '.join(allowed)}"
    if column in _TEXT:
        return "" if isinstance(value, str) else "text"
    if column in _FLAGS:
        return "" if isinstance(value, bool) else "true or false"
    least = 1 if column in _SIZES else 0
    return "" if type(value) is int and value >= least else f"a whole number >= {least}"
