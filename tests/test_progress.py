from __future__ import annotations

import io

from diode_backend.offline.progress import Progress


def test_bar_shows_count_rate_and_eta():
    bar = Progress(total=40, width=10)
    assert bar.render(10, "3,000 pairs", elapsed=20.0) == "[##........] 10/40 problems  25% 0.50/s ETA 1m00s  3,000 pairs"
    assert "ETA ?" in bar.render(0, "", elapsed=0.0)


def test_non_terminal_output_gets_whole_lines():
    stream = io.StringIO()
    bar = Progress(total=2, stream=stream)
    bar.update(1, "x")
    bar.close()
    assert stream.getvalue().endswith("x\n") and "\r" not in stream.getvalue()
