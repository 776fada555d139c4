"""--report FILE: a JSON record of one run (what was planned, confirmed and done, with timestamps), written
atomically at the end whatever happened: success, failure, refusal, Ctrl-C, SIGTERM or SIGHUP. The path is
checked before anything else so a typo cannot surface only after pods were evicted."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from kubectl_desched import __version__
from kubectl_desched.errors import UsageError
from kubectl_desched.evictors.base import EvictionResult, now, timestamp
from kubectl_desched.framework.args import encode_args
from kubectl_desched.framework.placement import Placement
from kubectl_desched.framework.plan import Candidate
from kubectl_desched.framework.policy_decoder import Policy
from kubectl_desched.sanitize import redact
from kubectl_desched.ui.plan_view import candidate_doc, result_doc


def check_writable(path: str) -> None:
    """One clear error now for a report that could not be written later."""
    p = Path(path)
    if p.is_dir():
        raise UsageError(f"--report {path}: is a directory")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"--report {path}: directory {parent} does not exist")
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"--report {path}: not writable")
    try:
        fd, probe = tempfile.mkstemp(dir=parent, prefix=f".{p.name}.")
    except OSError as e:
        raise UsageError(f"--report {path}: cannot write in {parent}: {e.strerror or e}") from None
    os.close(fd)
    os.unlink(probe)


def redacted(value: Any) -> Any:
    """The document with no credential the tool holds in any string (sanitize.redact): an argument (--token), or
    server text that reached it some other way than through an error line."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {k: redacted(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redacted(v) for v in value]
    return value


def write_atomically(path: str, doc: dict[str, Any]) -> None:
    """Write beside the target and rename over it: a reader never sees half a report."""
    p = Path(path)
    fd, tmp = tempfile.mkstemp(dir=p.parent if str(p.parent) else ".", prefix=f".{p.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def policy_doc(policy: Policy) -> dict[str, Any]:
    """The policy as used: every profile's plugins with their effective args (defaults filled in) and limits."""
    def uses(items: list) -> list[dict[str, Any]]:
        return [{"name": u.spec.name, "args": encode_args(u.args) if u.args is not None else None} for u in items]

    return {
        "kind": policy.kind,
        "source": policy.source,
        "limits": {"maxNoOfPodsToEvictPerNode": policy.limits.per_node,
                   "maxNoOfPodsToEvictPerNamespace": policy.limits.per_namespace,
                   "maxNoOfPodsToEvictTotal": policy.limits.total},
        "profiles": [{"name": p.name, "deschedule": uses(p.deschedule), "balance": uses(p.balance),
                      "filter": uses(p.filters), "preEvictionFilter": uses(p.pre_eviction_filters)}
                     for p in policy.profiles],
    }


def summary_doc(results: list[EvictionResult], *, interrupted: bool, exit_code: int,
                interrupted_by: str | None = None) -> dict[str, Any]:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.outcome] = counts.get(r.outcome, 0) + 1
    doc = {"confirmed": len(results), "results": counts, "interrupted": interrupted, "exitCode": exit_code}
    if interrupted_by:  # Ctrl-C, SIGTERM or SIGHUP: only when interrupted, so other runs' summaries keep their shape
        doc["interruptedBy"] = interrupted_by
    return doc


class Report:
    """Filled in as the run goes; write() is called once from a finally block."""

    def __init__(self, path: str) -> None:
        check_writable(path)
        self.path = path
        self.doc: dict[str, Any] = {
            "apiVersion": "kubectl-desched/v1", "kind": "Report", "version": __version__,
            "arguments": sys.argv[1:], "startedAt": timestamp(now()), "finishedAt": None,
            "cluster": None, "source": None, "scope": None, "mode": None, "evictor": None, "pacing": None,
            "policy": None, "candidates": [], "preflight": None, "confirmation": None, "evictions": [],
            "summary": None, "error": None,
        }

    def candidates(self, candidates: list[Candidate], placement: Placement | None = None) -> None:
        self.doc["candidates"] = [candidate_doc(c, placement) for c in candidates]

    def confirmation(self, how: str, answer: str, chosen: list[Candidate]) -> None:
        self.doc["confirmation"] = {"how": how, "answer": answer, "at": timestamp(now()),
                                    "chosen": [f"{c.pod.namespace}/{c.pod.name}" for c in chosen]}

    def evictions(self, results: list[EvictionResult], *, interrupted: bool, exit_code: int,
                  interrupted_by: str | None = None) -> None:
        self.doc["evictions"] = [result_doc(r) for r in results]
        self.doc["summary"] = summary_doc(results, interrupted=interrupted, exit_code=exit_code,
                                          interrupted_by=interrupted_by)

    def finish(self, exit_code: int, interrupted_by: str | None = None) -> None:
        """The exit code the process will have, also in a run that sent nothing (a preview, a snapshot, a refusal,
        an error before acting): its summary counts no eviction."""
        if self.doc["summary"] is None:
            self.doc["summary"] = summary_doc([], interrupted=interrupted_by is not None, exit_code=exit_code,
                                              interrupted_by=interrupted_by)
        else:
            self.doc["summary"]["exitCode"] = exit_code

    def write(self) -> None:
        self.doc["finishedAt"] = timestamp(now())
        write_atomically(self.path, redacted(self.doc))
