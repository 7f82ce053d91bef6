"""vaultcore.plain: the hand-written value classes that replaced dataclasses on the functions' cold path (issue 29)
keep what the dataclasses gave: constructor defaults, value equality and hashing, frozenness, a repr without the
hidden fields, replace(); and no function's init imports dataclasses any more."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from vaultcore.plain import Frozen, FrozenError, FrozenIdentity, Mutable, init, replace

ROOT = Path(__file__).resolve().parents[2]


class Point(Frozen):
    __slots__ = ("x", "y", "secret", "cache")
    _no_repr = frozenset({"secret", "cache"})
    _no_compare = frozenset({"cache"})
    x: int
    y: int
    secret: bytes | None
    cache: dict[str, int]

    def __init__(self, x: int, y: int = 0, secret: bytes | None = None, cache: dict[str, int] | None = None) -> None:
        init(self, x=x, y=y, secret=secret, cache={} if cache is None else cache)


class Box(Mutable):
    __slots__ = ("items", "label")
    items: list[int]
    label: str

    def __init__(self, items: list[int] | None = None, label: str = "") -> None:
        self.items = [] if items is None else items
        self.label = label


class Handle(FrozenIdentity):
    __slots__ = ("name",)
    name: str

    def __init__(self, name: str) -> None:
        init(self, name=name)


def test_frozen_compares_and_hashes_on_its_compared_fields() -> None:
    a, b = Point(1, 2, b"k", {"a": 1}), Point(1, 2, b"k", {"b": 2})
    assert a == b and hash(a) == hash(b)  # the cache is not compared
    assert a != Point(1, 3, b"k") and a != Point(1, 2, b"other")
    assert {a: "one"}[b] == "one"
    assert a != (1, 2, b"k")  # another class is never equal


def test_frozen_fields_cannot_change() -> None:
    p = Point(1)
    with pytest.raises(FrozenError):
        p.x = 5  # type: ignore[misc]  # the point of the test
    with pytest.raises(AttributeError):
        del p.y
    with pytest.raises(AttributeError):
        p.other = 1  # type: ignore[attr-defined]  # slots: no other attribute
    assert p.x == 1 and p.y == 0


def test_repr_hides_the_hidden_fields() -> None:
    text = repr(Point(1, 2, b"top-secret"))
    assert text == "Point(x=1, y=2)" and "top-secret" not in text


def test_replace_builds_through_init() -> None:
    p = Point(1, 2, b"k")
    q = replace(p, y=7)
    assert (q.x, q.y, q.secret) == (1, 7, b"k") and p.y == 2 and type(q) is Point


def test_mutable_compares_by_value_and_is_not_hashable() -> None:
    box = Box()
    box.items.append(1)
    assert box == Box([1]) and box != Box([1], "x")
    assert Box().items is not Box().items  # a fresh default each time, as default_factory
    with pytest.raises(TypeError):
        hash(box)
    box.label = "changed"
    assert box.label == "changed" and repr(box) == "Box(items=[1], label='changed')"


def test_identity_class_equals_only_itself() -> None:
    h = Handle("a")
    assert h == h and h != Handle("a") and len({h, Handle("a")}) == 2
    with pytest.raises(FrozenError):
        h.name = "b"  # type: ignore[misc]  # the point of the test


def test_converted_classes_keep_their_contracts() -> None:
    from vaultcore.proxy.config import AuthSpec
    from vaultcore.tokens.templates import FieldType, Template, TemplateError, TemplateField

    auth = AuthSpec("hmac", "proxy.authorization", username="p1", secret=b"s3cr3t")
    assert auth.header_name is None and "s3cr3t" not in repr(auth)
    assert auth == AuthSpec("hmac", "proxy.authorization", None, "p1", b"s3cr3t")
    field = TemplateField("card", FieldType.CARD)
    assert field.type == "card" and field == TemplateField("card", FieldType.CARD)
    with pytest.raises(TemplateError):  # the validation __post_init__ did still runs
        TemplateField("1bad", FieldType.CARD)
    template = Template("T1", (field,))
    assert template.get_field("card") is field and template.access_mode == "tokenize"


def test_no_function_init_imports_dataclasses() -> None:
    """The point of the module: importing the proxy's app.py (the function measured closest to the target) creates
    no dataclass and does not import ``dataclasses`` (with ``inspect``, ``ast``, ``dis``: ~10 ms on python3.13)."""
    probe = ("import importlib.util, json, sys; spec = importlib.util.spec_from_file_location('app', sys.argv[1]); "
             "mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod); "
             "print(json.dumps(sorted(m for m in sys.modules if m in ('dataclasses', 'inspect'))))")
    env = {"PYTHONPATH": str(ROOT / "layers" / "shared" / "python"), "PATH": "/usr/bin:/bin",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_EC2_METADATA_DISABLED": "true"}
    out = subprocess.run([sys.executable, "-c", probe, str(ROOT / "functions" / "proxy" / "app.py")],
                         capture_output=True, text=True, check=True, env=env)
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
