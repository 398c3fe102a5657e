"""`python -m depthfinder.cli ...` is `depthfinder ...`."""

from __future__ import annotations

import sys

from depthfinder.cli.main import main

sys.exit(main())
