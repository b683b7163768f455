"""What a captured patch provides to other files, and so which patches a use needs (capture/provides.py).

Issue 41's second audit planted one-line bugs in capture's cross-file links that the crossfile tests
let pass: names bound inside ``if``/``with``/``try`` or on a class left out, a new attribute of a
method missed, an import or a rebinding counted as new, BASE's config files read past their size
limit or through a link. Each test captures a small fork against its base and reads the ``needs``
the patch of the using file got, as a user reading patchset.toml would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.capture.test_capture_crossfile import BASE, NEW_HELPER, NEW_KEY, STEP, A, B, needs, of, tree
from tests.clirun import run

INIT = "verl/utils/__init__.py"
DATA = "verl/trainer/config/data.yaml"
Edit = tuple[str, str, str]


def capture(
    tmp_path: Path, edits: list[Edit], base: dict[str, str] | None = None, prep: Callable[[Path], None] | None = None
) -> Path:
    """Capture BASE (with ``base``'s files) changed by ``edits``; ``prep`` gets each tree before."""
    files = {**BASE, **(base or {})}
    base_root, fork_root = tree(tmp_path / "base", files), tmp_path / "fork"
    for rel, old, now in edits:
        assert files[rel].count(old) == 1, old
        files[rel] = files[rel].replace(old, now)
    tree(fork_root, files)
    for root in (base_root, fork_root):
        if prep:
            prep(root)
    out = tmp_path / "ps"
    code, text = run("capture", "--from", str(fork_root), "--base", str(base_root), "--out", str(out), "--json")
    assert code == 0, text
    return out


def use(line: str) -> Edit:
    """A new line in Bar.step of b.py (which imports ``a`` and has ``self.x = Foo()``)."""
    return (B, STEP, STEP + f"        k = {line}  # Uky\n")


def needed(ps: Path, rel: str = B, scope: str = "step") -> list[str]:
    """What the patch of ``rel`` whose id ends in ``scope`` needs."""
    (pid,) = [p for p in of(ps, rel) if p.endswith(scope)]
    return needs(ps)[pid][1]


def module_patch(ps: Path) -> str:
    (pid,) = of(ps, A)
    return pid


def added(text: str) -> Edit:
    """``text`` added to a.py's module level, before class Foo."""
    return (A, "\n\nclass Foo:", f"\n\n{text}\n\nclass Foo:")


@pytest.mark.parametrize(
    ("definition", "reads"),
    [
        ("LIMIT = 5  # Uky\n", "a.LIMIT"),
        ("RATE: float = 0.5  # Uky\n", "a.RATE"),
        ("if os.sep == '/':  # Uky\n    def compat():  # Uky\n        return 1  # Uky\n", "a.compat()"),
        ("for _ in range(1):  # Uky\n    LOOPED = 1  # Uky\n", "a.LOOPED"),
        ("with open(os.devnull) as f:  # Uky\n    NULL = f.read()  # Uky\n", "a.NULL"),
        # one patch binding a name in both branches is still its only provider
        ("try:  # Uky\n    FAST = True  # Uky\nexcept ImportError:  # Uky\n    FAST = False  # Uky\n", "a.FAST"),
        ("try:  # Uky\n    import json  # Uky\nfinally:  # Uky\n    DONE = 1  # Uky\n", "a.DONE"),
    ],
)
def test_a_name_the_module_newly_binds_at_any_block_level_is_provided(
    tmp_path: Path, definition: str, reads: str
) -> None:
    ps = capture(tmp_path, [added(definition), use(reads)])
    assert needed(ps) == [module_patch(ps)]


def test_a_method_of_a_new_class_is_provided_by_the_class_patch(tmp_path: Path) -> None:
    """``self.y = a.Baz()`` in __init__, ``self.y.go()`` in step: step needs the patch adding Baz.go."""
    new_class = added("class Baz:  # Uky\n    def go(self):  # Uky\n        return 5  # Uky\n\n")
    init = (B, "        self.x = Foo()\n", "        self.x = Foo()\n        self.y = a.Baz()  # Uky\n")
    ps = capture(tmp_path, [new_class, init, use("self.y.go()")])
    assert needed(ps) == [p for p in of(ps, B) if p.endswith("init")] + [module_patch(ps)]


@pytest.mark.parametrize(
    ("base_a", "old", "new", "reads"),
    [
        # a class attribute of Foo
        (BASE[A], "    def stop(self):", "    grand = 0  # Uky\n\n    def stop(self):", "self.x.grand"),
        # an attribute a method of Foo sets
        (BASE[A], "        return 1\n", "        self.count = 1  # Uky\n        return 1\n", "self.x.count"),
        # the same, where the statement it replaces holds a string running at column 0
        (
            BASE[A].replace("        return 1\n", '        doc = """\nat column 0\n"""\n        return 1\n'),
            '        doc = """\nat column 0\n"""\n',
            '        doc = "one line"  # Uky\n        self.count = 1  # Uky\n',
            "self.x.count",
        ),
    ],
)
def test_a_new_attribute_of_a_class_is_provided(tmp_path: Path, base_a: str, old: str, new: str, reads: str) -> None:
    ps = capture(tmp_path, [(A, old, new), use(reads)], base={A: base_a})
    assert needed(ps) == [module_patch(ps)]


def test_a_new_attribute_of_a_nested_class_is_provided(tmp_path: Path) -> None:
    base_a = BASE[A] + "\n\nclass Outer:\n    class Inner:\n        def run(self):\n            return 1\n"
    base_b = BASE[B].replace("        self.x = Foo()\n", "        self.x = Foo()\n        self.n = a.Outer.Inner()\n")
    attr = (A, "            return 1\n", "            self.count = 1  # Uky\n            return 1\n")
    ps = capture(tmp_path, [attr, use("self.n.count")], base={A: base_a, B: base_b})
    assert needed(ps) == [module_patch(ps)]


PROPERTY = BASE[A].replace(
    "    def stop(self):\n",
    "    @property\n    def size(self):\n        return self._size\n\n"
    "    @size.setter\n    def size(self, v):\n        self._size = v\n\n    def stop(self):\n",
)
WITH_TOTAL = BASE[A].replace("        return 1\n", "        self.total = 1\n        return 1\n")


@pytest.mark.parametrize(
    ("base_a", "edit", "reads"),
    [
        # an import of a module that is not a package's __init__ is its own business
        (BASE[A], (A, "import os\n", "import os\nimport json  # Uky\n"), "a.json"),
        # a dunder name
        (BASE[A], added("__version__ = '1'  # Uky\n"), "a.__version__"),
        # a name BASE's module had, bound again
        (BASE[A], added("existing = staticmethod(existing)  # Uky\n"), "a.existing()"),
        # a class attribute under the name of an attribute BASE's methods already set
        (WITH_TOTAL, (A, "    def stop(self):", "    total = 0  # Uky\n\n    def stop(self):"), "self.x.total"),
        # a scope that names two definitions (a property's getter and setter): where it lands is not certain
        (
            PROPERTY,
            (A, "        self._size = v\n", "        self._size = v\n        self.resized = True  # Uky\n"),
            "self.x.resized",
        ),
    ],
)
def test_what_is_not_certainly_new_provides_nothing(tmp_path: Path, base_a: str, edit: Edit, reads: str) -> None:
    ps = capture(tmp_path, [edit, use(reads)], base={A: base_a})
    assert needed(ps) == []


def test_a_call_of_what_base_had_needs_nothing_though_its_module_has_a_patch(tmp_path: Path) -> None:
    """The line names ``helper`` (in its comment) and calls BASE's ``existing``: no link to a.py."""
    ps = capture(tmp_path, [NEW_HELPER, (B, STEP, STEP + "        k = a.existing()  # Uky: not the new helper\n")])
    assert needed(ps) == []


@pytest.mark.parametrize(("imported", "needs_init"), [("from .a import helper", True), ("import json", False)])
def test_a_package_init_provides_the_names_it_re_exports(tmp_path: Path, imported: str, needs_init: bool) -> None:
    reexport = (INIT, "import os\n", f"import os\n{imported}  # Uky\n")
    imp = (B, "from verl.utils import a\n", "from verl.utils import a\nfrom verl import utils  # Uky\n")
    name = imported.split()[-1]
    ps = capture(tmp_path, [NEW_HELPER, reexport, imp, use(f"utils.{name}")], base={INIT: "import os\n"})
    (init,) = of(ps, INIT)
    assert (init in needed(ps)) is needs_init


def test_a_key_read_straight_off_the_config_object_needs_the_key_patch(tmp_path: Path) -> None:
    ps = capture(tmp_path, [NEW_KEY, use("self.config.new_key")])
    assert needed(ps) == ["ppo-new-key"]


def padded_config(size: int) -> str:
    """A YAML file of ``size`` bytes that has a ``new_key`` (under another parent than ppo.yaml's)."""
    head = "rows:\n  new_key: 1\n# "
    return head + "x" * (size - len(head) - 1) + "\n"


@pytest.mark.parametrize(("size", "linked"), [(1 << 20, False), ((1 << 20) + 1, True)])
def test_base_config_files_up_to_1_mib_are_read_for_the_keys_base_has(tmp_path: Path, size: int, linked: bool) -> None:
    """BASE's data.yaml has a new_key: up to 1 MiB it is a config, whose key makes the fork's new
    trainer.new_key uncertain (no link); past 1 MiB it is data, not read."""
    ps = capture(tmp_path, [NEW_KEY, use("self.config.trainer.new_key")], base={DATA: padded_config(size)})
    assert needed(ps) == (["ppo-new-key"] if linked else [])


def test_a_base_config_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "outside.yaml"
    outside.write_text("rows:\n  new_key: 1\n")

    def link(root: Path) -> None:
        (root / DATA).symlink_to(outside)

    ps = capture(tmp_path, [NEW_KEY, use("self.config.trainer.new_key")], prep=link)
    assert needed(ps) == ["ppo-new-key"]
