"""Broken out-of-tree plugins, with real distributions: throwaway packages and `*.dist-info` directories (METADATA,
entry_points.txt) on the path, found by importlib.metadata exactly as pip-installed ones are. Each breakage (an
import error, a name that is already taken, an args type that cannot work) is one warning line naming the plugin,
and the CLI goes on with the good plugins."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from kubectl_desched.framework.registry import Registry
from kubectl_desched.plugins import full_registry
from tests import builders as b

ROOT = Path(__file__).resolve().parents[3]

GOOD = '''
from kubectl_desched.framework import DeschedulePlugin, EvictOptions

class AcmeEvictAnnotated(DeschedulePlugin):
    """Evicts pods annotated acme.example/evict=true."""
    name = "AcmeEvictAnnotated"

    def deschedule(self, nodes):
        for node in nodes:
            for pod in self.handle.state.pods_on_node(node.name):
                if pod.annotations.get("acme.example/evict") == "true" and self.handle.evictor.filter(pod):
                    self.handle.evictor.evict(pod, EvictOptions(self.name, "annotated acme.example/evict=true"))
'''

BROKEN_IMPORT = '''
import acme_helpers_that_were_never_installed  # noqa: F401
'''

CLASHES = '''
from kubectl_desched.framework import DeschedulePlugin

class NotTheRealOne(DeschedulePlugin):
    name = "{name}"

    def deschedule(self, nodes):
        raise AssertionError("a plugin that lost its name must never run")
'''

BAD_ARGS = '''
from dataclasses import dataclass
from kubectl_desched.framework import DeschedulePlugin, PluginArgs

@dataclass
class AcmeArgs(PluginArgs):
    threshold: int  # no default: `plugins` and a policy without args could not build it

class AcmeBadArgs(DeschedulePlugin):
    name = "AcmeBadArgs"
    args_type = AcmeArgs

    def deschedule(self, nodes):
        pass
'''


def install(site: Path, dist: str, module: str, source: str, entry_points: dict[str, str]) -> None:
    """What pip leaves in site-packages: the module, and NAME-VERSION.dist-info with METADATA and entry_points.txt."""
    (site / f"{module}.py").write_text(textwrap.dedent(source))
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[kubectl_desched.plugins]\n{lines}")


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A site directory with one good plugin distribution in it."""
    path = tmp_path / "site"
    path.mkdir()
    install(path, "acme-good", "acme_good", GOOD, {"AcmeEvictAnnotated": "acme_good:AcmeEvictAnnotated"})
    return path


BREAKAGES = {
    "import error": (
        lambda site: install(site, "acme-broken", "acme_broken", BROKEN_IMPORT, {"AcmeBroken": "acme_broken:Plugin"}),
        "AcmeBroken",
        "warning: out-of-tree plugin AcmeBroken from acme-broken (entry point AcmeBroken): ModuleNotFoundError: "
        "No module named 'acme_helpers_that_were_never_installed'"),
    "same name as an in-tree plugin": (
        lambda site: install(site, "acme-clash", "acme_clash", CLASHES.format(name="RemoveFailedPods"),
                             {"RemoveFailedPods": "acme_clash:NotTheRealOne"}),
        "RemoveFailedPods",
        "warning: out-of-tree plugin RemoveFailedPods from acme-clash (entry point RemoveFailedPods): "
        "a plugin named RemoveFailedPods already exists (in-tree)"),
    "same name as another distribution's plugin": (
        lambda site: install(site, "acme-copy", "acme_copy", CLASHES.format(name="AcmeEvictAnnotated"),
                             {"AcmeEvictAnnotatedCopy": "acme_copy:NotTheRealOne"}),
        "AcmeEvictAnnotated",
        "warning: out-of-tree plugin AcmeEvictAnnotated from acme-copy (entry point AcmeEvictAnnotatedCopy): "
        "a plugin named AcmeEvictAnnotated already exists (acme-good (entry point AcmeEvictAnnotated))"),
    "args that cannot be built": (
        lambda site: install(site, "acme-bad-args", "acme_bad_args", BAD_ARGS,
                             {"AcmeBadArgs": "acme_bad_args:AcmeBadArgs"}),
        "AcmeBadArgs",
        "warning: out-of-tree plugin AcmeBadArgs from acme-bad-args (entry point AcmeBadArgs): TypeError: "
        "AcmeBadArgs: args AcmeArgs: cannot be built from its defaults: TypeError: AcmeArgs.__init__() missing 1 "
        "required positional argument: 'threshold'"),
}


def desched(site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    return subprocess.run([sys.executable, "-m", "kubectl_desched", *args], capture_output=True, text=True,
                          timeout=120, check=False, env=env, stdin=subprocess.DEVNULL)


def snapshot(tmp_path: Path) -> str:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump(b.cluster(
        b.node("n1"), b.node("n2"),
        b.pod("marked", "n1", annotations={"acme.example/evict": "true"}), b.pod("plain", "n1"),
        b.with_status(b.pod("failed", "n2"), phase="Failed", reason="Evicted"))))
    return str(path)


@pytest.mark.parametrize("breakage", list(BREAKAGES))
def test_broken_plugin_is_one_warning_and_the_good_ones_work(breakage: str, site: Path, tmp_path: Path) -> None:
    add_broken, name, warning = BREAKAGES[breakage]
    add_broken(site)

    listed = desched(site, "plugins", "-o", "json")
    assert listed.returncode == 0
    assert listed.stderr == warning + "\n"  # one line, naming the plugin
    doc = json.loads(listed.stdout)
    plugins = {p["name"]: p for p in doc["plugins"]}
    assert plugins["AcmeEvictAnnotated"]["origin"] == "acme-good (entry point AcmeEvictAnnotated)"
    assert plugins["RemoveFailedPods"]["origin"] == "in-tree"  # a clash never replaces the first one
    assert {"LowNodeUtilization", "PodLifeTime", "DefaultEvictor"} <= set(plugins)
    assert doc["broken"] == [warning.removeprefix("warning: ")]
    # The name is gone, or still the first plugin's that took it (asserted above for both clashes).
    assert name not in plugins or name in ("RemoveFailedPods", "AcmeEvictAnnotated")

    table = desched(site, "plugins")
    assert table.returncode == 0 and table.stderr == warning + "\n"
    assert any(line.startswith("AcmeEvictAnnotated ") for line in table.stdout.splitlines())

    snap = snapshot(tmp_path)
    ran = desched(site, "deschedule", "--from-file", snap, "-A", "--plugin", "AcmeEvictAnnotated",
                  "--plugin", "RemoveFailedPods", "--args", 'RemoveFailedPods={"minPodLifetimeSeconds": 0}',
                  "-o", "json")
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == warning + "\n"
    got = [(c["pod"], c["plugin"], c["reason"].split(", age")[0]) for c in json.loads(ran.stdout)["candidates"]]
    assert got == [("marked", "AcmeEvictAnnotated", "annotated acme.example/evict=true"),
                   ("failed", "RemoveFailedPods", "failed with reason Evicted")]


@pytest.mark.parametrize("breakage", ["import error", "args that cannot be built"])
def test_asking_for_a_broken_plugin_says_why_it_is_missing(breakage: str, site: Path, tmp_path: Path) -> None:
    add_broken, name, warning = BREAKAGES[breakage]
    add_broken(site)
    proc = desched(site, "deschedule", "--from-file", snapshot(tmp_path), "-A", "--plugin", name)
    assert proc.returncode == 2
    because = warning.removeprefix("warning: ")
    assert proc.stderr.splitlines() == [warning,
                                        f"error: plugin {name} is installed but could not be loaded: {because}"]

    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({
        "apiVersion": "descheduler/v1alpha2", "kind": "DeschedulerPolicy",
        "profiles": [{"name": "p", "pluginConfig": [{"name": name}], "plugins": {"deschedule": {"enabled": [name]}}}]}))
    proc = desched(site, "run", "--policy", str(policy), "--from-file", snapshot(tmp_path))
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[1] == (f"error: {policy}: profiles[0].pluginConfig[0].name: plugin {name} is "
                                           f"installed but could not be loaded: {because}")


def test_all_breakages_at_once_in_process(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry itself, with every broken distribution installed side by side: four lines, the good one loaded."""
    for add_broken, _name, _warning in BREAKAGES.values():
        add_broken(site)
    monkeypatch.syspath_prepend(str(site))
    registry = full_registry()
    assert sorted(registry.broken) == sorted(w.removeprefix("warning: ") for _a, _n, w in BREAKAGES.values())
    assert registry.get("AcmeEvictAnnotated").origin == "acme-good (entry point AcmeEvictAnnotated)"
    assert registry.get("RemoveFailedPods").origin == "in-tree"
    assert "AcmeBadArgs" not in registry and registry.is_broken("AcmeBadArgs")
    assert Registry().broken == []  # nothing is loaded until asked
