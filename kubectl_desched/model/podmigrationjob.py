"""Values of Koordinator's PodMigrationJob API (scheduling.koordinator.sh/v1alpha1) that the command line, the
MigrationController plugin and the migration evictor share. Kept apart from all three, as Koordinator keeps its API
types, so that the command line's --migration-mode lists its choices, and --timeout's and --migration-ttl's help state
the evictor's defaults, without importing the plugins or the evictor."""

RESERVATION_FIRST = "ReservationFirst"  # spec.mode, and Koordinator's default
EVICT_DIRECTLY = "EvictDirectly"
JOB_MODES = (RESERVATION_FIRST, EVICT_DIRECTLY)

# Koordinator's MigrationController default TTL (defaultJobTTL), 0 meaning none.
DEFAULT_TTL_SECONDS = 300.0
# When the controller's verdict comes: it checks a job's TTL only when it next reconciles the job, and a job whose
# eviction failed (a PDB, an error) is retried with a backoff that doubles up to 1000 s, so a job may fail with
# Timeout long after its TTL (a 90 s TTL failed at 165 s). Its scavenger, every minute, deletes any job 5 minutes
# past its TTL (30 minutes old without one): by then every job has ended or is gone. Waiting longer is pointless.
SCAVENGE_AFTER_TTL_SECONDS = 300.0
NO_TTL_SCAVENGE_SECONDS = 1800.0
SCAVENGE_PERIOD_SECONDS = 60.0
WAIT_MARGIN_SECONDS = 15.0
# How long the migration evictor waits without --timeout: past the longest TTL, or in all when a job has none.
WAIT_PAST_TTL_SECONDS = SCAVENGE_AFTER_TTL_SECONDS + SCAVENGE_PERIOD_SECONDS + WAIT_MARGIN_SECONDS
WAIT_WITHOUT_TTL_SECONDS = NO_TTL_SCAVENGE_SECONDS + SCAVENGE_PERIOD_SECONDS + WAIT_MARGIN_SECONDS
