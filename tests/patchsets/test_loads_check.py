"""The load check by file type (issue 38), as before/after texts: what refuses, what passes, and
that a file already broken before the change is not the change's doing."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import pytest
from omegaconf import OmegaConf
from tests.clirun import run
from tests.conftest import snapshot

from patchctl.patchsets import loads

#: YAML texts, as verl's configs and forks write them; OmegaConf must agree with our verdict on each
YAMLS = [
    "trainer:\n  total_epochs: 30\n  project_name: a\n",
    "trainer:\n  total_epochs: 30\n  total_epochs: 3\n",  # a duplicate inside a section
    "a: 1\na: 2\n",
    'a: 1\n"a": 2\n',  # quoted, still the same key
    "l:\n- a: 1\n  a: 2\n",  # in a list item
    "b: &b {k: 1}\nc:\n  <<: *b\n  k: 2\n",  # a merge key overriding: meant, not a duplicate
    "1: a\n1: b\n",  # int keys: OmegaConf lets them be
    "x: [1, 2\n",
]


@pytest.mark.parametrize("text", YAMLS)
def test_yaml_is_refused_exactly_where_omegaconf_refuses_it(text: str) -> None:
    try:
        OmegaConf.create(text)
        omegaconf_loads = True
    except Exception:
        omegaconf_loads = False
    assert (loads.loads("c.yaml", text) is None) == omegaconf_loads


def test_a_duplicate_key_names_both_lines() -> None:
    problem = loads.check("c.yaml", "t:\n  a: 1\n  b: 2\n  a: 3\n", "t:\n  a: 1\n  b: 2\n")
    assert problem is not None and not problem.already
    said = "c.yaml:4: does not load as YAML: duplicate key 'a' (first at line 2), which OmegaConf refuses"
    assert str(problem) == said


def test_a_file_broken_before_the_change_is_not_the_changes_doing() -> None:
    problem = loads.check("c.yaml", "a: 1\na: 2\nb: 3\n", "a: 1\na: 2\n")
    assert problem is not None and problem.already
    assert loads.check("c.json", '{"a": 1, "b": 2}', '{"a": 1,}') is None  # a change that mends it


@pytest.mark.parametrize(
    ("path", "old", "new", "said"),
    [
        ("x.json", '{\n  "a": 1\n}\n', '{\n  "a": 1\n  "uky": 1\n}\n', "x.json:3: does not load as JSON: Expecting"),
        ("x.toml", "[t]\na = 1\n", "[t]\na = 1\na = 2\n", "x.toml:3: does not load as TOML: Cannot overwrite a value"),
        ("m.py", "def f():\n    pass\n", "def f():\n    pass\nreturn 1\n", "m.py:3: does not compile: 'return'"),
        ("requirements.txt", "numpy\n", "numpy\nvllm=>0.8.5\n", "requirements.txt:2: does not load as requirements"),
        # a new line put between a requirement and the hash lines that continue it
        (
            "requirements-cuda.txt",
            "torch==2.4.0 \\\n    --hash=sha256:aa\nray\n",
            "torch==2.4.0 \\\nuky-tools==1.0\n    --hash=sha256:aa\nray\n",
            "requirements-cuda.txt:1: does not load as requirements: 'torch==2.4.0 uky-tools==1.0' is no requirement",
        ),
    ],
)
def test_each_type_refuses_a_broken_text(path: str, old: str, new: str, said: str) -> None:
    assert loads.check(path, old, old) is None
    problem = loads.check(path, new, old)
    assert problem is not None and str(problem).startswith(said), problem


def test_pip_lines_that_are_no_requirement_pass() -> None:
    text = (
        "# pinned for CUDA 12\n-r base.txt\n--index-url https://download.pytorch.org/whl/cu121\n"
        "-e .\ngit+https://github.com/volcengine/verl.git@main#egg=verl\n./wheels/flash_attn-2.5-cp310.whl\n"
        "torch==2.4.0 \\\n    --hash=sha256:aa \\\n    --hash=sha256:bb\nnumpy==1.26.4\\\n    --hash=sha256:cc\n"
        'flash-attn==2.5.8; sys_platform == "linux"  # Uky\nverl @ file:///src/verl\n\n'
    )
    assert loads.loads("requirements.txt", text) is None


def test_types_no_loader_knows_and_deleted_files_pass() -> None:
    assert loads.check("README.md", "```\nbroken {", "# ok\n") is None
    assert loads.loads("run.sh", "if then fi {") is None  # verify asks of any patched file
    assert loads.check("c.yaml", None, "a: 1\n") is None
    assert loads.check("x.json", '\ufeff{"a": 1}', '\ufeff{"a": 0}') is None  # a BOM is no error
    assert loads.check("new.py", "def (", None) is None  # a file the change creates is shipped whole


def test_a_definition_added_twice_is_named_and_meant_ones_are_not() -> None:
    old = "class T:\n    def log(self):\n        pass\n"
    new = "class T:\n    def log(self):\n        pass\n\n    def log(self):\n        return 1\n"
    problem = loads.check("t.py", new, old)
    assert str(problem) == (
        "t.py:2: class T would define log twice (lines 2, 5); Python keeps the last, "
        "so the one at line 2 would never run"
    )
    assert loads.check("t.py", new, new) is None  # upstream's own: not the change's
    prop = (
        "class T:\n    @property\n    def x(self):\n        return 1\n\n"
        "    @x.setter\n    def x(self, v):\n        pass\n"
    )
    assert loads.check("t.py", prop, "class T:\n    pass\n") is None
    nested = "class A:\n    class B:\n        def f(self): ...\n        def f(self): ...\n"
    nested_old = "class A:\n    class B:\n        def f(self): ...\n"
    assert "class A.B would define f twice" in str(loads.check("t.py", nested, nested_old))
    decorated = "import torch\n\ndef f(): ...\n\n@torch.no_grad()\ndef f(): ...\n"  # a decorator that means no overload
    assert "the module would define f twice (lines 3, 6)" in str(
        loads.check("t.py", decorated, "import torch\n\ndef f(): ...\n")
    )


F, G = "def f(): ...\n", "def g(): ...\n"


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("x = 1\ndef f(): ...\n", "def f(): ...\nx = 1\ndef f(): ...\n"),  # at the top of the file
        ("def f(): ...\n", "def f(): ...\n\ndef f(): ...\n"),  # at the end
        ("def f(): ...\nx = 1\n", "def f(): ...\nx = 2\n\ndef f(): ...\nx = 1\n"),  # after a line it changed
        ("def f(): ...\ny = 0\nx = 1\n", "def f(): ...\ny = 0\ndef f(): ...\ny = 0\nx = 1\n"),  # like its neighbours
        # found by comparing with mutants of the search for the lines the change wrote
        ("x = 1\n" + F + "\n\ny = 2\nx = 1\n", F + "x = 1\n" + F + F + "\n\ny = 2\nx = 1\n"),
        (F + G + F, F + "y = 2\nx = 1\n" + F + F),
        ("\n" + F + "\n" + G, "\n" + F + "\n\n" + G + F),
        (F + "\n" + G + F + "y = 2\n", F + "\n" + G + "y = 2\n" + G + "y = 2\n"),
    ],
)
def test_a_definition_added_anywhere_in_the_file_is_found(old: str, new: str) -> None:
    assert "the module would define " in str(loads.check("m.py", new, old))


def test_only_definitions_the_change_adds_count() -> None:
    """Upstream's own duplicate stays upstream's, even when the change defines the same name in
    another class; a change that mends a file that did not parse has nothing to compare with."""
    old = "class T:\n    def log(self): ...\n    def log(self): ...\n\nclass U:\n    pass\n"
    new = old.replace("class U:\n    pass\n", "class U:\n    def log(self): ...\n")
    assert loads.check("t.py", new, old) is None
    twice = "class T:\n    def log(self): ...\n    def log(self): ...\n"
    assert loads.check("t.py", twice, "class T:\n    def log(self) ...\n") is None


def test_python_is_compiled_as_python_would_not_as_patchctl_is() -> None:
    """No warning reaches the user's terminal, and patchctl's own ``from __future__`` does not leak
    into the file's compilation (a yield in an annotation is valid code without it)."""
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        assert loads.check("m.py", 'x = "\\d+"\n', "x = 1\n") is None  # an invalid escape only warns
    assert said == []
    assert loads.loads("m.py", "def g():\n    def f(x: (yield)):\n        pass\n") is None


@pytest.mark.parametrize(
    ("path", "text", "said"),
    [
        ("m.py", "x = " + "-" * 100_000 + "1\n", "m.py: does not compile: nested too deeply to compile"),
        ("m.py", "x = 1" + " + 1" * 200_000 + "\n", "m.py: does not compile: nested too deeply to compile"),
        ("c.toml", "a = " + "[" * 5000 + "]" * 5000 + "\n", "c.toml: does not load as TOML: nested too deeply"),
        ("c.json", "[" * 100_000 + "]" * 100_000, "c.json: does not load as JSON: nested too deeply"),
        ("c.yaml", "a: 1\nb: \x07\n", "c.yaml: does not load as YAML: unacceptable character #x0007: control"),
    ],
)
def test_hostile_text_is_a_problem_not_a_crash(path: str, text: str, said: str) -> None:
    assert str(loads.loads(path, text)).startswith(said)


def test_without_pyyaml_a_yaml_change_stops_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML unimportable (a broken install): apply exits 2 with one line, and writes nothing,
    rather than leave the YAML file unchecked."""
    tree = tmp_path / "tree"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl/__init__.py").write_text("")
    (tree / "verl/c.yaml").write_text("trainer:\n  total_epochs: 3\n")
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "ps"\ntag = "Uky"\n[[patch]]\nid = "e"\ntitle = "t"\nwhy = "w"\nkind = "config-key"\n'
        'target = ["verl/c.yaml"]\n[patch.params]\npath = ["trainer", "total_epochs"]\n'
        'was = "total_epochs: 3\\n"\nnow = "total_epochs: 5  # Uky\\n"\n'
    )
    before = snapshot(tree)
    monkeypatch.setitem(sys.modules, "yaml", None)  # what `import yaml` meets where it is not installed
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps))
    assert code == 2 and out.splitlines() == [
        "error: verl/c.yaml: cannot check that it still loads as YAML: PyYAML is not installed in this Python "
        "(a dependency of patchctl); install it (pip install pyyaml)"
    ]
    assert snapshot(tree) == before


@pytest.mark.parametrize(
    ("target", "text", "params", "said"),
    [
        (
            "requirements.txt",
            "numpy\nray\n",
            'package = "vllm"\nnow = "vllm=>0.8.5  # Uky"\n',
            "requirements.txt:3: would not load as requirements after the change: 'vllm=>0.8.5' is no requirement",
        ),
        (
            "verl/c.json",
            '{\n  "a": 1\n}\n',
            'path = ["uky"]\nnow = \'"uky": tru\'\n',
            "verl/c.json:3: would not load as JSON after the change: Expecting",
        ),
    ],
)
def test_a_hand_written_patch_with_a_typo_is_a_conflict(
    tmp_path: Path, target: str, text: str, params: str, said: str
) -> None:
    """The manifest is the user's to edit; a typo in a line it writes is caught before writing."""
    tree = tmp_path / "tree"
    (tree / "verl").mkdir(parents=True)
    (tree / "verl/__init__.py").write_text("")
    (tree / target).write_text(text)
    kind = "requirement" if target.endswith(".txt") else "config-key"
    ps = tmp_path / "ps"
    ps.mkdir()
    (ps / "patchset.toml").write_text(
        '[patchset]\nname = "ps"\ntag = "Uky"\n[[patch]]\nid = "p"\ntitle = "t"\nwhy = "w"\n'
        f'kind = "{kind}"\ntarget = ["{target}"]\n[patch.params]\n{params}'
    )
    before = snapshot(tree)
    code, out = run("apply", "--target", str(tree), "--patchset", str(ps), "--json")
    (row,) = json.loads(out)["results"]
    assert code == 1 and row["status"] == "conflict" and row["reason"].startswith(said), out
    assert snapshot(tree) == before


def test_a_duplicate_the_fork_itself_has_is_accepted_and_one_beside_upstream_is_not() -> None:
    """Skywork-OR1's ray_trainer.py defines ``dataprotoitem_to_dataproto`` twice at module level;
    the change that copies both from the fork adds the fork's own file, not a placement's mistake.
    The same change where upstream already defines the name still shadows upstream's (issue 38)."""
    fork_defs = (
        "def dataprotoitem_to_dataproto(item):\n    return 1\n\n\n"
        "def dataprotoitem_to_dataproto(item):\n    return 2\n\n\n"
    )
    base = "import os\n\n\nclass RayPPOTrainer:\n    pass\n"
    spot = base.index("class RayPPOTrainer")
    assert loads.check("ray_trainer.py", base[:spot] + fork_defs + base[spot:], base) is None
    upstream = (
        "import os\n\n\ndef dataprotoitem_to_dataproto(item):\n    return 0\n\n\n" + base[len("import os\n\n\n") :]
    )
    at = upstream.index("class RayPPOTrainer")
    problem = loads.check("ray_trainer.py", upstream[:at] + fork_defs + upstream[at:], upstream)
    assert "the module would define dataprotoitem_to_dataproto 3 times (lines 4, 8, 12)" in str(problem)
