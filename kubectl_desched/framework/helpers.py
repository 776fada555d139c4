"""What a plugin needs besides the cluster state, found in one place: a pod's age on the run's clock
(`handle.state.now`, which `--now` sets for a snapshot) and the API's syntax rules for the label keys, label values
and taints a plugin's args name, so validate() refuses what the API server would."""

from __future__ import annotations

from datetime import datetime

from kubectl_desched.model.durations import parse_time
from kubectl_desched.model.names import label_key_problem, label_value_problem
from kubectl_desched.model.objects import Pod

__all__ = ["label_key_problem", "label_value_problem", "parse_time", "pod_age", "taint_problem"]


def pod_age(pod: Pod, now: datetime) -> float | None:
    """Seconds from the pod's creationTimestamp to `now` (pass handle.state.now); negative when it lies ahead,
    None when the pod has none."""
    created = parse_time(pod.created)
    return None if created is None else (now - created).total_seconds()


def taint_problem(text: str) -> str | None:
    """What is wrong with a taint written as KEY or KEY=VALUE (taint keys and values follow the label rules);
    None when it is valid. E.g. `invalid key: a label key has at most one '/'`."""
    key, sep, value = text.partition("=")
    problem = label_key_problem(key)
    if problem:
        return f"invalid key: {problem}"
    problem = label_value_problem(value) if sep else None
    return f"invalid value: {problem}" if problem else None
