"""The exit codes every command uses, in one table (the README's "Exit codes" lists the same): a pipeline can tell
a plan that went stale from an error, and either from a "no" at the prompt."""

from __future__ import annotations

DONE = 0  # every confirmed eviction succeeded, nothing to do, or a preview
ERROR = 1  # an error, or a confirmed eviction that did not succeed
USAGE = 2  # bad flags, files, kubeconfig, policy or plan document
NOT_CONFIRMED = 3  # candidates found, nothing evicted: not confirmed
STALE = 4  # apply: some candidates were stale or refused by the checks and left out (--strict: all were)
INTERRUPTED = 130  # Ctrl-C; any signal N gives 128+N (SIGTERM 143, SIGHUP 129)

TABLE = (
    (DONE, "done: every confirmed eviction succeeded, nothing to do, or a preview"),
    (ERROR, "an error, or a confirmed eviction that did not succeed"),
    (USAGE, "usage: bad flags, files, kubeconfig, policy or plan document"),
    (NOT_CONFIRMED, "candidates found but not confirmed: nothing was evicted"),
    (STALE, "apply: candidates stale or refused by the checks were left out (--strict: the whole plan was "
            "refused), or the plan is older than --max-age"),
    (INTERRUPTED, "interrupted: 128+N for signal N (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP)"),
)
