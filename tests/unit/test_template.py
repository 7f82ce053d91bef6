"""template.yaml is the one source of truth: conditions, routes, and what the runner builds from it."""

from __future__ import annotations

import re

from local.template import function_directories, load_template, parameters_with_defaults, render


def test_authdebug_exists_only_in_cert():
    template = load_template()
    cert = render(template, parameters_with_defaults(template, {"Environment": "cert"}))
    prod = render(template, parameters_with_defaults(template, {"Environment": "prod"}))
    assert "AuthDebugFunction" in cert
    assert "AuthDebugFunction" not in prod
    paths = {e["Properties"]["Path"] for r in prod.values() if r["Type"] == "AWS::Serverless::Function"
             for e in (r["Properties"].get("Events") or {}).values() if e["Type"] == "Api"}
    assert not any("authdebug" in p for p in paths)


def test_every_function_has_a_folder_and_a_build_target():
    template = load_template()
    dirs = function_directories()
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for name, res in template["Resources"].items():
        if res["Type"] == "AWS::Serverless::Function":
            assert name in dirs, name
            assert (root / "functions" / dirs[name] / "app.py").exists(), name


def test_tables_have_pitr_kms_and_ttl_where_designed():
    resources = load_template()["Resources"]
    for name, res in resources.items():
        if res["Type"] == "AWS::DynamoDB::Table":
            props = res["Properties"]
            assert props["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True, name
            assert props["SSESpecification"]["SSEType"] == "KMS", name
    for name in ("NoncesTable", "TokensTable"):
        assert resources[name]["Properties"]["TimeToLiveSpecification"]["Enabled"] is True


def test_management_api_is_iam_authorized():
    api = load_template()["Resources"]["ManagementApi"]["Properties"]
    assert api["Auth"]["DefaultAuthorizer"] == "AWS_IAM"


# Reserved concurrency per API (docs/operators/deploying.md): parameter -> the functions it reserves.
RESERVED = {
    "SecureApiReservedConcurrency": {"PartnerValidateFunction", "DeviceValidateFunction", "AuthDebugFunction",
                                     "TokenizeFunction"},
    "GatewayApiReservedConcurrency": {"GatewayFunction", "ReportingFunction", "WalletSessionFunction",
                                      "DomainAssociationFunction", "CheckoutFunction"},
    "ProxyApiReservedConcurrency": {"ProxyFunction"},
    "ParserApiReservedConcurrency": {"ParserFunction"},
    "CollectorApiReservedConcurrency": {"CollectorFunction"},
    "ManagementApiReservedConcurrency": {"ManagementFunction"},
    "PostbackReservedConcurrency": {"PostbackFunction"},
}
UNRESERVED = {"ProxyLogShipperFunction", "PostbackOutboxFunction", "WalletCertificateCheckFunction"}  # off the request path, in the shared pool
# --- issue 19 (iframe): the payment iFrame draws from the unreserved pool (the reservations' defaults already sum
# to the 900 a new account leaves; docs/operators/deploying.md) ---
UNRESERVED |= {"IframeFunction"}
# --- end ---
# --- issue 31 (API keys): key management is rare merchant configuration, in the unreserved pool too ---
UNRESERVED |= {"ApiKeysFunction"}
# --- end ---
UNRESERVED |= {"PaymentsV4Function", "DynamicDescriptorsFunction"}  # issue 31: the merchants' v4 API, like the iFrame's
# --- issue 31 (webhooks): merchants' endpoint configuration, from the unreserved pool like the iFrame's ---
UNRESERVED |= {"WebhooksFunction"}
# --- end ---


def _reserved(res: dict) -> tuple[str, str] | None:
    """(condition, parameter) of a function's ReservedConcurrentExecutions: !If [cond, !Ref param, NoValue]."""
    value = res["Properties"].get("ReservedConcurrentExecutions")
    if value is None:
        return None
    condition, then, otherwise = value["Fn::If"]
    assert otherwise == {"Ref": "AWS::NoValue"}
    return condition, then["Ref"]


def test_each_api_s_functions_reserve_the_api_s_parameter():
    template = load_template()
    functions = {n: r for n, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"}
    assert set(functions) == set().union(*RESERVED.values()) | UNRESERVED
    for parameter, names in RESERVED.items():
        for name in names:
            condition, ref = _reserved(functions[name])
            assert ref == parameter, name
            # the condition is "the parameter is not -1"
            assert template["Conditions"][condition] == {"Fn::Not": [{"Fn::Equals": [{"Ref": parameter}, "-1"]}]}
    for name in UNRESERVED:
        assert _reserved(functions[name]) is None, name
    # each function's API is the one its parameter names (the API events' RestApiId)
    for parameter, names in RESERVED.items():
        api = parameter.removesuffix("ReservedConcurrency")
        for name in names:
            events = (functions[name]["Properties"].get("Events") or {}).values()
            apis = {e["Properties"]["RestApiId"]["Ref"] for e in events if e["Type"] == "Api"}
            assert apis == ({api} if api != "Postback" else set()), name


def test_reserved_defaults_fit_a_new_account_and_leave_the_unreserved_100():
    template = load_template()
    parameters = template["Parameters"]
    for environment in ("cert", "prod"):
        params = parameters_with_defaults(template, {"Environment": environment})
        resources = render(template, params)
        total = sum(int(params[parameter]) for parameter, names in RESERVED.items() for n in names if n in resources)
        assert total <= 1000 - 100, (environment, total)
    for parameter in RESERVED:
        spec = parameters[parameter]
        assert spec["Type"] == "Number" and spec["MinValue"] == -1 and int(spec["Default"]) >= 2, parameter
        assert "-1" in spec["Description"], parameter


def test_minus_one_means_not_reserved_and_zero_is_refused():
    template = load_template()
    from local.template import evaluate_conditions

    none = {parameter: "-1" for parameter in RESERVED}
    conditions = evaluate_conditions(template, parameters_with_defaults(template, none))
    assert not any(conditions[f"Reserve{p.removesuffix('ReservedConcurrency')}"] for p in RESERVED)
    conditions = evaluate_conditions(template, parameters_with_defaults(template))
    assert all(conditions[f"Reserve{p.removesuffix('ReservedConcurrency')}"] for p in RESERVED)
    # A rule refuses 0 for every parameter (and 1 for the postback consumer, the queue's minimum being 2).
    asserted = str(template["Rules"]["ReservedConcurrencyIsNeverZero"]["Assertions"])
    for parameter in RESERVED:
        assert f"'Ref': '{parameter}'" in asserted, parameter


def test_the_postback_queue_never_invokes_beyond_the_reservation():
    fn = load_template()["Resources"]["PostbackFunction"]["Properties"]
    scaling = fn["Events"]["Postbacks"]["Properties"]["ScalingConfig"]["Fn::If"]
    assert scaling[0] == "ReservePostback"
    assert scaling[1] == {"MaximumConcurrency": {"Ref": "PostbackReservedConcurrency"}}
    assert scaling[2] == {"Ref": "AWS::NoValue"}


def test_readme_documents_each_reserved_concurrency_parameter_and_default():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "operators" / "deploying.md").read_text()
    section = page.split("\n## Reserved concurrency per API\n", 1)[1].split("\n## ", 1)[0]
    parameters = load_template()["Parameters"]
    for parameter in RESERVED:
        assert f"| `{parameter}` | {parameters[parameter]['Default']} |" in section, parameter


# --- issue 22 (protect the data): stateful resources survive `sam delete` and replacements ---
STATEFUL = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::KMS::Key")


def test_every_table_queue_and_key_is_retained_and_tables_are_deletion_protected():
    resources = load_template()["Resources"]
    stateful = {n: r for n, r in resources.items() if r["Type"] in STATEFUL}
    assert len(stateful) >= 14
    for name, res in stateful.items():
        assert res.get("DeletionPolicy") == "Retain", name
        assert res.get("UpdateReplacePolicy") == "Retain", name
        if res["Type"] == "AWS::DynamoDB::Table":
            assert res["Properties"]["DeletionProtectionEnabled"] is True, name


def test_disabling_or_scheduling_the_deletion_of_the_key_notifies_the_alarm_topic():
    template = load_template()
    rule = template["Resources"]["KeyDisableAlarmRule"]["Properties"]
    pattern = rule["EventPattern"]
    assert pattern["source"] == ["aws.kms"] and pattern["detail-type"] == ["AWS API Call via CloudTrail"]
    assert set(pattern["detail"]["eventName"]) == {"DisableKey", "ScheduleKeyDeletion"}
    assert pattern["detail"]["requestParameters"]["keyId"] == [{"Ref": "VaultKey"}, {"Fn::GetAtt": ["VaultKey", "Arn"]}]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AlarmTopic"}]}
    assert rule["State"] == "ENABLED"
# --- end ---


# --- API Gateway throttling per API (docs/operators/capacity.md): each stage's rate and burst from its own
# parameters, burst >= rate refused at deployment by a rule, defaults sized for 2,300 payments/s ---
ANCHOR_TX_PER_SECOND = 2300  # the busiest card-payment peak on record, all on one gateway route
ACCOUNT_THROTTLE_RATE, ACCOUNT_THROTTLE_BURST = 10_000, 5_000  # API Gateway's default per account and region


def _apis(template: dict) -> list[str]:
    return [n for n, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Api"]


def _rule_holds(node, params: dict[str, str]):
    """Evaluates a CloudFormation rule assertion (the functions the template's rules use)."""
    if isinstance(node, list):
        return [_rule_holds(n, params) for n in node]
    if not isinstance(node, dict):
        return node
    ((fn, args),) = node.items()
    if fn == "Ref":
        return params[args]
    values = _rule_holds(args, params)
    if fn == "Fn::And":
        return all(values)
    if fn == "Fn::Or":
        return any(values)
    if fn == "Fn::Not":
        return not values[0]
    if fn == "Fn::Equals":
        return str(values[0]) == str(values[1])
    if fn == "Fn::Contains":
        return str(values[1]) in [str(v) for v in values[0]]
    raise AssertionError(f"no evaluator for {fn}")


def test_each_api_stage_throttles_with_its_own_parameters_and_never_traces_data():
    template = load_template()
    assert "MethodSettings" not in template["Globals"]["Api"]  # SAM would append each API's list to it
    parameters = template["Parameters"]
    apis = _apis(template)
    assert len(apis) == 6
    for api in apis:
        (setting,) = template["Resources"][api]["Properties"]["MethodSettings"]
        assert setting["ResourcePath"] == "/*" and setting["HttpMethod"] == "*", api
        assert setting["ThrottlingRateLimit"] == {"Ref": f"{api}ThrottleRate"}, api
        assert setting["ThrottlingBurstLimit"] == {"Ref": f"{api}ThrottleBurst"}, api
        assert setting["DataTraceEnabled"] is False, api  # data tracing would log request bodies (card data)
        for kind in ("Rate", "Burst"):
            spec = parameters[f"{api}Throttle{kind}"]
            assert spec["Type"] == "Number" and spec["Description"], (api, kind)
            assert str(spec["Default"]) in [str(v) for v in spec["AllowedValues"]], (api, kind)
            assert min(int(v) for v in spec["AllowedValues"]) >= 1, (api, kind)
    throttle_parameters = {p for p in parameters if re.fullmatch(r"\w+ApiThrottle(Rate|Burst)", p)}
    assert throttle_parameters == {f"{api}Throttle{kind}" for api in apis for kind in ("Rate", "Burst")}


def test_throttle_defaults_carry_the_anchor_within_the_default_account_throttle():
    template = load_template()
    parameters = template["Parameters"]
    rate = {api: int(parameters[f"{api}ThrottleRate"]["Default"]) for api in _apis(template)}
    burst = {api: int(parameters[f"{api}ThrottleBurst"]["Default"]) for api in _apis(template)}
    assert rate["GatewayApi"] >= ANCHOR_TX_PER_SECOND  # every QSAPI transaction is one route: POST /api/qsapi/3.8
    # a flood that fills every API's throttle stays inside the account's, so none pushes another into 429s
    assert sum(rate.values()) <= ACCOUNT_THROTTLE_RATE, rate
    assert all(b <= ACCOUNT_THROTTLE_BURST for b in burst.values()), burst
    assert all(burst[api] >= rate[api] for api in rate)
    assert rate["ManagementApi"] == min(rate.values()) <= 50  # operators' calls; a brake on a leaked credential


def test_a_rule_refuses_a_burst_below_the_rate_for_every_api():
    template = load_template()
    parameters = template["Parameters"]
    rule = template["Rules"]["ThrottleBurstIsAtLeastTheRate"]
    assert "RuleCondition" not in rule
    defaults = parameters_with_defaults(template)
    for api in _apis(template):
        ladder = [str(v) for v in parameters[f"{api}ThrottleRate"]["AllowedValues"]]
        assert ladder == [str(v) for v in parameters[f"{api}ThrottleBurst"]["AllowedValues"]], api
        assert ladder == sorted(ladder, key=int), api
        for rate in ladder:
            for burst in ladder:
                params = {**defaults, f"{api}ThrottleRate": rate, f"{api}ThrottleBurst": burst}
                holds = all(_rule_holds(a["Assert"], params) for a in rule["Assertions"])
                assert holds == (int(burst) >= int(rate)), (api, rate, burst)
        described = [a["AssertDescription"] for a in rule["Assertions"] if f"{api}ThrottleBurst" in str(a["Assert"])]
        assert len(described) == 1 and f"{api}ThrottleRate" in described[0], api


def test_the_capacity_page_lists_every_throttle_parameter_with_its_default():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "operators" / "capacity.md").read_text()
    section = page.split("\n## API Gateway throttling per API\n", 1)[1].split("\n## ", 1)[0]
    parameters = load_template()["Parameters"]
    listed = {}
    for line in section.splitlines():
        m = re.match(r"^\| [^|]+ \| `(\w+ApiThrottle(?:Rate|Burst))` \| ([\d,]+) \| `(\w+ApiThrottle(?:Rate|Burst))` \| "
                     r"([\d,]+) \|", line)
        if m:
            listed[m.group(1)] = m.group(2).replace(",", "")
            listed[m.group(3)] = m.group(4).replace(",", "")
    expected = {p: str(spec["Default"]) for p, spec in parameters.items()
                if re.fullmatch(r"\w+ApiThrottle(Rate|Burst)", p)}
    assert listed == expected, set(listed.items()) ^ set(expected.items())
# --- end ---
