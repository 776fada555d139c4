"""Policy files: reading a policy (and an `@FILE` patch) from disk or standard input, then decoding it. Kept
apart from the decoder so that decoding never does I/O."""

from __future__ import annotations

from typing import Any

from kubectl_desched import safeload
from kubectl_desched.errors import UsageError
from kubectl_desched.framework.policy import Policy
from kubectl_desched.framework.policy_decoder import apply_patch, decode_policy
from kubectl_desched.framework.registry import Registry
from kubectl_desched.kube.snapshot import read_text


def read_policy_file(path: str) -> dict[str, Any]:
    """The policy's YAML, decoded as upstream decodes it (YAML 1.1: `yes` and `y` are booleans), bounded in size,
    depth and alias expansion (safeload.py)."""
    raw = safeload.yaml_value(read_text(path), path)
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: a policy must be a YAML object with apiVersion and kind")
    return raw


def patch_text(given: str) -> str:
    """--policy-patch as given: inline, or `@FILE` read from a file."""
    return read_text(given[1:]) if given.startswith("@") else given


def load_policy(path: str, registry: Registry, patch: str | None = None) -> Policy:
    raw = read_policy_file(path)
    if patch:
        raw = apply_patch(raw, patch_text(patch))
    policy = decode_policy(raw, registry, path)
    policy.patched = bool(patch)
    return policy
