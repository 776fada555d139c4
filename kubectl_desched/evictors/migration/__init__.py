"""--evictor migration: Koordinator PodMigrationJobs instead of Evictions. The evictor (evictor.py), the jobs'
bodies and tracking (jobs.py), the watch that follows them (follow.py), and how they are shown (text.py)."""
