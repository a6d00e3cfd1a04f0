"""Timing collection: problems to time (``shapes``), the candidate kernels (``kernel``), how a
pair is timed (``timing``), the GPU sweep (``sweep``), Inductor's own timings
(``feedback``, through ``diode_backend.inductor.feedback``) and the fidelity check between the two (``fidelity``).
See docs/collect.md."""
