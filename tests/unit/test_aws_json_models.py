"""The JSON-protocol client's service table agrees with the services' own models, as botocore ships them.

``vaultcore.store.aws_json.SERVICES`` says, per service, the target prefix, JSON version, signing name, endpoint
prefix, the ``AWS_ENDPOINT_URL_<ID>`` suffix (derived from the service id), whether the service is query-compatible,
and which answer members are blobs (sent base64 on the wire, bytes for the caller). Each is read here from the
service's published model (botocore's ``data/<service>/<version>/service-2.json``), so a wrong or missing entry fails.
"""

from __future__ import annotations

import pytest

from vaultcore.store.aws_json import SERVICES


def _model(service: str) -> dict:
    import botocore.session

    loader = botocore.session.get_session().get_component("data_loader")
    return loader.load_service_model(service, "service-2")


def _output_blob_members(model: dict) -> set[str]:
    """Blob members of every structure reachable from an operation's output or error shapes."""
    shapes, seen, blobs = model["shapes"], set(), set()
    stack = [op["output"]["shape"] for op in model["operations"].values() if "output" in op]
    stack += [err["shape"] for op in model["operations"].values() for err in op.get("errors", [])]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        shape = shapes[name]
        if shape["type"] == "structure":
            for member, ref in shape.get("members", {}).items():
                if shapes[ref["shape"]]["type"] == "blob":
                    blobs.add(member)
                stack.append(ref["shape"])
        elif shape["type"] == "list":
            stack.append(shape["member"]["shape"])
        elif shape["type"] == "map":
            stack += [shape["key"]["shape"], shape["value"]["shape"]]
    return blobs


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_the_wire_facts_are_the_models(service):
    spec, metadata = SERVICES[service], _model(service)["metadata"]
    assert metadata["protocol"] == "json"
    assert spec.target_prefix == metadata["targetPrefix"]
    assert spec.json_version == metadata["jsonVersion"]
    assert spec.signing_name == metadata.get("signingName", metadata["endpointPrefix"])
    assert spec.endpoint_prefix == metadata["endpointPrefix"]
    # AWS_ENDPOINT_URL_<ID>: the service id, upper case, spaces as underscores (the SDKs' shared config rule)
    assert spec.env_id == metadata["serviceId"].upper().replace(" ", "_")
    assert spec.query_compatible == ("awsQueryCompatible" in metadata)


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_every_blob_in_an_answer_is_decoded(service):
    blobs = _output_blob_members(_model(service))
    if service == "dynamodb":
        assert blobs == {"B"}  # decoded wherever an attribute value is (see _decode_dynamodb), BS with it
        return
    assert blobs <= spec_members(service), sorted(blobs - spec_members(service))


def spec_members(service: str) -> frozenset[str]:
    return SERVICES[service].blob_members


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_idempotency_tokens_and_retryable_errors_are_the_models(service):
    model = _model(service)
    spec, shapes = SERVICES[service], model["shapes"]
    tokens = {op: member for op, body in model["operations"].items() if "input" in body
              for member, ref in shapes[body["input"]["shape"]].get("members", {}).items()
              if ref.get("idempotencyToken")}
    assert dict(spec.idempotency_tokens) == tokens
    retryable = {op: frozenset(e["shape"] for e in body.get("errors", []) if shapes[e["shape"]].get("retryable"))
                 for op, body in model["operations"].items()}
    assert dict(spec.retryable_codes) == {op: codes for op, codes in retryable.items() if codes}


@pytest.mark.parametrize("service", sorted(SERVICES))
def test_event_names_are_botocores(service):
    # botocore names a client's events after its service id, lower case with hyphens (botocore.utils.hyphenize)
    assert SERVICES[service].event_id == _model(service)["metadata"]["serviceId"].lower().replace(" ", "-")
