"""The checks krew v0.4.4 applies to a plugin manifest, as one function that lists every violation.

Sources (krew's Go code, read for its rules only): internal/index/validation/validate.go (structure),
cmd/validate-krew-manifest/main.go (file name, selectors matching a supported platform and not overlapping,
a license file installed), internal/installation (files/bin paths, archive handling), plus the archive checks
krew makes at install time (sha256, no links, the entry point executable since krew never chmods).
"""

from __future__ import annotations

import fnmatch
import hashlib
import posixpath
import re
import tarfile
from pathlib import Path
from typing import Any

API_VERSION = "krew.googlecontainertools.github.com/v1alpha2"
SAFE_NAME = re.compile(r"^[\w-]+$", re.ASCII)
WINDOWS_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}
SHA256 = re.compile(r"^[a-f0-9]{64}$")
# k8s.io/apimachinery's ParseSemantic (semver 2.0), after krew's own check for the leading "v".
_NUM = r"(0|[1-9][0-9]*)"
_PRE_ID = r"(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
SEMVER = re.compile(rf"^v{_NUM}\.{_NUM}\.{_NUM}(-{_PRE_ID}(\.{_PRE_ID})*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$")
# The os/arch pairs validate-krew-manifest knows.
SUPPORTED_PLATFORMS = [("windows", "386"), ("windows", "amd64"), ("windows", "arm64"), ("linux", "386"),
                       ("linux", "amd64"), ("linux", "arm"), ("linux", "arm64"), ("linux", "ppc64le"),
                       ("darwin", "386"), ("darwin", "amd64"), ("darwin", "arm64")]
LICENSE_FILES = {"license", "license.txt", "license.md", "licenses", "licenses.txt", "licenses.md", "copying",
                 "copying.txt"}
SHORT_DESCRIPTION_SHOWN = 50  # krew-index convention: `kubectl krew search` cuts it there


def selector_matches(selector: dict[str, Any], os_name: str, arch: str) -> bool:
    labels = {"os": os_name, "arch": arch}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        present, values = expr.get("key") in labels, expr.get("values") or []
        value = labels.get(expr.get("key"))
        op = expr.get("operator")
        ok = {"In": present and value in values, "NotIn": not present or value not in values,
              "Exists": present, "DoesNotExist": not present}.get(op, False)
        if not ok:
            return False
    return True


def _selector_errors(selector: Any) -> list[str]:
    if not isinstance(selector, dict):
        return ["nil selector is not supported"]
    labels, exprs = selector.get("matchLabels"), selector.get("matchExpressions")
    if labels is None and not exprs:
        return ["empty selector is not supported"]
    errors = [f"selector key {key!r} not supported (only os and arch)"
              for key in [*(labels or {}), *(e.get("key") for e in exprs or [])] if key not in ("os", "arch")]
    if labels is not None and len(labels) == 0:
        errors.append("`matchLabels` specified but empty")
    if exprs is not None and len(exprs) == 0:
        errors.append("`matchExpressions` specified but empty")
    return errors


def _relative_inside(path: str) -> bool:
    return not posixpath.isabs(path) and posixpath.normpath(path) != ".." and not posixpath.normpath(
        path).startswith("../")


def _platform_errors(platform: dict[str, Any]) -> list[str]:
    errors = []
    if not platform.get("uri"):
        errors.append("`uri` has to be set")
    sha = platform.get("sha256")
    if not sha:
        errors.append("`sha256` sum has to be set")
    elif not SHA256.match(str(sha)):
        errors.append(f"`sha256` value {sha} is not valid, must be 64 lowercase hex digits")
    bin_path = platform.get("bin")
    if not bin_path:
        errors.append("`bin` has to be set")
    elif not _relative_inside(bin_path):
        errors.append(f"`bin` {bin_path!r} is outside the installation directory")
    files = platform.get("files")
    if files is not None:
        if len(files) == 0:
            errors.append("`files` has to be unspecified or non-empty")
        for op in files:
            if not op.get("from"):
                errors.append("`from` field has to be set")
            elif not _relative_inside(op["from"]):
                errors.append(f"`from` {op['from']!r} is outside the archive")
            if not op.get("to"):
                errors.append("`to` field has to be set")
            elif posixpath.normpath(op["to"]) != op["to"] or not _relative_inside(op["to"]):
                errors.append(f"`to` {op['to']!r} must be a clean path inside the installation directory")
    errors += _selector_errors(platform.get("selector"))
    return errors


def validate(manifest: Any, file_name: str) -> list[str]:
    """Every rule krew applies to the manifest alone; [] when krew would accept it."""
    if not isinstance(manifest, dict):
        return ["not a YAML mapping"]
    errors = []
    stem, ext = posixpath.splitext(file_name)
    if ext != ".yaml":
        errors.append(f"expected manifest extension .yaml but found {ext!r}")
    if manifest.get("apiVersion") != API_VERSION:
        errors.append(f"apiVersion={manifest.get('apiVersion')!r} is not supported")
    if manifest.get("kind") != "Plugin":
        errors.append(f"kind={manifest.get('kind')!r}, only 'Plugin' is supported")
    name = (manifest.get("metadata") or {}).get("name")
    if not SAFE_NAME.match(stem) or stem.upper() in WINDOWS_RESERVED:
        errors.append(f"the plugin name {stem!r} is not allowed")
    if name != stem:
        errors.append(f"plugin should be named {stem!r}, not {name!r}")
    spec = manifest.get("spec") or {}
    short = spec.get("shortDescription") or ""
    if not short:
        errors.append("should have a short description")
    elif "\n" in short or "\r" in short:
        errors.append("should not have line breaks in short description")
    elif len(short) > SHORT_DESCRIPTION_SHOWN:
        errors.append(f"short description longer than {SHORT_DESCRIPTION_SHOWN} characters is cut")
    platforms = spec.get("platforms") or []
    if not platforms:
        errors.append("should have a platform specified")
    version = spec.get("version")
    if not version:
        errors.append("should have a version specified")
    elif not SEMVER.match(str(version)):
        errors.append(f"version {version!r} is not a semantic version starting with 'v'")
    for i, platform in enumerate(platforms):
        own = _platform_errors(platform)
        errors += [f"platforms[{i}]: {e}" for e in own]
        if not own and not any(selector_matches(platform["selector"], *p) for p in SUPPORTED_PLATFORMS):
            errors.append(f"platforms[{i}]: selector doesn't match any supported platform")
    if not errors:
        for os_name, arch in SUPPORTED_PLATFORMS:
            matching = [i for i, p in enumerate(platforms) if selector_matches(p["selector"], os_name, arch)]
            if len(matching) > 1:
                errors.append(f"platforms {matching} have overlapping selectors that select {os_name}/{arch}")
        for i, platform in enumerate(platforms):
            froms = [op["from"] for op in platform.get("files") or [{"from": "*"}]]
            if not any(posixpath.basename(f).lower() in LICENSE_FILES or f == "*" for f in froms):
                errors.append(f"platforms[{i}]: no license file among the installed files {froms}")
    return errors


def archive_errors(platform: dict[str, Any], archive: Path) -> list[str]:
    """What krew's install would reject in this platform's archive (or install without a license/executable)."""
    errors = []
    digest = hashlib.sha256(archive.read_bytes()).hexdigest()
    if digest != platform["sha256"]:
        errors.append(f"{archive.name}: sha256 {digest} does not match the manifest's {platform['sha256']}")
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
    files = {m.name.rstrip("/"): m for m in members if m.isfile()}
    errors += [f"{archive.name}: {m.name} is a link, which krew refuses" for m in members if m.issym() or m.islnk()]
    installed: dict[str, tarfile.TarInfo] = {}
    for op in platform.get("files") or [{"from": "*", "to": "."}]:
        matched = [name for name in files if fnmatch.fnmatch(name, op["from"])]
        if not matched:
            errors.append(f"{archive.name}: no file matches `from` {op['from']!r}")
        for name in matched:
            installed[posixpath.normpath(posixpath.join(op["to"], posixpath.basename(name)))] = files[name]
    entry = installed.get(posixpath.normpath(platform["bin"]))
    if entry is None:
        errors.append(f"{archive.name}: `bin` {platform['bin']} is not installed from the archive")
    elif entry.mode & 0o111 != 0o111:
        errors.append(f"{archive.name}: {entry.name} has mode {entry.mode:o}; krew never chmods, it must be 0755")
    if not any(posixpath.basename(name).lower() in LICENSE_FILES for name in installed):
        errors.append(f"{archive.name}: no license file is installed")
    return errors
