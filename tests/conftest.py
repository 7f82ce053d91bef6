"""Shared fixtures: an in-process moto backend built from template.yaml, and cache resets."""

from __future__ import annotations

import os

import pytest


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
