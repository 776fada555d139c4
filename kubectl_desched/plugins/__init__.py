"""In-tree plugins, one module each, named as upstream."""

from kubectl_desched.framework.registry import PluginSpec, Registry
from kubectl_desched.plugins.koordinator.lownodeload import LowNodeLoad
from kubectl_desched.plugins.koordinator.migrationcontroller import MigrationController
from kubectl_desched.plugins.upstream.defaultevictor import DefaultEvictor
from kubectl_desched.plugins.upstream.highnodeutilization import HighNodeUtilization
from kubectl_desched.plugins.upstream.lownodeutilization import LowNodeUtilization
from kubectl_desched.plugins.upstream.podlifetime import PodLifeTime
from kubectl_desched.plugins.upstream.removeduplicates import RemoveDuplicates
from kubectl_desched.plugins.upstream.removefailedpods import RemoveFailedPods
from kubectl_desched.plugins.upstream.removepodshavingtoomanyrestarts import RemovePodsHavingTooManyRestarts
from kubectl_desched.plugins.upstream.removepodsviolatinginterpodantiaffinity import (
    RemovePodsViolatingInterPodAntiAffinity,
)
from kubectl_desched.plugins.upstream.removepodsviolatingnodeaffinity import RemovePodsViolatingNodeAffinity
from kubectl_desched.plugins.upstream.removepodsviolatingnodetaints import RemovePodsViolatingNodeTaints
from kubectl_desched.plugins.upstream.removepodsviolatingtopologyspreadconstraint import (
    RemovePodsViolatingTopologySpreadConstraint,
)

IN_TREE = (
    DefaultEvictor,
    HighNodeUtilization,
    LowNodeLoad,
    LowNodeUtilization,
    MigrationController,
    PodLifeTime,
    RemoveDuplicates,
    RemoveFailedPods,
    RemovePodsHavingTooManyRestarts,
    RemovePodsViolatingInterPodAntiAffinity,
    RemovePodsViolatingNodeAffinity,
    RemovePodsViolatingNodeTaints,
    RemovePodsViolatingTopologySpreadConstraint,
)


def in_tree_registry() -> Registry:
    return Registry(PluginSpec.of(p, check=False) for p in IN_TREE)  # checked by tests/unit/framework/test_registry.py


def full_registry() -> Registry:
    """In-tree plugins plus every installed out-of-tree plugin; broken ones are listed in .broken."""
    registry = in_tree_registry()
    registry.load_entry_points()
    return registry
