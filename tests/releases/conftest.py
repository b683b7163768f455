"""Fixtures of the release tests: the local index (see release_index)."""

from tests.releases.release_index import index  # noqa: F401 - a fixture: pytest finds it through this import
