"""Issue 19: fuzzed and malformed payment iFrame configuration and instance requests get documented 4xx, never
a 500 (one moto platform for every example: hypothesis re-runs the test body, not the fixture)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.integration.test_iframe import Iframe

_MEMBER = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=20), st.lists(st.text(max_size=8)),
                    st.dictionaries(st.text(max_size=8), st.text(max_size=8)))


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(body=st.one_of(_MEMBER, st.dictionaries(st.sampled_from(["label", "language", "timeout", "currency",
                                                                 "allowedPaymentMethods", "allowedParentDomains",
                                                                 "cardSettings", "achSettings", "antiFraud",
                                                                 "clickToPaySettings", "reference", "tokens",
                                                                 "customer", "initializeTransaction", "x"]),
                                   _MEMBER)))
def test_fuzzed_configuration_and_instance_bodies_get_documented_4xx(shop_for_fuzz, body):
    # issue 30: the original's ApiViolation, validation 422 (our errCode kept as its extension member)
    shop = shop_for_fuzz
    status, err = shop.api("POST", "", body)
    assert status in (201, 400, 422), (status, err)
    if status != 201:
        assert err["errCode"] in (400, 901, 903) and err["errorType"] == "invalid_request"
        assert err["errorCode"] == "40001" and isinstance(err["details"], list)
    status, err = shop.api("POST", "/{id}/instance/init", body)
    assert status in (201, 400, 422), (status, err)
    if status != 201:
        assert err["errCode"] in (400, 902) and err["errorType"] == "invalid_request"


@pytest.fixture(scope="module")
def shop_for_fuzz():
    """One platform for every fuzzed example."""
    from moto import mock_aws

    saved = dict(os.environ)
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "VAULT_AWS_SDK": "botocore"})
    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE"):
        os.environ.pop(name, None)
    from local import moto_atomic
    from tests.conftest import reset_platform_state

    moto_atomic.install()
    with mock_aws():
        from local.runner import Platform

        p = Platform("cert")
        p.create_resources()
        reset_platform_state()
        shop = Iframe(p)
        shop.configure()
        yield shop
    os.environ.clear()
    os.environ.update(saved)
    reset_platform_state()
