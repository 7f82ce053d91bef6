"""The bounded jsonpath and xpath evaluators (issue 12): the same matches as jsonpath-ng and lxml, bounded work."""

from __future__ import annotations

import json
import random
import time

import pytest
from lxml import etree

from vaultcore.net import deadline
from vaultcore.proxy import errors as E
from vaultcore.proxy.pathwalk import BoundedXPath, find_json
from vaultcore.proxy.transform import Body, Headers, Message, compile_path, locate

# ------------------------------------------------------------------------------------------------ jsonpath


def _random_json(rng: random.Random, depth: int = 0):
    roll = rng.random()
    if depth >= 4 or roll < 0.3:
        return rng.choice([0, 1, "x", None, True, 2.5])
    if roll < 0.65:
        return {rng.choice("abcd"): _random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    return [_random_json(rng, depth + 1) for _ in range(rng.randint(0, 4))]


_JSON_STEPS = [".a", ".b", ".c", "['a','b']", ".*", "[*]", "[0]", "[1]", "[-1]", "[1:3]", "[:]", "[::2]", "[-2:]"]


def _random_jsonpath(rng: random.Random) -> str:
    path, descendants = "$", 0
    for _ in range(rng.randint(1, 4)):
        if descendants < 2 and rng.random() < 0.35:
            descendants += 1
            step = rng.choice(_JSON_STEPS)
            path += ".." + (step[1:] if step.startswith(".") else step)
        else:
            path += rng.choice(_JSON_STEPS)
    return path


def _jsonpath_ng_slots(expr, doc) -> list[tuple[int, object]]:
    """What the proxy took from jsonpath-ng before issue 12 (transform._json_slots)."""
    from jsonpath_ng.jsonpath import Fields, Index

    out: list[tuple[int, object]] = []
    for datum in expr.find(doc):
        p, container = datum.path, datum.context.value if datum.context is not None else None
        if isinstance(p, Fields) and isinstance(container, dict):
            out.append((id(container), p.fields[0]))
        elif isinstance(p, Index) and isinstance(container, list):
            out.append((id(container), p.indices[0]))
    return out


def test_find_json_gives_jsonpath_ngs_matches_in_its_order():
    rng = random.Random(12)
    checked = 0
    for _ in range(600):
        doc = _random_json(rng)
        path = _random_jsonpath(rng)
        try:
            cpath = compile_path("body", "jsonpath", path)
        except ValueError:
            continue
        expected = _jsonpath_ng_slots(cpath.jsonpath, doc)
        assert [(id(c), k) for c, k in find_json(cpath.jsonpath, doc)] == expected, path
        checked += 1
    assert checked > 500


def _deep_json(size: int = 960_000) -> bytes:
    node: dict = {f"k{i}": 0 for i in range(50)}
    for _ in range(28):
        node = {"a": node, **{f"b{i}": {"x": 1} for i in range(3)}}
    return json.dumps({"items": [node] * (size // len(json.dumps(node)))}).encode()


def _body_message(raw: bytes, kind: str) -> Message:
    return Message(headers=Headers({}), query=[], body=Body(raw, kind).parse())


def _nodes(value) -> int:
    if isinstance(value, dict):
        return 1 + sum(_nodes(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


def test_two_descendant_steps_over_a_deep_body_stop_at_the_budget(budget_clock):
    # Before: jsonpath-ng walked the subtree of every 'a' again, 13 s on this body, with no way to stop it. The
    # budget is read every CHECK_EVERY nodes; with the test clock each read costs 1 ms, so the 0.2 s budget is
    # spent after about 200 checks, whatever the machine (issue 26).
    from vaultcore.proxy.pathwalk import CHECK_EVERY

    budget_clock.step = 0.001
    message = _body_message(_deep_json(), "json")
    cpath = compile_path("body", "jsonpath", "$..a..nomatch")
    with deadline.using(deadline.WorkBudget(0.2)) as budget, pytest.raises(E.ProxyError) as caught:
        locate(message, cpath, strict=True)
    assert caught.value.code == 8109 and "time budget for pattern work" in caught.value.message
    # stopped at the budget, after about 100,000 node visits (CHECK_EVERY each), where the whole walk is one per
    # 'a' over its subtree (28 levels deep)
    assert budget.exhausted and 200 <= budget_clock.reads < 300 and CHECK_EVERY == 512


def test_matches_are_found_lazily_so_too_many_stops_early(budget_clock):
    # More than 1,000 matches: stopped at the 1,001st, not after the whole walk. Counted in budget checks (one
    # every CHECK_EVERY nodes), not timed (issue 26).
    from vaultcore.proxy.pathwalk import CHECK_EVERY

    message = _body_message(_deep_json(), "json")
    with pytest.raises(E.ProxyError) as caught:
        locate(message, compile_path("body", "jsonpath", "$..*"), strict=True)
    assert caught.value.code == 8106
    assert budget_clock.reads * CHECK_EVERY <= 4 * 1_001 + 4 * CHECK_EVERY  # the whole body: ~117,000 nodes, 228 checks


def test_one_descendant_step_over_a_large_body_is_well_inside_the_budget(budget_clock):
    # One walk of the body, checked every CHECK_EVERY nodes (jsonpath-ng: a walk per descendant, 1.5 s here).
    from vaultcore.proxy.pathwalk import CHECK_EVERY

    message = _body_message(_deep_json(), "json")
    with deadline.using(deadline.WorkBudget(2.0)):
        assert locate(message, compile_path("body", "jsonpath", "$..nomatch"), strict=True) == []
    assert budget_clock.reads <= 2 * _nodes(json.loads(_deep_json())) // CHECK_EVERY + 4


# ------------------------------------------------------------------------------------------------ xpath


def _random_xml(rng: random.Random, depth: int = 0) -> str:
    tag = rng.choice("abc")
    attr = ' x="1"' if rng.random() < 0.3 else ""
    if depth >= 5 or rng.random() < 0.25:
        return f"<{tag}{attr}>{rng.choice(['t', '', '4111'])}</{tag}>"
    children = "".join(_random_xml(rng, depth + 1) + rng.choice(["", "tail"]) for _ in range(rng.randint(1, 3)))
    return f"<{tag}{attr}>{rng.choice(['', 'lead'])}{children}</{tag}>"


_XPATH_TESTS = ["a", "b", "c", "*"]
_XPATH_PREDICATES = ["", "", "[1]", "[2]", "[last()]", "[@x='1']", "[b='t']", "[local-name()='a']"]


def _random_xpath(rng: random.Random) -> str:
    steps, descendants = [], 0
    for _ in range(rng.randint(1, 4)):
        sep = "//" if descendants < 2 and rng.random() < 0.5 else "/"
        descendants += sep == "//"
        steps.append(sep + rng.choice(_XPATH_TESTS) + rng.choice(_XPATH_PREDICATES))
    last = rng.random()
    if last < 0.2:
        steps.append(rng.choice(["/", "//"]) + "text()")
    elif last < 0.35:
        steps.append("/@x")
    return "".join(steps)


def _key(node) -> tuple:
    """A node by its place (lxml makes a new proxy object per call: ids are not stable)."""
    if isinstance(node, etree._Element):
        return ("element", node.getroottree().getpath(node))
    parent = node.getparent()
    return (getattr(node, "attrname", None), bool(getattr(node, "is_tail", False)),
            parent.getroottree().getpath(parent), str(node))


def test_bounded_xpath_gives_lxmls_node_set():
    rng = random.Random(12)
    split_paths = 0
    for _ in range(500):
        tree = etree.fromstring(_random_xml(rng).encode())
        path = _random_xpath(rng)
        try:
            cpath = compile_path("body", "xpath", path)
        except ValueError:
            continue
        assert isinstance(cpath.xpath, BoundedXPath)
        expected = [_key(n) for n in etree.XPath(cpath.xpath.path)(tree)]
        assert [_key(n) for n in cpath.xpath(tree)] == expected, path
        split_paths += path.count("//") == 2
    assert split_paths > 50


def _deep_xml(size: int) -> bytes:
    chain = "<a>" * 250 + "<b>1</b>" + "</a>" * 250
    return ("<r>" + chain * max(1, size // len(chain)) + "</r>").encode()


@pytest.mark.parametrize("path", ["//*//b", "//a//b/text()", "//a[1]//a"])
def test_two_descendant_steps_over_deeply_nested_xml_are_bounded(path):
    # Before: lxml's //*//* over 64 KiB of 250-deep nesting took 7 s, and grew with the square of the size.
    message = _body_message(_deep_xml(1_000_000), "xml")
    started = time.thread_time()
    with deadline.using(deadline.WorkBudget(2.0)):
        try:
            locate(message, compile_path("body", "xpath", path), strict=True)
        except E.ProxyError as exc:
            assert exc.code in (8106, 8109)  # too many matches, or the budget: either way, promptly
    assert time.thread_time() - started < 5
