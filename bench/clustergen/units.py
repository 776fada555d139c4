"""Constants, quantities, timestamps and image references every part of the generator shares."""

from __future__ import annotations

import hashlib
import time
from datetime import UTC, datetime
from functools import lru_cache

# The snapshot's "now": every timestamp is before it, so output never depends on the wall clock.
NOW = int(datetime(2025, 11, 3, 10, 0, tzinfo=UTC).timestamp())
KUBE_VERSION = "v1.34.1"
REGION = "eu-west-1"
REGISTRY = "123456789012.dkr.ecr.eu-west-1.amazonaws.com"
DAY = 86400

# kube's rand.SafeEncodeString alphabet: pod-template-hash and generated-name suffixes use it.
SAFE = "bcdfghjklmnpqrstvwxz2456789"
SYSTEM_NODE_CRITICAL = 2_000_001_000
SYSTEM_CLUSTER_CRITICAL = 2_000_000_000
PRIORITY_CLASSES = {
    "system-node-critical": SYSTEM_NODE_CRITICAL,
    "system-cluster-critical": SYSTEM_CLUSTER_CRITICAL,
    "business-critical": 1_000_000,
    "high-priority": 10_000,
    "low-priority": -10,
}

MI = 1 << 20
GI = 1 << 30

# ---------------------------------------------------------------------------------------------
# quantities


def fmt_cpu(millis: int) -> str:
    """Canonical cpu quantity, as the API server prints it: 2000 -> "2", 250 -> "250m"."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def fmt_mem(n: int, decimal: bool = False) -> str:
    """Canonical memory quantity: the largest suffix that keeps an integer (1536Mi, 2Gi, 500M)."""
    if decimal:
        for suffix, size in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
            if n % size == 0:
                return f"{n // size}{suffix}"
        return str(n)
    for suffix, size in (("Ti", 1 << 40), ("Gi", GI), ("Mi", MI), ("Ki", 1 << 10)):
        if n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)


_SUFFIX = {"Ki": 1 << 10, "Mi": MI, "Gi": GI, "Ti": 1 << 40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}


def parse_cpu(q: str) -> int:
    """Millicores of the quantities this module writes ("250m", "2", "1.5")."""
    return int(q[:-1]) if q.endswith("m") else round(float(q) * 1000)


def parse_mem(q: str) -> int:
    """Bytes of the quantities this module writes ("256Mi", "500M", "31946220Ki", "93478772582")."""
    for suffix in ("Ki", "Mi", "Gi", "Ti"):
        if q.endswith(suffix):
            return int(q[:-2]) * _SUFFIX[suffix]
    if q[-1:] in ("k", "M", "G", "T"):
        return int(q[:-1]) * _SUFFIX[q[-1]]
    return int(q)


def ts(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


@lru_cache(maxsize=65536)
def image_digest(image: str) -> str:
    return hashlib.sha256(image.encode()).hexdigest()


def image_ref(image: str) -> str:
    """The fully qualified name the runtime reports in containerStatuses[].image."""
    first = image.split("/", 1)[0]
    if "/" not in image:
        return f"docker.io/library/{image}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{image}"
    return image


def image_id(image: str) -> str:
    return f"{image_ref(image).rsplit(':', 1)[0]}@sha256:{image_digest(image)}"


