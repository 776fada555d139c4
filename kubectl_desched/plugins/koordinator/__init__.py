"""Koordinator's koord-descheduler plugins: LowNodeLoad, MigrationController with its arbitration, and the
priority and QoS classes they read (classes.py)."""
