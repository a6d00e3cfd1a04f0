"""``python -m diode_backend ...``: the ``diode`` command where its script is not installed."""

import sys

from .offline.cli import main

sys.exit(main())
