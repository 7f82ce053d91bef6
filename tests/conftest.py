"""Shared fixtures: an in-process moto backend built from template.yaml, and cache resets."""

from __future__ import annotations

import os

import pytest


def _share_sdk_models() -> None:
    """Every botocore session of the test process reads the SDK's model files once (issue 26).

    Each test platform (and each test's cold handlers) makes new sessions and clients, and botocore caches the
    parsed service models per loader instance only: re-reading and parsing them was about a quarter of a
    test platform's setup. The files are static, and botocore already shares one parsed copy among all the
    clients of a session, so sharing it among sessions changes nothing but the time. Keyed by the loader's
    search paths at the time of the call (boto3 adds its own after the loader is made).
    """
    from botocore import loaders

    shared: dict[tuple, object] = {}
    for name in ("list_available_services", "determine_latest_version", "list_api_versions", "load_service_model",
                 "load_data_with_path"):
        original = getattr(loaders.Loader, name)

        def cached(self, *args, _original=original, _name=name, **kwargs):
            key = (_name, tuple(self.search_paths), args, tuple(sorted(kwargs.items())))
            if key not in shared:
                shared[key] = _original(self, *args, **kwargs)
            return shared[key]

        setattr(loaders.Loader, name, cached)


_share_sdk_models()


def reset_platform_state() -> None:
    """Forget every per-container cache so each test starts cold (settings, clients, records, keys)."""
    from vaultcore import clock
    from vaultcore.cache import reset_container_caches
    from vaultcore.settings import reset_settings
    from vaultcore.store.aws import reset_clients

    reset_settings()
    reset_clients()
    reset_container_caches()  # every ContainerCache, wherever it is declared
    clock.set_offset(0)
    # Modules with other per-container state (compiled configs, HTTP pools, queue attributes) expose
    # reset_caches(): found by discovery, no list to keep.
    import sys

    for name, module in list(sys.modules.items()):
        if name.startswith("vaultcore.") and hasattr(module, "reset_caches"):
            module.reset_caches()


@pytest.fixture
def budget_clock(monkeypatch):
    """The work budgets' clock replaced by a :class:`tests.helpers.SteppingClock` (step 0 until a test sets it)."""
    from tests.helpers import SteppingClock
    from vaultcore.net import deadline

    stepping = SteppingClock(0.0)
    monkeypatch.setattr(deadline, "monotonic", stepping)
    return stepping


@pytest.fixture
def frozen_clock(monkeypatch) -> float:
    """The platform's clock (vaultcore.clock) stands still at the current second; ``clock.set_offset`` still moves
    it. For tests whose verdict turns on a window edge ("61 s in the future"): on a loaded machine real time
    passing between building a request and its check moved it inside the window (issue 26)."""
    import types

    from vaultcore import clock

    fixed = float(int(clock.time.time()))
    monkeypatch.setattr(clock, "time", types.SimpleNamespace(time=lambda: fixed))
    return fixed


@pytest.fixture
def bare_moto(monkeypatch):
    """An in-process moto with dummy credentials and DynamoDB's and SQS's semantics (local/moto_atomic.py), and
    nothing created in it: for tests of the runner's stand-ins themselves."""
    from moto import mock_aws

    from local import moto_atomic

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    moto_atomic.install()
    with mock_aws():
        yield


@pytest.fixture
def platform(monkeypatch):
    """Every table, queue and key of template.yaml in an in-process moto, and the handlers loaded from it."""
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    # In-process moto patches botocore's HTTP layer: these tests use botocore clients. The JSON-protocol client
    # is exercised over real HTTP against moto servers (tests/integration/test_aws_json_client.py, the e2e suite).
    monkeypatch.setenv("VAULT_AWS_SDK", "botocore")
    saved = dict(os.environ)
    from local import moto_atomic

    moto_atomic.install()  # conditional writes atomic per item, as DynamoDB's (moto checks, then writes)
    with mock_aws():
        from local.runner import Platform

        p = Platform("cert")
        p.create_resources()
        reset_platform_state()
        yield p
    os.environ.clear()
    os.environ.update(saved)
    reset_platform_state()
