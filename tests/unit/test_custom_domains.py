"""Optional custom domains (operator docs, "Deploying"): each API at <prefix>.<CustomDomainName> with its paths
unchanged, TLS 1.2 or later, mapped to its stage; Route 53 alias records only when a hosted zone is given.

Judged by the SAM translator itself (aws-sam-translator, what `sam deploy` hands to CloudFormation), not by the
project's own template reader: the transformed template must hold the resources and the mapping must name the
stage resource SAM generates (``!Ref <Api>.Stage``), so that CloudFormation creates the stage first."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

from local.template import TEMPLATE, evaluate_conditions, parameters_with_defaults

APIS = {"SecureApi": "secure", "ParserApi": "parser", "ProxyApi": "proxy", "GatewayApi": "gateway",
        "CollectorApi": "collector", "ManagementApi": "admin"}
CERTIFICATE = "arn:aws:acm:us-east-1:123456789012:certificate/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b"


class _NoManagedPolicies:
    def load(self) -> dict[str, str]:
        return {}


def _transformed(monkeypatch, **parameters: str) -> dict[str, Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    template = yaml_parse(TEMPLATE.read_text())
    # As `sam package` leaves it: code in S3 (the translator refuses local paths).
    template["Globals"]["Function"]["CodeUri"] = "s3://artifacts/functions.zip"
    for name in ("SharedLayer", "DepsLayer"):
        template["Resources"][name]["Properties"]["ContentUri"] = f"s3://artifacts/{name}.zip"
    return transform(template, {"Environment": "prod", "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:ops",
                                **parameters}, _NoManagedPolicies())


def _conditions_hold(template: dict[str, Any], condition: str, parameters: dict[str, str]) -> bool:
    """A condition of the transformed template (SAM leaves the stack's conditions as written)."""
    return evaluate_conditions(template, parameters_with_defaults(template, parameters))[condition]


@pytest.mark.parametrize("zone", ["", "Z0123456789ABCDEFGHIJ"])
def test_each_api_gets_its_host_its_stage_and_a_record_only_with_a_zone(monkeypatch, zone):
    parameters = {"CustomDomainName": "vault.example.com", "CustomDomainCertificateArn": CERTIFICATE,
                  "CustomDomainHostedZoneId": zone}
    out = _transformed(monkeypatch, **parameters)
    resources = out["Resources"]
    assert _conditions_hold(out, "HasCustomDomain", parameters)
    assert _conditions_hold(out, "HasCustomDomainRecords", parameters) == bool(zone)
    for api, prefix in APIS.items():
        domain = resources[f"{api}Domain"]
        assert domain["Condition"] == "HasCustomDomain"
        assert domain["Properties"]["DomainName"] == {"Fn::Sub": f"{prefix}.${{CustomDomainName}}"}
        assert domain["Properties"]["SecurityPolicy"] == "TLS_1_2"
        assert domain["Properties"]["EndpointConfiguration"] == {"Types": ["REGIONAL"]}
        mapping = resources[f"{api}BasePathMapping"]["Properties"]
        assert mapping["RestApiId"] == {"Ref": api} and "BasePath" not in mapping  # paths unchanged
        stage = mapping["Stage"]["Ref"]
        assert resources[stage]["Type"] == "AWS::ApiGateway::Stage"
        assert resources[stage]["Properties"]["RestApiId"] == {"Ref": api}
        record = resources[f"{api}DomainRecord"]
        assert record["Condition"] == "HasCustomDomainRecords"
        assert record["Properties"]["AliasTarget"]["DNSName"] == {"Fn::GetAtt": [f"{api}Domain", "RegionalDomainName"]}
        assert out["Outputs"][f"{api}CustomUrl"]["Condition"] == "HasCustomDomain"


def test_without_a_domain_and_a_certificate_nothing_is_created(monkeypatch):
    for parameters in ({}, {"CustomDomainName": "vault.example.com"}, {"CustomDomainCertificateArn": CERTIFICATE}):
        out = _transformed(monkeypatch, **parameters)
        assert not _conditions_hold(out, "HasCustomDomain", parameters)


@pytest.mark.parametrize(("name", "value"), [
    ("CustomDomainName", "https://vault.example.com"), ("CustomDomainName", "Vault.Example.com"),
    ("CustomDomainName", "vault"), ("CustomDomainCertificateArn", "arn:aws:iam::123456789012:server-certificate/x"),
    ("CustomDomainHostedZoneId", "example.com"),
])
def test_malformed_values_are_refused_by_the_parameter_patterns(name, value):
    import re

    pattern = yaml_parse(TEMPLATE.read_text())["Parameters"][name]["AllowedPattern"]
    assert re.fullmatch(pattern, value) is None
    good = {"CustomDomainName": "vault.example.com", "CustomDomainCertificateArn": CERTIFICATE,
            "CustomDomainHostedZoneId": "Z0123456789ABCDEFGHIJ"}[name]
    assert re.fullmatch(pattern, good) is not None
