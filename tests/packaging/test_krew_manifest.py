"""krew/desched.yaml (the template) and the dist/krew/desched.yaml that scripts/build-krew fills pass every rule
krew applies (tests/packaging/krew_manifest.py); each rule is shown to catch a manifest that breaks it, and the
real krew binary rejects the structurally broken ones too."""

from __future__ import annotations

import copy
import hashlib
import io
import os
import subprocess
import tarfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement  # pytest's own dependency

from kubectl_desched import __version__
from tests.packaging.conftest import ROOT
from tests.packaging.krew_manifest import archive_errors, validate

TEMPLATE = ROOT / "krew" / "desched.yaml"
PLATFORMS = {("linux", "amd64"), ("linux", "arm64"), ("darwin", "amd64"), ("darwin", "arm64")}
RELEASES = "https://github.com/kubectl-desched/kubectl-desched/releases/download"


def rendered_template() -> dict[str, Any]:
    """The template with its version filled in and a distinct well-formed stand-in for each archive's sha256."""
    text = TEMPLATE.read_text().replace("{{version}}", __version__)
    for i in range(text.count("{{sha256}}")):
        text = text.replace("{{sha256}}", hashlib.sha256(str(i).encode()).hexdigest(), 1)
    return yaml.safe_load(text)


def platform_of(platform: dict[str, Any]) -> tuple[str, str]:
    labels = platform["selector"]["matchLabels"]
    return labels["os"], labels["arch"]


def test_template_has_placeholders_only_where_the_build_fills_them() -> None:
    raw = yaml.safe_load(TEMPLATE.read_text())
    spec = raw["spec"]
    assert spec["version"] == "v{{version}}"  # single source: kubectl_desched.__version__
    assert [p["sha256"] for p in spec["platforms"]] == ["{{sha256}}"] * 4  # no stale digest in the repository
    for platform in spec["platforms"]:
        os_name, arch = platform_of(platform)
        assert platform["uri"] == (f"{RELEASES}/v{{{{version}}}}/kubectl-desched_v{{{{version}}}}_{os_name}_{arch}"
                                   ".tar.gz")


def test_template_renders_to_a_valid_manifest() -> None:
    manifest = rendered_template()
    assert validate(manifest, "desched.yaml") == []
    spec = manifest["spec"]
    assert spec["version"] == f"v{__version__}"
    assert {platform_of(p) for p in spec["platforms"]} == PLATFORMS
    assert "python3" in spec["caveats"]
    assert all(p["bin"] == "kubectl-desched" for p in spec["platforms"])


def test_generated_manifest_is_valid_and_matches_the_archives(krew_dist: Path, krew_manifest: dict) -> None:
    assert validate(krew_manifest, "desched.yaml") == []
    assert krew_manifest["spec"]["version"] == f"v{__version__}"
    text = (krew_dist / "desched.yaml").read_text()
    assert text.startswith("apiVersion: ") and "{{" not in text  # no template comment, no placeholder left
    sums = dict(line.split("  ")[::-1] for line in (krew_dist / "SHA256SUMS").read_text().splitlines())
    assert len(sums) == 4
    for platform in krew_manifest["spec"]["platforms"]:
        name = platform["uri"].rsplit("/", 1)[1]
        assert archive_errors(platform, krew_dist / name) == []
        assert sums[name] == platform["sha256"]
    # Only the digests differ from the template: everything else a reviewer sees in krew/desched.yaml ships.
    template = rendered_template()
    for got, want in zip(krew_manifest["spec"]["platforms"], template["spec"]["platforms"], strict=True):
        want["sha256"] = got["sha256"]
    assert krew_manifest == template


def _mutate(path: str, value: Any) -> Callable[[dict], None]:
    """Set (or, for value=DELETE, remove) the dotted path; numbers index lists."""
    def apply(manifest: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        node = manifest
        for part in parents:
            node = node[part]
        if value is DELETE:
            del node[last]
        else:
            node[last] = value
    return apply


DELETE = object()
LINUX_AMD64 = {"matchLabels": {"os": "linux", "arch": "amd64"}}
# (id, mutation, an expected error fragment, whether `kubectl krew install --manifest` rejects it too)
BROKEN = [
    ("api-version", _mutate("apiVersion", "krew.googlecontainertools.github.com/v1alpha1"), "apiVersion", True),
    ("kind", _mutate("kind", "Plugins"), "kind=", True),
    ("name-differs-from-file", _mutate("metadata.name", "descheduler"), "should be named 'desched'", False),
    ("no-short-description", _mutate("spec.shortDescription", ""), "short description", True),
    ("short-description-line-break", _mutate("spec.shortDescription", "two\nlines"), "line breaks", True),
    ("short-description-cut", _mutate("spec.shortDescription", "x" * 51), "longer than 50", False),
    ("no-platforms", _mutate("spec.platforms", []), "platform specified", True),
    ("no-version", _mutate("spec.version", ""), "version specified", True),
    ("version-without-v", _mutate("spec.version", "0.1.0"), "semantic version", True),
    ("version-two-parts", _mutate("spec.version", "v0.1"), "semantic version", True),
    ("version-leading-zero", _mutate("spec.version", "v0.01.0"), "semantic version", True),
    ("no-uri", _mutate("spec.platforms.0.uri", DELETE), "`uri` has to be set", True),
    ("no-sha256", _mutate("spec.platforms.0.sha256", ""), "`sha256` sum has to be set", True),
    ("uppercase-sha256", _mutate("spec.platforms.0.sha256", "A" * 64), "is not valid", True),
    ("short-sha256", _mutate("spec.platforms.0.sha256", "a" * 63), "is not valid", True),
    ("no-bin", _mutate("spec.platforms.0.bin", DELETE), "`bin` has to be set", True),
    ("bin-outside", _mutate("spec.platforms.0.bin", "../kubectl-desched"), "outside the installation", False),
    ("empty-files", _mutate("spec.platforms.0.files", []), "unspecified or non-empty", True),
    ("file-without-from", _mutate("spec.platforms.0.files.0.from", ""), "`from` field", True),
    ("file-without-to", _mutate("spec.platforms.0.files.0.to", DELETE), "`to` field", True),
    ("file-to-unclean", _mutate("spec.platforms.0.files.0.to", "./bin/"), "clean path", False),
    ("file-to-outside", _mutate("spec.platforms.0.files.0.to", "../x"), "clean path", False),
    ("no-selector", _mutate("spec.platforms.0.selector", DELETE), "nil selector", True),
    ("empty-selector", _mutate("spec.platforms.0.selector", {}), "empty selector", True),
    ("selector-key", _mutate("spec.platforms.0.selector.matchLabels.libc", "musl"), "'libc' not supported", True),
    ("selector-empty-labels", _mutate("spec.platforms.0.selector",
                                      {"matchLabels": {}, "matchExpressions": [{"key": "os", "operator": "In",
                                                                                "values": ["linux"]}]}),
     "`matchLabels` specified but empty", True),
    ("selector-unsupported-platform", _mutate("spec.platforms.0.selector.matchLabels.arch", "riscv64"),
     "doesn't match any supported platform", False),
    ("overlapping-selectors", _mutate("spec.platforms.1.selector", LINUX_AMD64), "overlapping selectors", False),
    ("overlapping-expressions", _mutate("spec.platforms.1.selector",
                                        {"matchExpressions": [{"key": "os", "operator": "In", "values": ["linux"]}]}),
     "overlapping selectors", False),
    ("no-license-installed", _mutate("spec.platforms.0.files", [{"from": "kubectl-desched", "to": "."}]),
     "no license file", False),
]


@pytest.mark.parametrize(("mutation", "expected"), [case[1:3] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_each_rule_catches_a_broken_manifest(mutation: Callable[[dict], None], expected: str) -> None:
    manifest = rendered_template()
    mutation(manifest)
    errors = validate(manifest, "desched.yaml")
    assert any(expected in error for error in errors), errors


def test_file_name_rules() -> None:
    manifest = rendered_template()
    assert any("extension" in e for e in validate(manifest, "desched.yml"))
    manifest["metadata"]["name"] = "con"
    assert any("is not allowed" in e for e in validate(manifest, "con.yaml"))
    manifest["metadata"]["name"] = "de sched"
    assert any("is not allowed" in e for e in validate(manifest, "de sched.yaml"))


KREW_REJECTS = [case for case in BROKEN if case[3]]


def krew_install(krew_bin: Path, manifest: dict, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Install the manifest's linux/amd64 platform with a small archive that matches its digest (tmp_path/a.tar.gz)."""
    path = tmp_path / "desched.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return subprocess.run([krew_bin, "install", f"--manifest={path}", f"--archive={tmp_path / 'a.tar.gz'}"],
                          capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, "KREW_ROOT": str(tmp_path / "root"), "KREW_NO_UPGRADE_CHECK": "1",
                               "KREW_OS": "linux", "KREW_ARCH": "amd64"})


def manifest_for_small_archive(tmp_path: Path) -> dict:
    archive = _tarball(tmp_path / "a.tar.gz", GOOD)
    manifest = rendered_template()
    for platform in manifest["spec"]["platforms"]:
        platform["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
    return manifest


def test_real_krew_installs_the_unbroken_manifest(krew_bin: Path, tmp_path: Path) -> None:
    """The control for the next test: the same install succeeds when nothing is broken."""
    proc = krew_install(krew_bin, manifest_for_small_archive(tmp_path), tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "root" / "receipts" / "desched.yaml").exists()


@pytest.mark.parametrize("mutation", [case[1] for case in KREW_REJECTS], ids=[case[0] for case in KREW_REJECTS])
def test_real_krew_rejects_what_the_validator_rejects(mutation: Callable[[dict], None], krew_bin: Path,
                                                       tmp_path: Path) -> None:
    """The structural rules are krew's: `kubectl krew install --manifest` refuses each broken manifest."""
    manifest = manifest_for_small_archive(tmp_path)
    mutation(manifest)
    proc = krew_install(krew_bin, manifest, tmp_path)
    assert proc.returncode != 0
    assert "validation error" in proc.stderr or "failed to load plugin manifest" in proc.stderr, proc.stderr
    assert not (tmp_path / "root" / "receipts" / "desched.yaml").exists()


def _tarball(path: Path, members: list[tuple[str, bytes, int, bytes]]) -> Path:
    """(name, data, mode, type) members; type tarfile.SYMTYPE makes a symlink to data."""
    with tarfile.open(path, "w:gz") as tar:
        for name, data, mode, kind in members:
            info = tarfile.TarInfo(name)
            info.mode, info.type = mode, kind
            if kind == tarfile.SYMTYPE:
                info.linkname = data.decode()
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


GOOD = [("kubectl-desched", b"#!/usr/bin/env python3\n", 0o755, tarfile.REGTYPE),
        ("LICENSE", b"license", 0o644, tarfile.REGTYPE),
        ("kubectl_complete-desched", b"#!/bin/sh\n", 0o755, tarfile.REGTYPE)]


@pytest.mark.parametrize(("members", "expected"), [
    (GOOD, None),
    ([(GOOD[0][0], GOOD[0][1], 0o644, tarfile.REGTYPE), *GOOD[1:]], "krew never chmods"),
    ([GOOD[0], GOOD[2]], "no file matches `from` 'LICENSE'"),
    ([GOOD[1], GOOD[2]], "no file matches `from` 'kubectl-desched'"),
    ([*GOOD, ("link", b"kubectl-desched", 0o777, tarfile.SYMTYPE)], "is a link"),
], ids=["good", "not-executable", "no-license", "no-executable", "symlink"])
def test_archive_rules(members: list, expected: str | None, tmp_path: Path) -> None:
    archive = _tarball(tmp_path / "a.tar.gz", members)
    platform = copy.deepcopy(rendered_template()["spec"]["platforms"][0])
    platform["sha256"] = hashlib.sha256(archive.read_bytes()).hexdigest()
    errors = archive_errors(platform, archive)
    assert errors == [] if expected is None else any(expected in e for e in errors), errors
    platform["sha256"] = "0" * 64
    assert any("does not match" in e for e in archive_errors(platform, archive))


def test_lock_pins_every_dependency_of_the_package() -> None:
    """A dependency added to pyproject but not to krew/requirements.lock would be missing from the archives."""
    pins = {}
    for line in (ROOT / "krew" / "requirements.lock").read_text().splitlines():
        pin = line.split("#")[0].strip()
        if pin:
            name, version = pin.split("==")
            pins[name] = version
    for dependency in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]:
        requirement = Requirement(dependency)
        name = requirement.name.lower().replace("_", "-")
        assert name in pins, f"{name} is not in krew/requirements.lock: run scripts/build-krew --lock"
        assert requirement.specifier.contains(pins[name]), f"{name}=={pins[name]} does not satisfy {requirement}"
