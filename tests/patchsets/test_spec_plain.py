"""A manifest's version specifiers (``versions``, ``requires``, ``drop_when``) are read without
packaging when they are plain comparisons (issue 39.13: packaging's specifier grammar was 4% of a
verify of uky, whose ``drop_when = ">=0.7.0"`` was its only use). The shortcut must accept only
what packaging accepts; anything else still goes to packaging and its refusal."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from packaging.specifiers import InvalidSpecifier, SpecifierSet

from patchctl.errors import ManifestError
from patchctl.patchsets import loader

SPECS = [
    ">=0.7.0",
    ">=0.6,<0.7",
    " >= 0.6 , < 0.7 ",
    "==0.6.1",
    "!=0.6.0",
    ">0,<=1.2.3.4",
    "~=0.6",
    "~=1",  # packaging refuses: ~= needs two release numbers
    "==0.6.*",
    ">=0.6.*",  # refused: a wildcard with >=
    ">=0.6,",
    ",>=0.6",
    ">=",
    "0.6",
    ">=v0.6",
    ">=0.6rc1",
    ">=0.6.post1",
    "=>0.6",
    ">=0.6;<0.7",
    ">=\u0660.\u0666",  # Arabic-Indic digits: Python's \\d matches them, packaging does not
    ">=\u00a00.6",  # a no-break space
    ">=0..6",
    ">=.6",
    ">=0.6.",
    "",
]


def accepted_by_packaging(value: str) -> bool:
    try:
        SpecifierSet(value)
    except InvalidSpecifier:
        return False
    return True


def accepted_by_loader(value: str) -> bool:
    try:
        loader._spec(value, Path("patchset.toml"), "patch[0].drop_when", "p")
    except ManifestError:
        return False
    return True


@pytest.mark.parametrize("value", SPECS)
def test_a_specifier_is_accepted_exactly_where_packaging_accepts_it(value: str) -> None:
    assert accepted_by_loader(value) == accepted_by_packaging(value)


def test_random_specifiers_agree_with_packaging() -> None:
    rng = random.Random(39)
    alphabet = "=<>!~ ,.\t0123456789v*\u0663"
    for _ in range(3000):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
        assert accepted_by_loader(value) == accepted_by_packaging(value), repr(value)


def test_plain_comparisons_are_read_without_packaging() -> None:
    """The shortcut is taken for uky's own: what spares verify the import."""
    for value in (">=0.7.0", ">=0.6,<0.7", "==0.6.1", "!=0.5"):
        assert loader._PLAIN_SPEC.fullmatch(value), value
