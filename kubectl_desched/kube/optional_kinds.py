"""Kinds a plugin (or --surge) uses when it can have them: a snapshot may leave them out (the user is then told what
could not be checked), a live read that may not list them (403) warns and goes on, and an unserved API (404) means
none exist. Apart from kube/live.py, so a snapshot's read names them without loading the HTTP client."""

OPTIONAL_KINDS = frozenset({"ReplicaSet", "Deployment", "StatefulSet", "ReplicationController", "PodMigrationJob",
                            "HorizontalPodAutoscaler"})
