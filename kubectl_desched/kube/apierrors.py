"""The kubernetes client's exception class, imported on first use. Importing the client costs about 0.5 s, which
`version`, `--help`, shell completion and snapshot runs must not pay; every request imports it anyway (kube/config.py).

An `except` clause's expression is evaluated only when an exception reaches it, so `except api_exception():` costs
nothing on the normal path."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TypeGuard

if TYPE_CHECKING:
    from kubernetes.client.exceptions import ApiException


def api_exception() -> type[ApiException]:
    from kubernetes.client.exceptions import ApiException
    return ApiException


def is_api_exception(e: BaseException) -> TypeGuard[ApiException]:
    """isinstance(e, ApiException) without importing the client: if it was never imported, e cannot be one."""
    module = sys.modules.get("kubernetes.client.exceptions")
    return module is not None and isinstance(e, module.ApiException)
