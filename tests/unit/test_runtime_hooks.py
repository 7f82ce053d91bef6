"""Init and the SnapStart runtime hooks (vaultcore.runtime), with a fake ``snapshot_restore_py`` module: nothing
a snapshot must not clone survives the before-snapshot hook (unwrapped keys, records, pooled connections), and
each restored sandbox renews its random state and connections. Also the AWS client registry (one botocore
session, connection renewal) and the DynamoDB attribute conversion that replaced boto3's."""

from __future__ import annotations

import random
import sys
import types
from decimal import Decimal

import pytest

from vaultcore import runtime
from vaultcore.cache import ContainerCache
from vaultcore.store import aws


class FakeSnapshotRestore(types.ModuleType):
    """What Lambda's managed python runtimes provide as ``snapshot_restore_py``."""

    def __init__(self) -> None:
        super().__init__("snapshot_restore_py")
        self.before: list = []
        self.after: list = []

    def register_before_snapshot(self, func, *args, **kwargs):
        self.before.append((func, args, kwargs))
        return func

    def register_after_restore(self, func, *args, **kwargs):
        self.after.append((func, args, kwargs))
        return func

    def snapshot(self) -> None:  # the runtime runs before-snapshot hooks in reverse order of registration
        for func, args, kwargs in reversed(self.before):
            func(*args, **kwargs)

    def restore(self) -> None:
        for func, args, kwargs in self.after:
            func(*args, **kwargs)


@pytest.fixture
def snapstart(monkeypatch):
    fake = FakeSnapshotRestore()
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    monkeypatch.setattr(runtime, "_registered", [])
    return fake


class FakeHttpSession:
    def __init__(self) -> None:
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


def _fake_client() -> types.SimpleNamespace:
    return types.SimpleNamespace(_endpoint=types.SimpleNamespace(http_session=FakeHttpSession()))


def test_hooks_are_registered_once_where_the_runtime_module_exists(snapstart):
    assert runtime.register_snapshot_hooks() is True
    assert runtime.register_snapshot_hooks() is True
    runtime.init()
    assert [f for f, _, _ in snapstart.before] == [runtime.before_snapshot]
    assert [f for f, _, _ in snapstart.after] == [runtime.after_restore]


def test_no_hooks_without_the_runtime_module(monkeypatch):
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", None)  # import raises ImportError
    monkeypatch.setattr(runtime, "_registered", [])
    assert runtime.register_snapshot_hooks() is False
    runtime.init()  # and init works all the same


def test_before_snapshot_leaves_no_key_material_records_or_connections(snapstart, monkeypatch):
    from vaultcore.store import keys
    from vaultcore.tokens import keys as token_keys

    runtime.register_snapshot_hooks()
    keys._cache.put("some-envelope", b"\x01" * 32)  # an unwrapped secret
    token_keys._subkey_cache.put(("p", 1), b"\x02" * 32)
    records: ContainerCache[str] = ContainerCache(60)
    records.put("partner", "record")
    inner = keys._cache._cache()
    reset_calls = []
    fake_module = types.ModuleType("vaultcore._fake_stateful")
    fake_module.reset_caches = lambda: reset_calls.append(True)
    monkeypatch.setitem(sys.modules, "vaultcore._fake_stateful", fake_module)
    client = _fake_client()
    monkeypatch.setitem(aws._clients, "dynamodb", client)

    snapstart.snapshot()

    assert keys._cache._inner is None and token_keys._subkey_cache._inner is None and records._inner is None
    assert inner.get("some-envelope") is None  # the entries themselves were dropped, not just the cache
    assert keys._cache.get("some-envelope") is None and records.get("partner") is None
    assert reset_calls == [True]  # every module's other per-container state
    assert client._endpoint.http_session.closed == 1


def test_after_restore_renews_random_state_and_connections(snapstart, monkeypatch):
    runtime.register_snapshot_hooks()
    client = _fake_client()
    monkeypatch.setitem(aws._clients, "kms", client)
    random.seed(1234)
    snapshotted = random.getstate()
    cloned = [random.random() for _ in range(4)]  # what every clone of the snapshot would draw

    snapstart.restore()

    assert random.getstate() != snapshotted
    assert [random.random() for _ in range(4)] != cloned
    assert client._endpoint.http_session.closed == 1


def test_clients_share_one_botocore_session_and_survive_connection_renewal(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    aws.reset_clients()
    try:
        aws.prewarm(("dynamodb", "kms"))
        session = aws.session()
        assert set(aws.created_clients()) == {"dynamodb", "kms"}
        assert aws.client("dynamodb") is aws.created_clients()["dynamodb"]
        aws.client("sqs")
        assert aws.session() is session
        aws.renew_connections()  # closes pools; the clients stay usable
        assert aws.client("kms").meta.service_model.service_name == "kms"
    finally:
        aws.reset_clients()


@pytest.mark.parametrize(("environment", "created"), [("cert", set()), ("prod", {"payment-cryptography-data"})])
def test_prod_only_clients(monkeypatch, environment, created):
    from vaultcore.settings import reset_settings

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("ENVIRONMENT", environment)
    reset_settings()
    aws.reset_clients()
    try:
        aws.prewarm(("payment-cryptography-data@prod",))
        assert set(aws.created_clients()) == created
    finally:
        aws.reset_clients()
        monkeypatch.delenv("ENVIRONMENT")
        reset_settings()


def test_prewarm_without_a_region_leaves_the_error_to_the_first_call(monkeypatch):
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    aws.reset_clients()
    try:
        aws.prewarm(("dynamodb",))  # no exception at init
        assert aws.created_clients() == {}
    finally:
        aws.reset_clients()


def test_service_names_answer_like_botocore_without_listing(monkeypatch):
    aws.reset_clients()
    try:
        loader = aws.session().get_component("data_loader")
        names = loader.list_available_services("service-2")
        assert "dynamodb" in names and "payment-cryptography-data" in names and "no-such-service" not in names
        from botocore.loaders import Loader

        assert list(names) == Loader().list_available_services("service-2")
    finally:
        aws.reset_clients()


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 10**30, Decimal("1.5"), Decimal("-0.000123"), "", "text", b"\x00\xff",
    bytearray(b"ab"), [1, "a", None, [True]], {"m": {"n": 1, "l": [b"x"]}}, {"a", "b"}, {1, 2}, {b"x", b"y"},
    (1, 2),
])
def test_attribute_values_match_boto3(value):
    from boto3.dynamodb.types import TypeDeserializer, TypeSerializer

    from vaultcore.store.ddb import deserialize, serialize

    ours, theirs = serialize(value), TypeSerializer().serialize(value)
    if isinstance(value, set):
        key = next(iter(theirs))
        assert set(ours) == {key} and sorted(ours[key]) == sorted(theirs[key])
    else:
        assert ours == theirs
    back, boto_back = deserialize(theirs), TypeDeserializer().deserialize(theirs)
    if isinstance(boto_back, set):
        boto_back = {getattr(v, "value", v) for v in boto_back}
    elif type(boto_back).__name__ == "Binary":
        boto_back = boto_back.value
    assert back == boto_back


@pytest.mark.parametrize("value", [1.5, Decimal("Infinity"), Decimal("NaN"), Decimal("1" * 39), object()])
def test_attribute_values_refused_like_boto3(value):
    from boto3.dynamodb.types import TypeSerializer

    from vaultcore.store.ddb import serialize

    with pytest.raises(Exception) as ours:  # noqa: PT011 - the same refusal as boto3's, whatever its class
        serialize(value)
    with pytest.raises(type(ours.value)):
        TypeSerializer().serialize(value)
