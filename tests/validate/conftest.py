"""validate's fixtures live in validate_helpers.py (importable by name from the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from validate_helpers import loopback, root, site  # noqa: F401 - fixtures: pytest finds them through this import
