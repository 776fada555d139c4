"""Which evictor acts: the one table of evictors (EVICTORS), and the one place that names the concrete ones.
Each entry is an --evictor value with its help, how the evictor is built, and what the --report records of its
settings; --evictor's choices and help are read from the table. The evictors are imported only when one is built,
so the command line reads the table at start-up for the price of this module."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kubectl_desched.evictors.base import PodEvictor
    from kubectl_desched.evictors.eviction_api import Progress
    from kubectl_desched.evictors.migration.options import MigrationOptions
    from kubectl_desched.kube.config import Connection

Say = Callable[[str], None]

# --timeout when not given: how long an eviction a PodDisruptionBudget refuses is retried, and how long --wait-ready
# and the landing wait wait. Kept here, beside --evictor's table, so that --help states it without loading app/.
DEFAULT_TIMEOUT = 300.0


class Acting(Protocol):
    """What an evictor is built from of the acting options (app/options.py's ActOptions)."""

    @property
    def evictor(self) -> str: ...

    @property
    def grace_period(self) -> int | None: ...

    @property
    def timeout(self) -> float: ...

    @property
    def migration(self) -> MigrationOptions | None: ...


@dataclass(frozen=True)
class Build:
    """What every evictor may be built from, beside the acting options."""

    conn: Connection
    server_dry_run: bool
    progress: Progress | None  # None: quiet (no per-pod lines)
    profiles: Sequence[Any]  # the policy's profiles (a PodMigrationJob takes its defaults from them)
    say: Say


def _eviction_api(acting: Acting, b: Build) -> PodEvictor:
    from kubectl_desched.evictors.eviction_api import EvictionApiEvictor
    return EvictionApiEvictor(b.conn, server_dry_run=b.server_dry_run, grace_period=acting.grace_period,
                              timeout=acting.timeout, progress=b.progress)


def _migration(acting: Acting, b: Build) -> PodEvictor:
    from kubectl_desched.evictors.migration.evictor import MigrationEvictor
    from kubectl_desched.evictors.migration.jobs import profile_settings
    from kubectl_desched.evictors.migration.text import phase_line
    migration = acting.migration
    assert migration is not None
    settings = profile_settings(b.profiles, migration.mode, migration.ttl, acting.grace_period)
    show = (lambda track: b.say(phase_line(track))) if b.progress else None
    return MigrationEvictor(b.conn, settings, server_dry_run=b.server_dry_run, wait=migration.wait,
                            timeout=migration.timeout, on_phase=show)


def _migration_settings(acting: Acting) -> dict[str, Any]:
    m = acting.migration
    assert m is not None
    return {"migration": {"mode": m.mode, "ttl": m.ttl, "wait": m.wait,
                          "timeout": m.timeout}}  # None: the policy's or Koordinator's default


@dataclass(frozen=True)
class Entry:
    help: str  # --evictor's help for this value
    build: Callable[[Acting, Build], PodEvictor]
    settings: Callable[[Acting], dict[str, Any]]


EVICTORS: dict[str, Entry] = {  # the first is --evictor's default
    "eviction": Entry("the Eviction API", _eviction_api, lambda _acting: {}),
    "migration": Entry("create Koordinator PodMigrationJobs", _migration, _migration_settings),
}


def settings_doc(acting: Acting) -> dict[str, Any]:
    """The report's sections about the chosen evictor's own settings."""
    return EVICTORS[acting.evictor].settings(acting)


def make_evictor(acting: Acting, build: Build) -> PodEvictor:
    return EVICTORS[acting.evictor].build(acting, build)
