"""Reads template.yaml (the one source of truth) for the local runner and the tests.

Loads the CloudFormation short-form tags, evaluates conditions for a given set of parameters, and resolves
the intrinsic functions the template uses (Ref, Fn::GetAtt, Fn::Sub, Fn::If, Fn::Equals ...) against the
physical ids the runner created locally.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"
# The local stack's region and account, and the pseudo parameters the template resolves against them: the runner
# creates its resources with these, and env.json resolves the functions' variables with the same ones.
REGION = "us-east-1"
ACCOUNT = "123456789012"
PSEUDO_PARAMETERS = {"AWS::Region": REGION, "AWS::AccountId": ACCOUNT, "AWS::Partition": "aws",
                     "AWS::StackName": "vault-local", "AWS::URLSuffix": "amazonaws.com"}


# libyaml's loader where PyYAML was built with it (its wheels are): the pure-Python one took about 0.4 s of every
# test platform's setup for this template (issue 26). Both accept the same documents.
_BaseLoader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    pass


def _construct(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> Any:
    name = "Ref" if tag_suffix == "Ref" else ("Condition" if tag_suffix == "Condition" else f"Fn::{tag_suffix}")
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
        if tag_suffix == "GetAtt":
            value = str(value).split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type]
    return {name: value}


_CfnLoader.add_multi_constructor("!", _construct)


_parsed: dict[tuple[str, int, int], dict[str, Any]] = {}


def load_template(path: Path = TEMPLATE) -> dict[str, Any]:
    """The template as a dict: a fresh copy each call (callers may change it), parsed once per file version."""
    stat = Path(path).stat()
    key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
    if key not in _parsed:
        with open(path, encoding="utf-8") as fh:
            _parsed[key] = yaml.load(fh, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass with CFN tags only
    return copy.deepcopy(_parsed[key])


def parameters_with_defaults(template: dict[str, Any], overrides: dict[str, str] | None = None) -> dict[str, str]:
    params = {k: str(v.get("Default", "")) for k, v in (template.get("Parameters") or {}).items()}
    params.update(overrides or {})
    return params


def evaluate_conditions(template: dict[str, Any], params: dict[str, str]) -> dict[str, bool]:
    conditions = template.get("Conditions") or {}
    results: dict[str, bool] = {}

    def ev(expr: Any) -> Any:
        if isinstance(expr, dict) and len(expr) == 1:
            (key, arg), = expr.items()
            if key == "Ref":
                return params.get(arg, arg)
            if key == "Fn::Equals":
                return ev(arg[0]) == ev(arg[1])
            if key == "Fn::Not":
                return not ev(arg[0])
            if key == "Fn::And":
                return all(ev(a) for a in arg)
            if key == "Fn::Or":
                return any(ev(a) for a in arg)
            if key == "Condition":
                return cond(arg)
        return expr

    def cond(name: str) -> bool:
        if name not in results:
            results[name] = bool(ev(conditions[name]))
        return results[name]

    for name in conditions:
        cond(name)
    return results


def render(template: dict[str, Any], params: dict[str, str]) -> dict[str, dict[str, Any]]:
    """The resources that exist for these parameters (conditions applied)."""
    conditions = evaluate_conditions(template, params)
    return {name: res for name, res in (template.get("Resources") or {}).items()
            if "Condition" not in res or conditions.get(res["Condition"], False)}


def resolver(params: dict[str, str], conditions: dict[str, bool], refs: dict[str, str],
             attrs: dict[tuple[str, str], str], pseudo: dict[str, str]) -> Callable[[Any], Any]:
    def resolve(value: Any) -> Any:
        if isinstance(value, list):
            return [resolve(v) for v in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            (key, arg), = value.items()
            if key == "Ref":
                if arg in params:
                    return params[arg]
                if arg in pseudo:
                    return pseudo[arg]
                return refs.get(arg, arg)
            if key == "Fn::GetAtt":
                return attrs.get((arg[0], arg[1]), f"{arg[0]}.{arg[1]}")
            if key == "Fn::Sub":
                text = arg if isinstance(arg, str) else arg[0]

                def sub(m: re.Match[str]) -> str:
                    name = m.group(1)
                    if "." in name:
                        a, b = name.split(".", 1)
                        return str(attrs.get((a, b), name))
                    return str(resolve({"Ref": name}))

                return re.sub(r"\$\{([^}]+)\}", sub, text)
            if key == "Fn::If":
                return resolve(arg[1] if conditions.get(arg[0]) else arg[2])
            if key == "Fn::Join":
                return str(arg[0]).join(str(resolve(v)) for v in arg[1])
        return {k: resolve(v) for k, v in value.items()}

    return resolve


def function_directories(makefile: Path = ROOT / "functions" / "Makefile") -> dict[str, str]:
    """Logical id → folder under functions/, from the functions' build Makefile (what sam build ships)."""
    mapping = {}
    for line in makefile.read_text().splitlines():
        m = re.match(r"build-(\w+):\s*;\s*\$\(call copy_function,(\w+)\)", line)
        if m:
            mapping[m.group(1)] = m.group(2)
    return mapping
