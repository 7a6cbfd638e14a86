"""Entry point: `python -m bench [--quick] [--only CASES] [--here]` (see bench/runner.py)."""

import sys

from bench.runner import main

sys.exit(main())
