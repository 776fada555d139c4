"""--evictor migration's own settings, as the command line parsed them. Apart from the evictor so that the
command line and the acting options name the type without importing the kubernetes client."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MigrationOptions:
    """--evictor migration: Koordinator PodMigrationJobs instead of Evictions."""

    mode: str | None = None  # None: the policy's MigrationController defaultJobMode, else ReservationFirst
    ttl: float | None = None  # None: the policy's defaultJobTTL, else Koordinator's
    wait: bool = True
    timeout: float | None = None  # --timeout as given; None: the jobs' TTL decides
