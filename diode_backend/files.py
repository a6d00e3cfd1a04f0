"""Files DIODE writes so that a reader never sees half of one, and reads without trusting them
(a FIFO, a device or a huge file must not hang or exhaust a compile)."""

from __future__ import annotations

import gzip
import json
import os
import stat
import tempfile
import zlib
from pathlib import Path
from typing import Any

#: A file DIODE reads or writes under a name ending so is gzip-compressed (a committed dataset
#: shard, a long problem list or a large results file of ``benchmarks/``, so that the committed
#: data fits the GPU machine's copy of the tree).
GZIP_SUFFIX = ".gz"
#: A results file of ``benchmarks/`` is at most a few MiB; the cap only stops a device or a
#: runaway file, read or gunzipped.
MAX_JSON_BYTES = 2**30


def write_atomic(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o644, create_folder: bool = True
) -> Path:
    """Write ``data`` to ``path`` through a temporary file beside it (``.<name>.<random>.tmp``),
    synced, then renamed over ``path`` (``mode``: the file's permissions; the temporary file is
    private until then). The parent folder is created unless ``create_folder`` is False (then a
    missing folder raises ``FileNotFoundError``); a failed write leaves no temporary file behind."""
    path = Path(path)
    if create_folder:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    return path


def compressed_as_named(path: str | os.PathLike[str], data: bytes) -> bytes:
    """``data`` as a file at ``path`` holds it: gzip-compressed (reproducibly: no time stamp)
    where the name ends in :data:`GZIP_SUFFIX`, else as is."""
    return gzip.compress(data, mtime=0) if Path(path).name.endswith(GZIP_SUFFIX) else data


def decompressed_as_named(path: str | os.PathLike[str], data: bytes, max_bytes: int) -> bytes:
    """The bytes a file at ``path`` holding ``data`` stands for: gunzipped (at most
    ``max_bytes`` of them, so a small file cannot expand to exhaust memory) where the name ends
    in :data:`GZIP_SUFFIX`, else ``data``.

    :raises RefusedFile: it expands past ``max_bytes``.
    :raises ValueError: it is not gzip data, or is cut short.
    """
    if not Path(path).name.endswith(GZIP_SUFFIX):
        return data
    stream = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = stream.decompress(data, max_bytes + 1)
    except zlib.error as err:
        raise ValueError(f"{path}: not gzip data ({err})") from None
    if len(out) > max_bytes:
        raise RefusedFile(f"{path}: expands past the {max_bytes} bytes DIODE reads from such a file")
    if not stream.eof:
        raise ValueError(f"{path}: gzip data cut short")
    return out


class RefusedFile(OSError):
    """A path DIODE will not read: not a regular file (a FIFO, a device, a link it must not
    follow) or larger than the cap its reader sets. The message names the file and the fix."""


def read_regular_file(path: str | os.PathLike[str], max_bytes: int, follow_links: bool = True) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``max_bytes`` bytes.

    Opened non-blocking (a FIFO would block ``open`` itself) and checked with ``fstat`` on the
    open descriptor, so what is checked is what is read; with ``follow_links=False`` a symbolic
    link is refused too. Reads at most ``max_bytes + 1`` bytes: a file that grows while read
    still cannot take unbounded memory.

    :raises FileNotFoundError: nothing at ``path``.
    :raises RefusedFile: not a regular file, or larger than ``max_bytes``.
    :raises OSError: any other failure to read it.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    if not follow_links:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        if not follow_links and os.path.islink(path):  # O_NOFOLLOW's ELOOP
            raise RefusedFile(f"{path}: a symbolic link where DIODE expects a regular file; delete it") from err
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RefusedFile(
                f"{path}: not a regular file ({_file_kind(info.st_mode)}); DIODE reads only regular "
                "files: replace it with the file it should be, or delete it"
            )
        if info.st_size > max_bytes:
            raise RefusedFile(f"{path}: {info.st_size} bytes, more than the {max_bytes} DIODE reads from such a file")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1 << 20, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise RefusedFile(f"{path}: grew past the {max_bytes} bytes DIODE reads from such a file")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path: str | os.PathLike[str], max_bytes: int = MAX_JSON_BYTES) -> Any:
    """The JSON value of the file at ``path``, gunzipped first where its name ends in
    :data:`GZIP_SUFFIX`: a reader takes ``NAME.json`` and ``NAME.json.gz`` alike. At most
    ``max_bytes`` bytes are read (:func:`read_regular_file`), and at most as many gunzipped
    (:func:`decompressed_as_named`).

    :raises FileNotFoundError: nothing at ``path``.
    :raises RefusedFile: not a regular file, larger than ``max_bytes``, or expands past them.
    :raises ValueError: not gzip data where the name says so, or not JSON.
    """
    return json.loads(decompressed_as_named(path, read_regular_file(path, max_bytes), max_bytes))


def _file_kind(mode: int) -> str:
    for test, kind in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a folder")):  # fmt: skip
        if test(mode):
            return kind
    return "not a plain file"
