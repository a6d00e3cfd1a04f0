"""The progress bar of the offline tools: one line with rate and ETA on a terminal; on anything
else (logs, CI) a whole line every 30 seconds, so logs stay readable. No dependency."""

from __future__ import annotations

import sys
import time


class Progress:
    """``update(done, note)`` redraws at most twice a second; ETA from the average rate;
    ``line(text)`` prints a line of its own (the bar is redrawn at the next update)."""

    def __init__(self, total: int, *, enabled: bool = True, width: int = 30, stream=None, unit: str = "problems") -> None:
        self.total = total
        self.enabled = enabled
        self.width = width
        self.unit = unit
        self.stream = stream or sys.stderr
        self.started = time.monotonic()
        self._drawn = 0.0
        self._tty = getattr(self.stream, "isatty", lambda: False)()
        self._line = ""

    def update(self, done: int, note: str = "") -> None:
        now = time.monotonic()
        if not self.enabled or now - self._drawn < (0.5 if self._tty else 30.0):
            return
        self._drawn = now
        self._line = self.render(done, note, now - self.started)
        self.stream.write(("\r" + self._line) if self._tty else self._line + "\n")
        self.stream.flush()

    def line(self, text: str) -> None:
        if not self.enabled:
            return
        self.stream.write(("\r\033[K" if self._tty and self._line else "") + text + "\n")
        self.stream.flush()
        self._line = ""

    def render(self, done: int, note: str, elapsed: float) -> str:
        """``[#####.....] 12/40 problems  30% 0.8/s ETA 35s  note``"""
        fraction = done / self.total if self.total else 1.0
        filled = int(self.width * fraction)
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = f"ETA {_duration((self.total - done) / rate)}" if rate > 0 else "ETA ?"
        bar = "#" * filled + "." * (self.width - filled)
        return f"[{bar}] {done}/{self.total} {self.unit} {fraction:4.0%} {rate:.2f}/s {eta}  {note}".rstrip()

    def close(self) -> None:
        if self.enabled and self._tty and self._line:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
