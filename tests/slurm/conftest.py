"""The Slurm tests' fixtures live in slurm_fixtures.py (importable by name from the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from slurm_fixtures import slurm, slurm_site  # noqa: F401 - fixtures: pytest finds them through this import
