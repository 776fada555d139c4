"""kubectl-desched: interactive descheduling from the operator's terminal."""

__version__ = "0.1.0"
