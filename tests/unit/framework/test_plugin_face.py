"""The plugin author's face: kubectl_desched.framework names everything a plugin imports, loaded on first use,
and its time and label/taint helpers and plain text flag kind behave as documented."""

from __future__ import annotations

import ast
import importlib
import importlib.metadata
import os
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest

import kubectl_desched.framework as face
import kubectl_desched.testing as testing
from kubectl_desched.errors import UsageError
from kubectl_desched.model import pod_from_json
from tests.builders import pod


def test_every_name_of_the_face_is_the_object_of_its_home_module() -> None:
    assert sorted(face.__all__) == sorted(face._MODULE_OF)
    for name in face.__all__:
        home = importlib.import_module(face._MODULE_OF[name])
        assert getattr(face, name) is getattr(home, name), name


def test_the_face_has_what_the_plugin_author_had_to_hunt_for() -> None:
    wanted = {"DeschedulePlugin", "BalancePlugin", "EvictorPlugin", "Handle", "EvictOptions", "PluginArgs",
              "decode_args", "Namespaces", "LabelSelectorArg", "Duration", "ConfigError", "Node", "Pod", "Taint",
              "ClusterState", "pod_age", "parse_time", "label_key_problem", "taint_problem", "pod_tolerates_taint",
              "CliSurface", "Flag", "Switch", "Integer", "Percentages", "Seconds", "DurationText", "Names", "Text"}
    assert wanted <= set(face.__all__)
    with pytest.raises(AttributeError):
        _ = face.NoSuchName  # type: ignore[attr-defined]


def test_the_face_is_lazy() -> None:
    code = "import sys, kubectl_desched.framework; print('kubectl_desched.model' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_pod_age_on_the_given_clock() -> None:
    p = pod_from_json(pod("p", "n1", started="2026-01-01T00:00:00Z"))
    assert face.pod_age(p, datetime(2026, 1, 1, 2, tzinfo=UTC)) == 7200.0
    assert face.pod_age(p, datetime(2025, 12, 31, 23, tzinfo=UTC)) == -3600.0
    bare = pod("q", "n1")
    del bare["metadata"]["creationTimestamp"]
    assert face.pod_age(pod_from_json(bare), datetime(2026, 1, 1, tzinfo=UTC)) is None


@pytest.mark.parametrize(("text", "problem"), [
    ("ToBeDeletedByClusterAutoscaler", None), ("karpenter.sh/disrupted", None), ("example.com/m=kernel-6.8", None),
    ("k=", None), ("two words", "invalid key: the name part must be letters"), ("", "invalid key: the name part "
     "must not be empty"), ("Bad.Prefix/name", "invalid key: the prefix before '/' must be a DNS-1123 subdomain"),
    ("a/b/c", "invalid key: a label key has at most one '/'"), ("k=a b", "invalid value: must be letters"),
    ("k=" + "v" * 64, "invalid value: must be at most 63 characters")])
def test_taint_problem(text: str, problem: str | None) -> None:
    got = face.taint_problem(text)
    assert got is None if problem is None else (got or "").startswith(problem)


def test_text_flag_kind() -> None:
    plain = face.Text()
    assert plain.parse("any thing", "--note") == "any thing"
    assert plain.show("x") == "x"
    checked = face.Text(metavar="KEY", check=face.label_key_problem)
    assert checked.parse("example.com/zone", "--zone-label") == "example.com/zone"
    with pytest.raises(UsageError, match=r"^--zone-label: 'a/b/c': a label key has at most one '/'$"):
        checked.parse("a/b/c", "--zone-label")
    args: dict[str, object] = {}
    face.Flag("--zone-label", "zone.label", "the zone label", checked).set(args, "zone")
    assert args == {"zone": {"label": "zone"}}


ROOT = Path(__file__).resolve().parents[3]
FACES = {"kubectl_desched.framework", "kubectl_desched.testing"}


def test_py_typed_ships_with_the_package() -> None:
    assert resources.files("kubectl_desched").joinpath("py.typed").is_file()
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["kubectl_desched"]


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m.split(".")[0] == "kubectl_desched"}


def test_the_example_plugins_import_only_the_faces() -> None:
    files = sorted(ROOT.glob("plugins/*/**/*.py"))
    assert files
    for path in files:
        allowed = FACES if "tests" in path.relative_to(ROOT).parts else {"kubectl_desched.framework"}
        assert _imports(path) <= allowed, path


def test_the_test_command_checks_the_example_plugins_strictly() -> None:
    script = (ROOT / "scripts" / "test").read_text()
    assert '"$venv/bin/mypy" --strict --follow-imports=silent "$dist"' in script


def test_an_authors_mypy_strict_sees_the_framework_from_outside_the_repository(tmp_path: Path) -> None:
    """What a plugin author runs: `mypy --strict .` in a distribution of their own, beside kubectl-desched as
    installed here (`pip install -e` in ./scripts/test). setuptools' default editable install of a flat layout is an
    import hook mypy cannot follow (import-not-found, or Any under ignore_missing_imports); pyproject's package-dir
    makes it a plain path."""
    try:
        importlib.metadata.distribution("kubectl-desched")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("kubectl-desched is not installed (./scripts/test installs it)")
    example = ROOT / "plugins" / "kubectl-desched-cordoned"
    dist = tmp_path / "my-plugin"
    shutil.copytree(example, dist, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".mypy_cache"))
    (dist / "kubectl_desched_cordoned" / "wrong.py").write_text(
        "from kubectl_desched.framework import Pod\n\n\ndef images(pod: Pod) -> int:\n    return pod.images\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}  # no user mypy config, no MYPYPATH
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"), "."],
                          cwd=dist, env=env, capture_output=True, text=True, timeout=300, check=False)
    # Only the planted error: the framework's types are seen (not Any), and the example itself is clean.
    assert done.stdout.splitlines()[0] == ('kubectl_desched_cordoned/wrong.py:5: error: Incompatible return value '
                                           'type (got "tuple[str, ...]", expected "int")  [return-value]'), done.stdout
    assert done.stdout.splitlines()[-1].startswith("Found 1 error in 1 file"), done.stdout


@dataclass
class _AgeArgs(face.PluginArgs):
    max_age: face.Duration = field(default_factory=lambda: face.Duration(60.0, "1m"))

    def validate(self, path: str) -> None:
        if self.max_age.seconds <= 0:
            raise face.ConfigError(f"{path}.maxAge", "must be more than 0")


@pytest.mark.parametrize("given", ["-1h", "-90s", -5, "0s"])
def test_a_negative_duration_reaches_the_plugins_own_check(given: object) -> None:
    """As metav1.Duration takes a sign, the decoder does too: what a negative age means is the plugin's to say."""
    with pytest.raises(face.ConfigError) as err:
        face.decode_args(_AgeArgs, {"maxAge": given}, "args")
    assert str(err.value) == "args.maxAge: must be more than 0"


def test_a_day_is_no_duration_anywhere() -> None:
    """Go's time.ParseDuration, and so every upstream policy, has no `d`: flags, policies and the test clock agree."""
    with pytest.raises(face.ConfigError, match=r"must be a duration such as 5m, not '2d' \(no d unit: write 48h\)"):
        face.decode_args(_AgeArgs, {"maxAge": "2d"}, "args")
    with pytest.raises(ValueError, match=r"^'2d' is not a duration \(no d unit: write 48h\)"):
        testing.ago("2d")
    assert testing.ago("48h") == "2025-12-30T12:00:00Z"
