"""Fixtures of the release tests: the local index (see release_index)."""

from tests.releases.release_index import certificate, index, tls_index  # noqa: F401 - fixtures: pytest finds them here
