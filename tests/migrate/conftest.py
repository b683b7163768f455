"""migrate's fixtures live in migrate_fixtures.py (importable by name from the tests)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from migrate_fixtures import gitignore_repo, loopback, patched_verl, site, verl_tree  # noqa: F401 - fixtures: pytest finds them through this import
