"""Fixtures for the matrix tests (defined in matrix_helpers, which the tests import too)."""

from tests.matrix.matrix_helpers import verl_repo  # noqa: F401 - fixtures: pytest finds them through this import
