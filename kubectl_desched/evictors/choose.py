"""Which evictor acts, chosen from the options: the one place that names the concrete evictors. Each entry says
when it applies, how it is built, and what the --report records of its settings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kubectl_desched.evictors.base import PodEvictor

if TYPE_CHECKING:
    from kubectl_desched.app.options import ActOptions
    from kubectl_desched.evictors.eviction_api import Progress
    from kubectl_desched.kube.config import Connection

Say = Callable[[str], None]


@dataclass(frozen=True)
class Build:
    """What every evictor may be built from, beside the acting options."""

    conn: Connection
    server_dry_run: bool
    progress: Progress | None  # None: quiet (no per-pod lines)
    profiles: Sequence[Any]  # the policy's profiles (a PodMigrationJob takes its defaults from them)
    say: Say


def _eviction_api(acting: ActOptions, b: Build) -> PodEvictor:
    from kubectl_desched.evictors.eviction_api import EvictionApiEvictor
    return EvictionApiEvictor(b.conn, server_dry_run=b.server_dry_run, grace_period=acting.grace_period,
                              timeout=acting.timeout, progress=b.progress)


def _migration(acting: ActOptions, b: Build) -> PodEvictor:
    from kubectl_desched.evictors.migration.evictor import MigrationEvictor
    from kubectl_desched.evictors.migration.jobs import profile_settings
    from kubectl_desched.evictors.migration.text import phase_line
    migration = acting.migration
    assert migration is not None
    settings = profile_settings(b.profiles, migration.mode, migration.ttl, acting.grace_period)
    show = (lambda track: b.say(phase_line(track))) if b.progress else None
    return MigrationEvictor(b.conn, settings, server_dry_run=b.server_dry_run, wait=migration.wait,
                            timeout=migration.timeout, on_phase=show)


def _migration_settings(acting: ActOptions) -> dict[str, Any]:
    m = acting.migration
    assert m is not None
    return {"migration": {"mode": m.mode, "ttl": m.ttl, "wait": m.wait,
                          "timeout": m.timeout}}  # None: the policy's or Koordinator's default


@dataclass(frozen=True)
class Entry:
    build: Callable[[ActOptions, Build], PodEvictor]
    settings: Callable[[ActOptions], dict[str, Any]]


EVICTORS: dict[str, Entry] = {
    "eviction-api": Entry(_eviction_api, lambda _acting: {}),
    "migration": Entry(_migration, _migration_settings),
}


def evictor_name(acting: ActOptions) -> str:
    """The evictor the options ask for (--evictor migration sets acting.migration)."""
    return "migration" if acting.migration is not None else "eviction-api"


def settings_doc(acting: ActOptions) -> dict[str, Any]:
    """The report's sections about the chosen evictor's own settings."""
    return EVICTORS[evictor_name(acting)].settings(acting)


def make_evictor(acting: ActOptions, build: Build) -> PodEvictor:
    return EVICTORS[evictor_name(acting)].build(acting, build)
