"""In-tree plugins, one module each, named as upstream."""

from kubectl_desched.framework.registry import PluginSpec, Registry
from kubectl_desched.plugins.defaultevictor import DefaultEvictor
from kubectl_desched.plugins.highnodeutilization import HighNodeUtilization
from kubectl_desched.plugins.lownodeload import LowNodeLoad
from kubectl_desched.plugins.lownodeutilization import LowNodeUtilization
from kubectl_desched.plugins.migrationcontroller import MigrationController
from kubectl_desched.plugins.podlifetime import PodLifeTime
from kubectl_desched.plugins.removeduplicates import RemoveDuplicates
from kubectl_desched.plugins.removefailedpods import RemoveFailedPods
from kubectl_desched.plugins.removepodshavingtoomanyrestarts import RemovePodsHavingTooManyRestarts
from kubectl_desched.plugins.removepodsviolatinginterpodantiaffinity import RemovePodsViolatingInterPodAntiAffinity
from kubectl_desched.plugins.removepodsviolatingnodeaffinity import RemovePodsViolatingNodeAffinity
from kubectl_desched.plugins.removepodsviolatingnodetaints import RemovePodsViolatingNodeTaints
from kubectl_desched.plugins.removepodsviolatingtopologyspreadconstraint import (
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
