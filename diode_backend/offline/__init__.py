"""The offline wing: collecting timings, the dataset, training, validation, plots and the
``diode`` command that drives them.

It may import the runtime (``diode_backend`` outside this package); the runtime never imports
it, so ``torch.compile`` loads none of this (tests/test_layout.py enforces both rules).
"""
