"""What a function does during Lambda init, and the SnapStart runtime hooks.

``app.py`` (through :func:`vaultcore.api.handler.api_handler`, or directly) calls :func:`init` while Lambda imports
it, after its own imports (the route's modules, and what the route imports lazily on its usual path): the AWS
clients are created then, not on the first request. Init runs with a full CPU, provisioned concurrency runs it
ahead of traffic, and SnapStart snapshots its result.

SnapStart clones one snapshot into many sandboxes, so nothing that must be unique or secret may be in it. The
hooks (registered only where the runtime's ``snapshot_restore_py`` module exists, i.e. in Lambda's managed
python runtimes) make sure of that:

* before the snapshot: every per-container cache is emptied, the key caches first (no unwrapped key material in
  a snapshot), and every module's other per-container state (``reset_caches()``: HTTP pools, fingerprint key);
* after a restore: the ``random`` module is reseeded (``secrets``, ``os.urandom`` and ``uuid4`` read the kernel
  and need nothing), and every AWS client's pooled connections are closed so new ones are opened.
"""

from __future__ import annotations

import gc
import random
import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["init", "register_snapshot_hooks", "before_snapshot", "after_restore"]

_registered: list[Any] = []  # the snapshot_restore_py module the hooks went to (once per process)


def init(aws: Iterable[str] = ()) -> None:
    """Create the ``aws`` clients (vaultcore.store.aws) and register the snapshot hooks."""
    services = tuple(aws)
    if services:
        from vaultcore.store.aws import prewarm

        prewarm(services)
    register_snapshot_hooks()


def register_snapshot_hooks() -> bool:
    """Register :func:`before_snapshot` and :func:`after_restore` with the runtime; False where there is no
    SnapStart runtime module (local runner, tests, non-SnapStart runtimes). Idempotent."""
    try:
        import snapshot_restore_py
    except ImportError:
        return False
    if snapshot_restore_py in _registered:
        return True
    snapshot_restore_py.register_before_snapshot(before_snapshot)
    snapshot_restore_py.register_after_restore(after_restore)
    _registered.append(snapshot_restore_py)
    return True


def before_snapshot() -> None:
    """Nothing secret or per-sandbox goes into the snapshot."""
    from vaultcore.cache import reset_container_caches

    reset_container_caches()  # unwrapped keys (store.keys, tokens.keys), records
    for name, module in list(sys.modules.items()):
        if name.startswith("vaultcore.") and callable(getattr(module, "reset_caches", None)):
            module.reset_caches()
    from vaultcore.store.aws import renew_connections

    renew_connections()  # no socket in the snapshot
    gc.collect()


def after_restore() -> None:
    """Each restored sandbox gets its own random state and its own connections."""
    random.seed()
    from vaultcore.store.aws import renew_connections

    renew_connections()
