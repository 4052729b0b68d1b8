"""``python -m reasoning_graphs.cli``."""

from __future__ import annotations

import sys

from reasoning_graphs.cli import main

sys.exit(main())
