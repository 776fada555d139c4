"""Values of Koordinator's PodMigrationJob API (scheduling.koordinator.sh/v1alpha1) that the command line, the
MigrationController plugin and the migration evictor share. Kept apart from all three, as Koordinator keeps its API
types, so that the command line's --migration-mode does not import the plugins to list its choices."""

RESERVATION_FIRST = "ReservationFirst"  # spec.mode, and Koordinator's default
EVICT_DIRECTLY = "EvictDirectly"
JOB_MODES = (RESERVATION_FIRST, EVICT_DIRECTLY)
