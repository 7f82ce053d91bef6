"""The JSON-protocol client (:mod:`vaultcore.store.aws_json`) against botocore, its reference.

* Every operation the platform uses goes through both clients to one moto server over HTTP, and the answers are
  compared (without ``ResponseMetadata``; timestamps, which botocore turns into datetimes and this client leaves
  as the epoch numbers of the wire, are compared as epoch seconds).
* Small local HTTP stand-ins play the service where moto cannot: retries, CRC32, timeouts, refused and dropped
  connections, the exact request sent (checked with botocore's signer), the container credentials endpoint.
* Endpoints and credential providers from the environment, and botocore-style ``before-call`` hooks.

Nothing here waits for real backoff: the module's ``time`` and ``random`` are replaced where retries happen.
"""

from __future__ import annotations

import base64
import datetime
import json
import re
import socket
import threading
import time
import types
import uuid
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials as BotoCredentials
from botocore.exceptions import ClientError

from vaultcore.store import aws_json
from vaultcore.store.aws_json import AwsClientError, AwsTransportError, JsonServiceClient

REGION = "us-east-1"
KEY_ID, SECRET = "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
_BOTO_SESSION = botocore.session.get_session()


# ------------------------------------------------------------------------------------------------- helpers

@pytest.fixture(autouse=True)
def aws_env(monkeypatch, tmp_path):
    """Environment credentials and nothing else of the caller's AWS configuration."""
    for name in ("AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_KMS", "AWS_ENDPOINT_URL_SQS",
                 "AWS_ENDPOINT_URL_SECRETS_MANAGER", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_USE_FIPS_ENDPOINT",
                 "AWS_USE_DUALSTACK_ENDPOINT", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
                 "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", "AWS_CA_BUNDLE", "AWS_RETRY_MODE", "AWS_MAX_ATTEMPTS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))


def ours(service: str, url: str, **kwargs: Any) -> JsonServiceClient:
    return JsonServiceClient(service, region=REGION, endpoint_url=url, credentials=aws_json.EnvironmentCredentials(),
                             **kwargs)


def boto(service: str, url: str, attempts: int | None = None) -> Any:
    config = Config(retries={"total_max_attempts": attempts, "mode": "standard"}) if attempts else None
    return _BOTO_SESSION.create_client(service, endpoint_url=url, region_name=REGION, aws_access_key_id=KEY_ID,
                                       aws_secret_access_key=SECRET, config=config)


def plain(value: Any) -> Any:
    """An answer without ResponseMetadata, timestamps as epoch seconds (rounded to the millisecond)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k != "ResponseMetadata"}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, datetime.datetime):
        return round(value.timestamp(), 3)
    if isinstance(value, float):
        return round(value, 3)
    return value


def both_raise(call_ours, call_boto) -> tuple[dict[str, Any], Mapping[str, Any]]:
    with pytest.raises(AwsClientError) as ours_error:
        call_ours()
    with pytest.raises(ClientError) as boto_error:
        call_boto()
    return ours_error.value.response, boto_error.value.response


# ------------------------------------------------------------------------------------------- moto server

@pytest.fixture(scope="module")
def moto_url():
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


def _unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}"


TABLE_SPEC = {
    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                             {"AttributeName": "sk", "AttributeType": "S"},
                             {"AttributeName": "g", "AttributeType": "S"},
                             {"AttributeName": "r", "AttributeType": "B"}],
    "BillingMode": "PAY_PER_REQUEST",
    "GlobalSecondaryIndexes": [{"IndexName": "by-g", "Projection": {"ProjectionType": "ALL"},
                                "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"},
                                              {"AttributeName": "r", "KeyType": "RANGE"}]}],
}


@pytest.fixture(scope="module")
def table(moto_url):
    name = _unique("records")
    boto("dynamodb", moto_url).create_table(TableName=name, **TABLE_SPEC)
    return name


def full_item(pk: str, sk: str = "s") -> dict[str, Any]:
    """Every attribute type the platform stores, binary ones nested too."""
    return {
        "pk": {"S": pk}, "sk": {"S": sk}, "g": {"S": f"group-{pk}"}, "r": {"B": b"\x00r\xff"},
        "blob": {"B": bytes(range(256))}, "blobs": {"BS": [b"\x00", b"\x01\x02", b"\xfe\xff"]},
        "n": {"N": "12345.678"}, "flag": {"BOOL": True}, "off": {"BOOL": False}, "nothing": {"NULL": True},
        "tags": {"SS": ["a", "b"]}, "counts": {"NS": ["1", "2"]},
        "nested": {"M": {"B": {"B": b"map-blob"}, "BS": {"BS": [b"x"]}, "s": {"S": "text"},
                         "list": {"L": [{"B": b"\x10\x20"}, {"S": "B"}, {"M": {"deep": {"B": b"deep"}}},
                                        {"L": [{"BS": [b"\x01"]}]}]}}},
    }


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"pk": item["pk"], "sk": item["sk"]}


def test_dynamodb_create_table_and_describe_table(moto_url):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    name_ours, name_boto = _unique("t-ours"), _unique("t-boto")
    created_ours = mine.create_table(TableName=name_ours, **TABLE_SPEC)
    created_boto = theirs.create_table(TableName=name_boto, **TABLE_SPEC)
    assert created_ours["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert created_ours["ResponseMetadata"]["RetryAttempts"] == 0

    def without_identity(answer: dict[str, Any], name: str) -> dict[str, Any]:
        description = dict(plain(answer)["TableDescription"])
        assert description.pop("TableName") == name
        assert description.pop("TableArn").endswith(f":table/{name}")
        description.pop("TableId", None)
        description.pop("CreationDateTime")
        return description

    assert without_identity(created_ours, name_ours) == without_identity(created_boto, name_boto)
    created_at = created_ours["TableDescription"]["CreationDateTime"]
    assert isinstance(created_at, (int, float)) and abs(created_at - time.time()) < 300
    assert plain(mine.describe_table(TableName=name_ours)) == plain(theirs.describe_table(TableName=name_ours))


def test_dynamodb_put_item_and_get_item_with_every_attribute_type(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    item = full_item(_unique("p"))
    assert plain(mine.put_item(TableName=table, Item=item)) == {}
    got_ours = mine.get_item(TableName=table, Key=_key(item), ConsistentRead=True)
    got_boto = theirs.get_item(TableName=table, Key=_key(item), ConsistentRead=True)
    assert plain(got_ours) == plain(got_boto) == {"Item": item}
    assert got_ours["Item"]["nested"]["M"]["list"]["L"][2]["M"]["deep"] == {"B": b"deep"}
    # botocore's write read back by ours.
    other = full_item(_unique("p"))
    theirs.put_item(TableName=table, Item=other)
    assert plain(mine.get_item(TableName=table, Key=_key(other), ConsistentRead=True)) == {"Item": other}
    missing = {"pk": {"S": _unique("missing")}, "sk": {"S": "s"}}
    assert plain(mine.get_item(TableName=table, Key=missing)) == plain(theirs.get_item(TableName=table, Key=missing))


def test_dynamodb_put_item_with_condition_and_return_values(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    first, second = full_item(_unique("c")), full_item(_unique("c"))
    condition = {"ConditionExpression": "attribute_not_exists(pk)"}
    assert plain(mine.put_item(TableName=table, Item=first, **condition)) == plain(
        theirs.put_item(TableName=table, Item=second, **condition)) == {}
    replacement = {**first, "n": {"N": "1"}}
    replaced_ours = mine.put_item(TableName=table, Item=replacement, ReturnValues="ALL_OLD",
                                  ConditionExpression="n = :n", ExpressionAttributeValues={":n": {"N": "12345.678"}})
    replaced_boto = theirs.put_item(TableName=table, Item={**second, "n": {"N": "1"}}, ReturnValues="ALL_OLD",
                                    ConditionExpression="n = :n",
                                    ExpressionAttributeValues={":n": {"N": "12345.678"}})
    assert plain(replaced_ours) == {"Attributes": first}
    assert plain(replaced_boto) == {"Attributes": second}


def test_dynamodb_conditional_check_failed_returns_the_old_item(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    item = full_item(_unique("f"))
    mine.put_item(TableName=table, Item=item)
    kwargs = {"TableName": table, "Item": {**item, "n": {"N": "0"}}, "ConditionExpression": "attribute_not_exists(pk)",
              "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    ours_response, boto_response = both_raise(lambda: mine.put_item(**kwargs), lambda: theirs.put_item(**kwargs))
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert ours_response["Item"] == boto_response["Item"] == item
    assert isinstance(ours_response["Item"]["blob"]["B"], bytes)
    assert plain(ours_response) == plain(boto_response)
    metadata = ours_response["ResponseMetadata"]
    assert (metadata["HTTPStatusCode"], metadata["RetryAttempts"]) == (400, 0)


def test_dynamodb_update_item_return_values(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    pk = _unique("u")
    ours_item, boto_item = full_item(pk, "ours"), full_item(pk, "boto")
    theirs.put_item(TableName=table, Item=ours_item)
    theirs.put_item(TableName=table, Item=boto_item)
    update = {"UpdateExpression": "SET #b = :b, #m.#l[0] = :b ADD #n :one REMOVE #z",
              "ExpressionAttributeNames": {"#b": "blob", "#m": "nested", "#l": "list", "#n": "n", "#z": "nothing"},
              "ExpressionAttributeValues": {":b": {"B": b"\x00new\xff"}, ":one": {"N": "1"}}}
    for return_values in ("UPDATED_NEW", "ALL_NEW"):
        answer_ours = mine.update_item(TableName=table, Key=_key(ours_item), ReturnValues=return_values, **update)
        answer_boto = theirs.update_item(TableName=table, Key=_key(boto_item), ReturnValues=return_values, **update)
        attributes_ours, attributes_boto = dict(answer_ours["Attributes"]), dict(answer_boto["Attributes"])
        if return_values == "ALL_NEW":
            assert (attributes_ours.pop("sk"), attributes_boto.pop("sk")) == ({"S": "ours"}, {"S": "boto"})
            assert "nothing" not in attributes_ours
        assert attributes_ours == attributes_boto
        assert attributes_ours["blob"] == {"B": b"\x00new\xff"}
    assert answer_ours["Attributes"]["n"] == {"N": "12347.678"}  # two ADDs


def test_dynamodb_delete_item(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    pk = _unique("d")
    ours_item, boto_item = full_item(pk, "ours"), full_item(pk, "boto")
    mine.put_item(TableName=table, Item=ours_item)
    mine.put_item(TableName=table, Item=boto_item)
    deleted_ours = mine.delete_item(TableName=table, Key=_key(ours_item), ReturnValues="ALL_OLD")
    deleted_boto = theirs.delete_item(TableName=table, Key=_key(boto_item), ReturnValues="ALL_OLD")
    assert plain(deleted_ours) == {"Attributes": ours_item}
    assert plain(deleted_boto) == {"Attributes": boto_item}
    gone = mine.delete_item(TableName=table, Key=_key(ours_item))
    assert plain(gone) == plain(theirs.delete_item(TableName=table, Key=_key(boto_item))) == {}
    assert "Item" not in mine.get_item(TableName=table, Key=_key(ours_item), ConsistentRead=True)


def test_dynamodb_query_an_index_page_by_page(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    group = _unique("group")
    items = [{**full_item(_unique("q")), "g": {"S": group}, "r": {"B": bytes([i, 0xFF, 0])}} for i in range(5)]
    for item in items:
        mine.put_item(TableName=table, Item=item)
    query = {"TableName": table, "IndexName": "by-g", "KeyConditionExpression": "g = :g",
             "ExpressionAttributeValues": {":g": {"S": group}}, "Limit": 2}
    pages_ours, pages_boto, start_ours, start_boto = [], [], None, None
    for _ in range(5):
        page_ours = mine.query(**query, **({"ExclusiveStartKey": start_ours} if start_ours else {}))
        page_boto = theirs.query(**query, **({"ExclusiveStartKey": start_boto} if start_boto else {}))
        assert plain(page_ours) == plain(page_boto)
        pages_ours.append(page_ours)
        pages_boto.append(page_boto)
        start_ours, start_boto = page_ours.get("LastEvaluatedKey"), page_boto.get("LastEvaluatedKey")
        if start_ours is None:
            break
    assert [page["Count"] for page in pages_ours] == [2, 2, 1]
    assert isinstance(pages_ours[0]["LastEvaluatedKey"]["r"]["B"], bytes)  # fed back as base64 on the next page
    assert [item for page in pages_ours for item in page["Items"]] == items  # sorted by r, the binary range key
    # A key botocore gave, fed to ours, and the other way round.
    assert plain(mine.query(**query, ExclusiveStartKey=pages_boto[0]["LastEvaluatedKey"])) == plain(pages_boto[1])
    assert plain(theirs.query(**query, ExclusiveStartKey=pages_ours[1]["LastEvaluatedKey"])) == plain(pages_ours[2])


def test_dynamodb_batch_write_item(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    doomed_ours, doomed_boto = full_item(_unique("bw")), full_item(_unique("bw"))
    mine.put_item(TableName=table, Item=doomed_ours)
    mine.put_item(TableName=table, Item=doomed_boto)
    new_ours, new_boto = [full_item(_unique("bw")) for _ in range(3)], [full_item(_unique("bw")) for _ in range(3)]

    def batch(new: list[dict[str, Any]], doomed: dict[str, Any]) -> dict[str, Any]:
        return {table: [*({"PutRequest": {"Item": item}} for item in new),
                        {"DeleteRequest": {"Key": _key(doomed)}}]}

    answer_ours = mine.batch_write_item(RequestItems=batch(new_ours, doomed_ours))
    answer_boto = theirs.batch_write_item(RequestItems=batch(new_boto, doomed_boto))
    assert plain(answer_ours) == plain(answer_boto)
    assert answer_ours["UnprocessedItems"] == {}
    for item in new_ours:
        assert theirs.get_item(TableName=table, Key=_key(item), ConsistentRead=True)["Item"] == item
    assert "Item" not in theirs.get_item(TableName=table, Key=_key(doomed_ours), ConsistentRead=True)


def _transaction(table: str, guard: dict[str, Any], new: dict[str, Any], other: dict[str, Any],
                 must_exist: bool) -> list[dict[str, Any]]:
    condition = "attribute_exists(pk)" if must_exist else "attribute_not_exists(pk)"
    return [
        {"ConditionCheck": {"TableName": table, "Key": _key(guard), "ConditionExpression": condition,
                            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
        {"Put": {"TableName": table, "Item": new}},
        {"Update": {"TableName": table, "Key": _key(other), "UpdateExpression": "SET #b = :b",
                    "ExpressionAttributeNames": {"#b": "blob"}, "ExpressionAttributeValues": {":b": {"B": b"\x01tx"}}}},
    ]


def test_dynamodb_transact_write_items(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    guard, other_ours, other_boto = (full_item(_unique("tx")) for _ in range(3))
    for item in (guard, other_ours, other_boto):
        mine.put_item(TableName=table, Item=item)
    new_ours, new_boto = full_item(_unique("tx")), full_item(_unique("tx"))
    answer_ours = mine.transact_write_items(TransactItems=_transaction(table, guard, new_ours, other_ours, True))
    answer_boto = theirs.transact_write_items(TransactItems=_transaction(table, guard, new_boto, other_boto, True))
    assert plain(answer_ours) == plain(answer_boto)
    assert "ResponseMetadata" in answer_ours and not answer_ours.get("ConsumedCapacity")
    assert mine.get_item(TableName=table, Key=_key(new_ours), ConsistentRead=True)["Item"] == new_ours
    updated = mine.get_item(TableName=table, Key=_key(other_ours), ConsistentRead=True)["Item"]
    assert updated == {**other_ours, "blob": {"B": b"\x01tx"}}


def test_dynamodb_transaction_cancelled(moto_url, table):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    guard, other = full_item(_unique("tc")), full_item(_unique("tc"))
    mine.put_item(TableName=table, Item=guard)
    mine.put_item(TableName=table, Item=other)
    items = _transaction(table, guard, full_item(_unique("tc")), other, must_exist=False)
    ours_response, boto_response = both_raise(lambda: mine.transact_write_items(TransactItems=items),
                                              lambda: theirs.transact_write_items(TransactItems=items))
    assert ours_response["Error"]["Code"] == boto_response["Error"]["Code"] == "TransactionCanceledException"
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["CancellationReasons"] == boto_response["CancellationReasons"]
    reasons = ours_response["CancellationReasons"]
    assert [reason["Code"] for reason in reasons] == ["ConditionalCheckFailed", "None", "None"]
    assert reasons[0]["Item"] == guard
    assert isinstance(reasons[0]["Item"]["blobs"]["BS"][0], bytes)
    assert plain(ours_response) == plain(boto_response)
    assert "Item" not in mine.get_item(TableName=table, Key=_key(items[1]["Put"]["Item"]), ConsistentRead=True)
    assert mine.get_item(TableName=table, Key=_key(other), ConsistentRead=True)["Item"] == other


def test_dynamodb_unknown_table_error(moto_url):
    mine, theirs = ours("dynamodb", moto_url), boto("dynamodb", moto_url)
    key = {"pk": {"S": "x"}, "sk": {"S": "y"}}
    ours_response, boto_response = both_raise(lambda: mine.get_item(TableName="no-such-table", Key=key),
                                              lambda: theirs.get_item(TableName="no-such-table", Key=key))
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["Error"]["Code"] == "ResourceNotFoundException"


# --- KMS

@pytest.fixture(scope="module")
def kms_key(moto_url):
    return boto("kms", moto_url).create_key(Description="aws_json tests")["KeyMetadata"]["KeyId"]


def _no_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _no_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def test_kms_create_key(moto_url):
    mine, theirs = ours("kms", moto_url), boto("kms", moto_url)
    created_ours = plain(mine.create_key(Description="d", Tags=[{"TagKey": "k", "TagValue": "v"}]))["KeyMetadata"]
    created_boto = plain(theirs.create_key(Description="d", Tags=[{"TagKey": "k", "TagValue": "v"}]))["KeyMetadata"]
    for metadata in (created_ours, created_boto):
        key_id = metadata.pop("KeyId")
        assert metadata.pop("Arn").endswith(f":key/{key_id}")
        assert abs(metadata.pop("CreationDate") - time.time()) < 300
    # moto sends some members as JSON null; both clients leave them out (test below).
    assert _no_nulls(created_ours) == created_boto
    assert created_boto["KeySpec"] == "SYMMETRIC_DEFAULT"


def test_kms_null_members_are_left_out_as_botocore_does(moto_url):
    created = ours("kms", moto_url).create_key()["KeyMetadata"]
    assert None not in created.values()


def test_kms_generate_data_key_and_decrypt_with_encryption_context(moto_url, kms_key):
    mine, theirs = ours("kms", moto_url), boto("kms", moto_url)
    context = {"purpose": "aws_json", "tenant": "t-1"}
    generated = mine.generate_data_key(KeyId=kms_key, KeySpec="AES_256", EncryptionContext=context)
    generated_boto = theirs.generate_data_key(KeyId=kms_key, KeySpec="AES_256", EncryptionContext=context)
    assert isinstance(generated["Plaintext"], bytes) and len(generated["Plaintext"]) == 32
    assert isinstance(generated["CiphertextBlob"], bytes) and len(generated["CiphertextBlob"]) > 32
    assert sorted(plain(generated)) == sorted(plain(generated_boto)) == ["CiphertextBlob", "KeyId", "Plaintext"]
    assert generated["KeyId"] == generated_boto["KeyId"]
    # Each client decrypts what the other generated: same answers.
    for ciphertext, plaintext in ((generated["CiphertextBlob"], generated["Plaintext"]),
                                  (generated_boto["CiphertextBlob"], generated_boto["Plaintext"])):
        decrypted_ours = mine.decrypt(CiphertextBlob=ciphertext, EncryptionContext=context)
        decrypted_boto = theirs.decrypt(CiphertextBlob=ciphertext, EncryptionContext=context)
        assert plain(decrypted_ours) == plain(decrypted_boto)
        assert decrypted_ours["Plaintext"] == plaintext


def test_kms_decrypt_with_the_wrong_context_fails_alike(moto_url, kms_key):
    mine, theirs = ours("kms", moto_url), boto("kms", moto_url)
    ciphertext = theirs.generate_data_key(KeyId=kms_key, KeySpec="AES_256",
                                          EncryptionContext={"a": "1"})["CiphertextBlob"]
    wrong = {"CiphertextBlob": ciphertext, "EncryptionContext": {"a": "2"}}
    ours_response, boto_response = both_raise(lambda: mine.decrypt(**wrong), lambda: theirs.decrypt(**wrong))
    assert ours_response["Error"]["Code"] == boto_response["Error"]["Code"] == "InvalidCiphertextException"
    assert plain(ours_response) == plain(boto_response)


def test_kms_encrypt(moto_url, kms_key):
    mine, theirs = ours("kms", moto_url), boto("kms", moto_url)
    secret = b"\x00card data\xff" * 3
    encrypted_ours = mine.encrypt(KeyId=kms_key, Plaintext=secret, EncryptionContext={"k": "v"})
    encrypted_boto = theirs.encrypt(KeyId=kms_key, Plaintext=secret, EncryptionContext={"k": "v"})
    assert sorted(plain(encrypted_ours)) == sorted(plain(encrypted_boto))
    assert {"CiphertextBlob", "KeyId"} <= set(plain(encrypted_ours))
    assert isinstance(encrypted_ours["CiphertextBlob"], bytes)
    assert encrypted_ours["KeyId"] == encrypted_boto["KeyId"]
    assert theirs.decrypt(CiphertextBlob=encrypted_ours["CiphertextBlob"],
                          EncryptionContext={"k": "v"})["Plaintext"] == secret
    assert mine.decrypt(CiphertextBlob=encrypted_boto["CiphertextBlob"],
                        EncryptionContext={"k": "v"})["Plaintext"] == secret


# --- SQS

def _message_attributes() -> dict[str, Any]:
    return {"kind": {"DataType": "String", "StringValue": "postback"},
            "attempt": {"DataType": "Number", "StringValue": "3"},
            "sig": {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"}}


def _received(answer: dict[str, Any]) -> list[dict[str, Any]]:
    """Messages without what differs from one message to the next (ids, receipt, timestamps)."""
    messages = []
    for message in plain(answer)["Messages"]:
        message = dict(message)
        assert message.pop("MessageId") and message.pop("ReceiptHandle")
        attributes = dict(message.pop("Attributes"))
        assert attributes.pop("SentTimestamp").isdigit()
        assert attributes.pop("ApproximateFirstReceiveTimestamp").isdigit()
        attributes.pop("SenderId")
        message["Attributes"] = attributes
        messages.append(message)
    return messages


def test_sqs_send_receive_delete(moto_url):
    mine, theirs = ours("sqs", moto_url), boto("sqs", moto_url)
    name_ours, name_boto = _unique("q-ours"), _unique("q-boto")
    url_ours = mine.create_queue(QueueName=name_ours, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    url_boto = theirs.create_queue(QueueName=name_boto, Attributes={"VisibilityTimeout": "30"})["QueueUrl"]
    assert url_ours.endswith("/" + name_ours) and url_boto == url_ours.replace(name_ours, name_boto)
    assert plain(mine.create_queue(QueueName=name_ours, Attributes={"VisibilityTimeout": "30"})) == {
        "QueueUrl": url_ours}

    body = json.dumps({"event": "sale", "amount": 1250})
    sent_ours = plain(mine.send_message(QueueUrl=url_ours, MessageBody=body, MessageAttributes=_message_attributes()))
    sent_boto = plain(theirs.send_message(QueueUrl=url_boto, MessageBody=body,
                                          MessageAttributes=_message_attributes()))
    assert sent_ours.pop("MessageId") and sent_boto.pop("MessageId")
    assert sent_ours == sent_boto
    assert set(sent_ours) == {"MD5OfMessageBody", "MD5OfMessageAttributes"}

    receive = {"MaxNumberOfMessages": 10, "MessageAttributeNames": ["All"], "AttributeNames": ["All"],
               "WaitTimeSeconds": 0}
    received_ours = mine.receive_message(QueueUrl=url_ours, **receive)
    received_boto = theirs.receive_message(QueueUrl=url_boto, **receive)
    assert _received(received_ours) == _received(received_boto)
    message = received_ours["Messages"][0]
    assert message["Body"] == body
    assert message["MessageAttributes"]["sig"] == {"DataType": "Binary", "BinaryValue": b"\x00\x01\xfe\xff"}

    deleted_ours = mine.delete_message(QueueUrl=url_ours, ReceiptHandle=message["ReceiptHandle"])
    deleted_boto = theirs.delete_message(QueueUrl=url_boto, ReceiptHandle=received_boto["Messages"][0][
        "ReceiptHandle"])
    assert plain(deleted_ours) == plain(deleted_boto) == {}
    empty_ours = mine.receive_message(QueueUrl=url_ours, WaitTimeSeconds=0, VisibilityTimeout=0)
    assert plain(empty_ours) == plain(theirs.receive_message(QueueUrl=url_boto, WaitTimeSeconds=0,
                                                             VisibilityTimeout=0))
    assert "Messages" not in empty_ours


def test_sqs_change_message_visibility_batch_and_queue_attributes(moto_url):
    mine, theirs = ours("sqs", moto_url), boto("sqs", moto_url)
    url = theirs.create_queue(QueueName=_unique("q-vis"))["QueueUrl"]
    for i in range(4):
        theirs.send_message(QueueUrl=url, MessageBody=f"m{i}")
    messages = theirs.receive_message(QueueUrl=url, MaxNumberOfMessages=4, VisibilityTimeout=60)["Messages"]
    assert len(messages) == 4
    entries = [{"Id": f"e{i}", "ReceiptHandle": m["ReceiptHandle"], "VisibilityTimeout": 0}
               for i, m in enumerate(messages)]
    changed_ours = mine.change_message_visibility_batch(QueueUrl=url, Entries=entries[:2])
    changed_boto = theirs.change_message_visibility_batch(QueueUrl=url, Entries=entries[2:])
    assert plain(changed_ours)["Successful"] == [{"Id": "e0"}, {"Id": "e1"}]
    assert plain(changed_boto)["Successful"] == [{"Id": "e2"}, {"Id": "e3"}]
    assert plain(changed_ours).get("Failed", []) == plain(changed_boto).get("Failed", []) == []
    assert set(plain(changed_ours)) == set(plain(changed_boto))

    attributes_ours = mine.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    attributes_boto = theirs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])
    assert plain(attributes_ours) == plain(attributes_boto)
    assert attributes_ours["Attributes"]["ApproximateNumberOfMessages"] == "4"
    some = mine.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn", "VisibilityTimeout"])
    assert plain(some) == plain(theirs.get_queue_attributes(QueueUrl=url,
                                                            AttributeNames=["QueueArn", "VisibilityTimeout"]))
    assert set(some["Attributes"]) == {"QueueArn", "VisibilityTimeout"}


def test_sqs_send_to_a_missing_queue_has_botocore_s_code(moto_url):
    mine, theirs = ours("sqs", moto_url), boto("sqs", moto_url)
    missing = f"{moto_url}/123456789012/{_unique('gone')}"
    ours_response, boto_response = both_raise(lambda: mine.send_message(QueueUrl=missing, MessageBody="x"),
                                              lambda: theirs.send_message(QueueUrl=missing, MessageBody="x"))
    assert ours_response["Error"]["Code"] == boto_response["Error"]["Code"] == "AWS.SimpleQueueService.NonExistentQueue"
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["Error"]["QueryErrorCode"] == "QueueDoesNotExist"


# --- Secrets Manager

def test_secretsmanager_create_and_get_secret_value(moto_url):
    mine, theirs = ours("secretsmanager", moto_url), boto("secretsmanager", moto_url)
    for value in ({"SecretString": json.dumps({"password": "p@ss"})}, {"SecretBinary": b"\x00\x01binary\xff"}):
        name_ours, name_boto = _unique("s-ours"), _unique("s-boto")
        created_ours = plain(mine.create_secret(Name=name_ours, **value))
        created_boto = plain(theirs.create_secret(Name=name_boto, **value))
        assert created_ours.pop("Name") == name_ours and created_boto.pop("Name") == name_boto
        assert created_ours.pop("ARN").split(":secret:")[1].startswith(name_ours + "-")
        created_boto.pop("ARN")
        assert created_ours.keys() == created_boto.keys() == {"VersionId"}
        for name in (name_ours, name_boto):
            got_ours = mine.get_secret_value(SecretId=name)
            assert plain(got_ours) == plain(theirs.get_secret_value(SecretId=name))
            for member, expected in value.items():
                assert got_ours[member] == expected
            assert isinstance(got_ours["CreatedDate"], (int, float))
    ours_response, boto_response = both_raise(lambda: mine.get_secret_value(SecretId=_unique("none")),
                                              lambda: theirs.get_secret_value(SecretId=_unique("none")))
    assert ours_response["Error"]["Code"] == boto_response["Error"]["Code"] == "ResourceNotFoundException"


# ---------------------------------------------------------------------------------------------- stand-ins

@dataclass
class Reply:
    status: int = 200
    body: bytes = b"{}"
    headers: list[tuple[str, str]] = field(default_factory=list)
    close_after: bool = False  # close the socket after answering, without saying so (no Connection: close)


def json_reply(status: int = 200, payload: Any = None, headers: tuple[tuple[str, str], ...] = (), crc: bool = True,
               close_after: bool = False) -> Reply:
    body = json.dumps({} if payload is None else payload).encode()
    all_headers = [("Content-Type", "application/x-amz-json-1.0"), ("x-amzn-RequestId", "req-" + str(status)),
                   *headers]
    if crc:
        all_headers.append(("x-amz-crc32", str(zlib.crc32(body) & 0xFFFFFFFF)))
    return Reply(status, body, all_headers, close_after)


@dataclass
class Received:
    method: str
    path: str
    headers: Any  # email.message.Message: case-insensitive
    body: bytes


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # kept-alive client connections must not hold the test's teardown
    stand_in: StandIn  # set by StandIn right after construction


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        with self.server.stand_in.lock:
            self.server.stand_in.connections += 1

    def do_POST(self) -> None:  # noqa: N802
        self._serve()

    def do_GET(self) -> None:  # noqa: N802
        self._serve()

    def _serve(self) -> None:
        stand_in = self.server.stand_in
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        with stand_in.lock:
            stand_in.requests.append(Received(self.command, self.path, self.headers, body))
            reply = stand_in.replies.pop(0) if len(stand_in.replies) > 1 else stand_in.replies[0]
        self.send_response(reply.status)
        for name, value in reply.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)
        self.wfile.flush()
        if reply.close_after:
            self.close_connection = True

    def finish(self) -> None:
        super().finish()
        self.server.stand_in.closed.set()

    def log_message(self, *_args: Any) -> None:
        pass


class StandIn:
    """A scripted HTTP/1.1 server on 127.0.0.1: each request gets the next reply (the last one repeats)."""

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Received] = []
        self.connections = 0
        self.lock = threading.Lock()
        self.closed = threading.Event()
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.stand_in = self
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    started: list[StandIn] = []

    def start(*replies: Reply) -> StandIn:
        server = StandIn(list(replies) or [json_reply()])
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def no_backoff(monkeypatch):
    """The module's ``time.sleep`` recorded instead of slept, and its jitter fixed at one half."""
    sleeps: list[float] = []
    fake_time = types.SimpleNamespace(time=time.time, gmtime=time.gmtime, strftime=time.strftime,
                                      sleep=sleeps.append)
    monkeypatch.setattr(aws_json, "time", fake_time)
    monkeypatch.setattr(aws_json, "random", types.SimpleNamespace(random=lambda: 0.5))
    return sleeps


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- retries

CALLS = {
    "dynamodb": ("get_item", {"TableName": "t", "Key": {"pk": {"S": "a"}}}),
    "kms": ("decrypt", {"CiphertextBlob": b"\x00ciphertext"}),
    "sqs": ("send_message", {"QueueUrl": "http://127.0.0.1/123456789012/q", "MessageBody": "m"}),
    "secretsmanager": ("get_secret_value", {"SecretId": "s"}),
}


def test_a_500_then_a_success_is_one_retry(stand_in, no_backoff):
    server = stand_in(json_reply(500, {"__type": "InternalServerError", "message": "boom"}),
                      json_reply(200, {"Item": {"pk": {"S": "a"}}}))
    answer = ours("dynamodb", server.url).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert answer["Item"] == {"pk": {"S": "a"}}
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert len(server.requests) == 2
    assert no_backoff == [0.5]  # full jitter: random() x min(20, 2^0) s
    # The same body is sent again.
    assert server.requests[0].body == server.requests[1].body


def test_throttling_is_retried(stand_in, no_backoff):
    server = stand_in(json_reply(400, {"__type": "com.amazonaws.dynamodb.v20120810#ThrottlingException",
                                       "message": "slow down"}), json_reply(200, {}))
    answer = ours("dynamodb", server.url).put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert plain(answer) == {}
    assert answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(server.requests) == 2


def test_three_503_end_in_the_error_after_exactly_three_requests(stand_in, no_backoff):
    server = stand_in(json_reply(503, {"__type": "ServiceUnavailable", "message": "later"}))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", server.url).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert len(server.requests) == 3
    response = raised.value.response
    assert response["Error"] == {"Code": "ServiceUnavailable", "Message": "later"}
    assert response["ResponseMetadata"]["HTTPStatusCode"] == 503
    assert response["ResponseMetadata"]["RetryAttempts"] == 2
    assert raised.value.operation_name == "GetItem"
    assert no_backoff == [0.5, 1.0]  # random() x 2^0, random() x 2^1


def test_max_attempts_is_honoured(stand_in, no_backoff):
    server = stand_in(json_reply(500, {"__type": "InternalServerError"}))
    with pytest.raises(AwsClientError):
        ours("dynamodb", server.url, max_attempts=5).get_item(TableName="t", Key={})
    assert len(server.requests) == 5
    assert no_backoff == [0.5, 1.0, 2.0, 4.0]


def test_a_validation_error_is_not_retried(stand_in, no_backoff):
    server = stand_in(json_reply(400, {"__type": "com.amazon.coral.validate#ValidationException",
                                       "message": "One or more parameter values were invalid"}))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", server.url).get_item(TableName="t", Key={})
    assert len(server.requests) == 1
    assert raised.value.response["Error"] == {"Code": "ValidationException",
                                              "Message": "One or more parameter values were invalid"}
    assert raised.value.response["ResponseMetadata"]["RetryAttempts"] == 0
    assert no_backoff == []
    assert "One or more parameter values were invalid" in str(raised.value)


def _error_reply(status: int, code: str | None, query_error: str | None = None) -> Reply:
    headers = (("x-amzn-query-error", query_error),) if query_error else ()
    return json_reply(status, {"__type": code, "message": "m"} if code else {}, headers=headers)


@pytest.mark.parametrize("service, status, code, query_error, requests", [
    ("dynamodb", 500, "InternalServerError", None, 3),
    ("dynamodb", 502, None, None, 3),
    ("dynamodb", 503, "ServiceUnavailable", None, 3),
    ("dynamodb", 504, None, None, 3),
    ("dynamodb", 400, "com.amazonaws.dynamodb.v20120810#ThrottlingException", None, 3),
    ("dynamodb", 400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", None, 3),
    ("dynamodb", 400, "RequestLimitExceeded", None, 3),
    ("dynamodb", 400, "TransactionInProgressException", None, 3),
    ("dynamodb", 400, "RequestTimeoutException", None, 3),
    ("dynamodb", 400, "com.amazon.coral.validate#ValidationException", None, 1),
    ("dynamodb", 400, "ConditionalCheckFailedException", None, 1),
    ("dynamodb", 400, "TransactionConflictException", None, 1),
    ("dynamodb", 429, "TooManyRequestsException", None, 3),
    ("dynamodb", 429, "SomethingElse", None, 1),
    ("dynamodb", 413, "RequestEntityTooLarge", None, 1),
    # modeled retryable, but GetItem does not list it: neither client retries it here (PutItem etc. do)
    ("dynamodb", 400, "ReplicatedWriteConflictException", None, 1),
    ("kms", 500, "KMSInternalException", None, 3),
    ("kms", 400, "LimitExceededException", None, 3),
    ("kms", 400, "ThrottlingException", None, 3),
    ("kms", 400, "NotFoundException", None, 1),
    ("sqs", 400, "com.amazonaws.sqs#RequestThrottled", "RequestThrottled;Sender", 3),
    ("sqs", 400, "com.amazonaws.sqs#QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue;Sender", 1),
    ("secretsmanager", 400, "InternalServiceError", None, 1),
    ("secretsmanager", 500, "InternalServiceError", None, 3),
])
def test_retries_are_botocore_standard_mode_s(stand_in, no_backoff, monkeypatch, service, status, code, query_error,
                                             requests):
    import botocore.endpoint

    boto_sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=boto_sleeps.append))
    server = stand_in(_error_reply(status, code, query_error))
    method, params = CALLS[service]
    ours_response, boto_response = both_raise(lambda: getattr(ours(service, server.url), method)(**params),
                                              lambda: getattr(boto(service, server.url, attempts=3), method)(**params))
    assert len(server.requests) == 2 * requests
    assert len(no_backoff) == len(boto_sleeps) == requests - 1
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["ResponseMetadata"]["RetryAttempts"] == boto_response["ResponseMetadata"][
        "RetryAttempts"] == requests - 1


def test_a_modeled_retryable_error_is_retried_where_the_operation_lists_it(stand_in, no_backoff, monkeypatch):
    import botocore.endpoint

    boto_sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=boto_sleeps.append))
    server = stand_in(_error_reply(400, "ReplicatedWriteConflictException"))
    params = {"TableName": "t", "Item": {"pk": {"S": "a"}}}
    ours_response, boto_response = both_raise(lambda: ours("dynamodb", server.url).put_item(**params),
                                              lambda: boto("dynamodb", server.url, attempts=3).put_item(**params))
    assert len(server.requests) == 2 * 3  # PutItem lists ReplicatedWriteConflictException: 3 attempts each
    assert ours_response["Error"]["Code"] == boto_response["Error"]["Code"] == "ReplicatedWriteConflictException"
    assert ours_response["ResponseMetadata"]["RetryAttempts"] == boto_response["ResponseMetadata"][
        "RetryAttempts"] == 2


def test_an_outage_burst_spends_the_retry_quota_as_botocore_s(stand_in, no_backoff, monkeypatch):
    """Both clients against an endpoint that answers 503: each failed call takes two retries (10 tokens) of the
    bucket of 500, so after 50 calls neither client retries; a call refused its retry says RetryQuotaReached."""
    import botocore.endpoint

    boto_sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=boto_sleeps.append))
    server = stand_in(_error_reply(503, "ServiceUnavailable"))
    method, params = CALLS["kms"]
    our_client, boto_client = ours("kms", server.url), boto("kms", server.url, attempts=3)
    per_call: dict[str, list[int]] = {"ours": [], "boto": []}
    for _ in range(52):
        for name, client, error in (("ours", our_client, AwsClientError), ("boto", boto_client, ClientError)):
            before = len(server.requests)
            with pytest.raises(error) as raised:
                getattr(client, method)(**params)
            per_call[name].append(len(server.requests) - before)
            metadata = raised.value.response["ResponseMetadata"]
            assert metadata.get("RetryQuotaReached", False) is (len(per_call[name]) > 50)
    assert per_call["ours"] == per_call["boto"] == [3] * 50 + [1, 1]
    assert len(no_backoff) == len(boto_sleeps) == 100


def test_a_wrong_crc32_is_retried_then_a_transport_error(stand_in, no_backoff, monkeypatch):
    body = json.dumps({"Item": {"pk": {"S": "a"}}}).encode()
    server = stand_in(Reply(200, body, [("Content-Type", "application/x-amz-json-1.0"),
                                        ("x-amz-crc32", str((zlib.crc32(body) + 1) & 0xFFFFFFFF))]))
    with pytest.raises(AwsTransportError) as raised:
        ours("dynamodb", server.url).get_item(TableName="t", Key={})
    assert len(server.requests) == 3
    assert "CRC32" in str(raised.value.__cause__)
    assert no_backoff == [0.5, 1.0]
    # botocore's standard mode retries it as often (then hands over the last answer: this client refuses it).
    import botocore.endpoint

    boto_sleeps: list[float] = []
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=boto_sleeps.append))
    answer = boto("dynamodb", server.url, attempts=3).get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert answer["ResponseMetadata"]["RetryAttempts"] == 2 and len(boto_sleeps) == 2
    assert len(server.requests) == 6


def test_a_wrong_crc32_then_a_good_answer_succeeds(stand_in, no_backoff):
    good = json_reply(200, {"Item": {"pk": {"S": "a"}}})
    bad = Reply(200, good.body, [("x-amz-crc32", "12345")])
    server = stand_in(bad, good)
    answer = ours("dynamodb", server.url).get_item(TableName="t", Key={})
    assert answer["Item"] == {"pk": {"S": "a"}} and answer["ResponseMetadata"]["RetryAttempts"] == 1
    assert len(server.requests) == 2


def test_crc32_is_dynamodb_s_only(stand_in, no_backoff):
    server = stand_in(Reply(200, b'{"KeyId":"k"}', [("x-amz-crc32", "1")]))
    assert plain(ours("kms", server.url).describe_key(KeyId="k")) == {"KeyId": "k"}
    assert len(server.requests) == 1


def test_a_refused_connection_is_a_transport_error(no_backoff):
    client = ours("dynamodb", f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(AwsTransportError) as raised:
        client.get_item(TableName="t", Key={})
    assert isinstance(raised.value.__cause__, ConnectionRefusedError)
    assert "3 attempts" in str(raised.value)
    assert no_backoff == [0.5, 1.0]


def test_a_read_timeout_is_a_transport_error(no_backoff):
    # A listening socket that never accepts: the connection is made (the kernel's backlog), no answer ever comes.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        client = ours("dynamodb", f"http://127.0.0.1:{silent.getsockname()[1]}", read_timeout=0.3)
        started = time.monotonic()
        with pytest.raises(AwsTransportError) as raised:
            client.get_item(TableName="t", Key={})
        elapsed = time.monotonic() - started
    assert isinstance(raised.value.__cause__, TimeoutError)
    assert 0.85 < elapsed < 5
    assert no_backoff == [0.5, 1.0]


def test_a_dropped_keep_alive_connection_is_replaced_without_an_attempt(stand_in, no_backoff):
    server = stand_in(json_reply(200, {"Item": {"n": {"N": "1"}}}, close_after=True),
                      json_reply(200, {"Item": {"n": {"N": "2"}}}))
    client = ours("dynamodb", server.url)
    first = client.get_item(TableName="t", Key={})
    assert first["Item"] == {"n": {"N": "1"}}
    assert "connection" not in first["ResponseMetadata"]["HTTPHeaders"]  # the client keeps the connection
    assert server.closed.wait(5)
    time.sleep(0.05)
    second = client.get_item(TableName="t", Key={})
    assert second["Item"] == {"n": {"N": "2"}}
    assert second["ResponseMetadata"]["RetryAttempts"] == 0
    assert no_backoff == []
    assert len(server.requests) == 2 and server.connections == 2


def test_a_kept_alive_connection_is_reused(stand_in, no_backoff):
    server = stand_in(json_reply(200, {}))
    client = ours("dynamodb", server.url)
    for _ in range(3):
        client.get_item(TableName="t", Key={})
    assert len(server.requests) == 3 and server.connections == 1
    client.close()
    client.get_item(TableName="t", Key={})
    assert server.connections == 2


def test_concurrent_calls_share_the_pool(stand_in):
    server = stand_in(json_reply(200, {"Item": {"n": {"N": "1"}}}))
    client = ours("dynamodb", server.url)
    answers: list[Any] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(5):
                answers.append(client.get_item(TableName="t", Key={})["Item"])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert errors == [] and answers == [{"n": {"N": "1"}}] * 40
    assert len(server.requests) == 40 and 1 <= server.connections <= 8


def test_renew_opens_new_connections_and_reads_credentials_again(stand_in, clock):
    endpoint = stand_in(_credentials_reply(1), _credentials_reply(2))
    service = stand_in(json_reply(200, {}))
    client = JsonServiceClient("dynamodb", region=REGION, endpoint_url=service.url,
                               credentials=aws_json.ContainerCredentials(endpoint.url + "/creds"))
    client.get_item(TableName="t", Key={})
    client.get_item(TableName="t", Key={})
    assert (len(endpoint.requests), service.connections) == (1, 1)
    client.renew()
    client.get_item(TableName="t", Key={})
    assert (len(endpoint.requests), service.connections) == (2, 2)
    assert [r.headers["X-Amz-Security-Token"] for r in service.requests] == ["token-1", "token-1", "token-2"]


def test_operations_are_snake_case_methods_and_nothing_else(stand_in):
    server = stand_in(json_reply(200, {}))
    client = ours("sqs", server.url)
    assert client.change_message_visibility_batch is client.change_message_visibility_batch
    client.change_message_visibility_batch(QueueUrl="q", Entries=[])
    assert server.requests[0].headers["X-Amz-Target"] == "AmazonSQS.ChangeMessageVisibilityBatch"
    for name in ("exceptions", "get_paginator", "_private", "GetItem"):
        with pytest.raises(AttributeError):
            getattr(client, name)
    assert len(server.requests) == 1
    assert aws_json.operation_name("batch_write_item") == "BatchWriteItem"
    assert client.meta.region_name == REGION and client.meta.endpoint_url == server.url
    assert client.meta.service_model.service_name == "sqs"


# --- the request on the wire

def _verify_signature(received: Received, url: str, service: str, token: str | None = None) -> list[str]:
    """Recompute the signature with botocore's signer from what the server received; the signed header names."""
    found = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
                         r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})", received.headers["Authorization"])
    assert found, received.headers["Authorization"]
    access_key, day, region, signing_name, signed, signature = found.groups()
    assert (access_key, region, signing_name) == (KEY_ID, REGION, service)
    amz_date = received.headers["X-Amz-Date"]
    assert re.fullmatch(r"\d{8}T\d{6}Z", amz_date) and amz_date[:8] == day
    names = signed.split(";")
    request = AWSRequest(method=received.method, url=url + received.path, data=received.body,
                         headers={name: received.headers[name] for name in names})
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(BotoCredentials(KEY_ID, SECRET, token), signing_name, region)
    canonical = signer.canonical_request(request)
    assert signer.signature(signer.string_to_sign(request, canonical), request) == signature
    return names


TOKEN = "3f1c1b4e-8a8e-4a53-9d59-0c1f5e0c7a10"


@pytest.mark.parametrize("service, method, params, target, content_type, wire", [
    ("dynamodb", "get_item", {"TableName": "t", "Key": {"pk": {"B": b"\x00\xff"}}, "ConsistentRead": True},
     "DynamoDB_20120810.GetItem", "application/x-amz-json-1.0",
     {"TableName": "t", "Key": {"pk": {"B": "AP8="}}, "ConsistentRead": True}),
    ("kms", "decrypt", {"CiphertextBlob": b"\x00\xff", "EncryptionContext": {"a": "b"}},
     "TrentService.Decrypt", "application/x-amz-json-1.1", {"CiphertextBlob": "AP8=", "EncryptionContext": {"a": "b"}}),
    ("sqs", "send_message", {"QueueUrl": "http://127.0.0.1/123456789012/q", "MessageBody": "m",
                             "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": b"\x00\xff"}}},
     "AmazonSQS.SendMessage", "application/x-amz-json-1.0",
     {"QueueUrl": "http://127.0.0.1/123456789012/q", "MessageBody": "m",
      "MessageAttributes": {"a": {"DataType": "Binary", "BinaryValue": "AP8="}}}),
    ("secretsmanager", "put_secret_value", {"SecretId": "s", "SecretBinary": b"\x00\xff", "ClientRequestToken": TOKEN},
     "secretsmanager.PutSecretValue", "application/x-amz-json-1.1",
     {"SecretId": "s", "SecretBinary": "AP8=", "ClientRequestToken": TOKEN}),
])
def test_the_request_sent(stand_in, service, method, params, target, content_type, wire):
    server = stand_in(json_reply(200, {}))
    getattr(ours(service, server.url), method)(**params)
    getattr(boto(service, server.url), method)(**params)
    received, from_boto = server.requests
    assert (received.method, received.path) == ("POST", "/")
    assert received.headers["X-Amz-Target"] == from_boto.headers["X-Amz-Target"] == target
    assert received.headers["Content-Type"] == from_boto.headers["Content-Type"] == content_type
    assert received.headers["Host"] == from_boto.headers["Host"] == server.url.removeprefix("http://")
    assert int(received.headers["Content-Length"]) == len(received.body)
    assert json.loads(received.body) == json.loads(from_boto.body) == wire  # bytes went base64, as botocore sends
    assert "X-Amz-Security-Token" not in received.headers
    # SQS is query compatible: both clients send x-amzn-query-mode (and sign it); the others do not send it.
    assert received.headers["X-Amzn-Query-Mode"] == from_boto.headers["X-Amzn-Query-Mode"]
    query_mode = ["x-amzn-query-mode"] if service == "sqs" else []
    assert received.headers["X-Amzn-Query-Mode"] == ("true" if query_mode else None)
    assert _verify_signature(received, server.url, service) == ["content-type", "host", "x-amz-date",
                                                                "x-amz-target", *query_mode]
    _verify_signature(from_boto, server.url, service)  # the verifier itself accepts botocore's request


IDEMPOTENT_CALLS = [
    ("dynamodb", "transact_write_items", {"TransactItems": [{"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}}]}),
    ("secretsmanager", "create_secret", {"Name": "n", "SecretString": "v"}),
    ("secretsmanager", "put_secret_value", {"SecretId": "n", "SecretString": "v"}),
]
_UUID4 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


@pytest.mark.parametrize("service, method, params", IDEMPOTENT_CALLS)
def test_botocore_fills_the_idempotency_token_once_per_call(stand_in, monkeypatch, service, method, params):
    # The reference behaviour for the test below: members with the idempotencyToken trait
    # (TransactWriteItems, CreateSecret, PutSecretValue: ClientRequestToken) get a UUID4, the same on every retry.
    import botocore.endpoint

    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=lambda _s: None))
    server = stand_in(json_reply(500, {"__type": "InternalServerError"}), json_reply(200, {}))
    getattr(boto(service, server.url, attempts=3), method)(**params)
    tokens = [json.loads(r.body).get("ClientRequestToken") for r in server.requests]
    assert len(tokens) == 2 and tokens[0] == tokens[1] and _UUID4.fullmatch(tokens[0])
    # A token the caller gives is sent as it is, by both clients.
    given = stand_in(json_reply(200, {}))
    getattr(boto(service, given.url), method)(**params, ClientRequestToken=TOKEN)
    getattr(ours(service, given.url), method)(**params, ClientRequestToken=TOKEN)
    assert [json.loads(r.body)["ClientRequestToken"] for r in given.requests] == [TOKEN, TOKEN]


@pytest.mark.parametrize("service, method, params", IDEMPOTENT_CALLS)
def test_the_idempotency_token_is_filled_once_per_call(stand_in, no_backoff, service, method, params):
    server = stand_in(json_reply(500, {"__type": "InternalServerError"}), json_reply(200, {}))
    getattr(ours(service, server.url), method)(**params)
    tokens = [json.loads(r.body).get("ClientRequestToken") for r in server.requests]
    assert len(tokens) == 2 and tokens[0] == tokens[1] and _UUID4.fullmatch(tokens[0] or "")


def test_the_session_token_is_sent_and_signed(stand_in, monkeypatch):
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session/token+value==")
    server = stand_in(json_reply(200, {}))
    ours("kms", server.url).decrypt(CiphertextBlob=b"\x01\x02\x03\xfb\xff", EncryptionContext={"a": "b"})
    (received,) = server.requests
    assert received.headers["X-Amz-Security-Token"] == "session/token+value=="
    assert received.headers["X-Amz-Target"] == "TrentService.Decrypt"
    assert json.loads(received.body) == {"CiphertextBlob": base64.b64encode(b"\x01\x02\x03\xfb\xff").decode(),
                                         "EncryptionContext": {"a": "b"}}
    assert _verify_signature(received, server.url, "kms", token="session/token+value==") == [
        "content-type", "host", "x-amz-date", "x-amz-security-token", "x-amz-target"]


def test_environment_credentials_are_read_at_each_call(stand_in, monkeypatch):
    server = stand_in(json_reply(200, {}))
    client = ours("dynamodb", server.url)
    client.get_item(TableName="t", Key={})
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAROTATEDEXAMPLE01")
    client.get_item(TableName="t", Key={})
    credentials = [r.headers["Authorization"].split("Credential=")[1].split("/")[0] for r in server.requests]
    assert credentials == [KEY_ID, "AKIAROTATEDEXAMPLE01"]


def test_an_endpoint_path_is_kept_and_signed(stand_in):
    server = stand_in(json_reply(200, {}))
    ours("dynamodb", server.url + "/prefix/").get_item(TableName="t", Key={})
    (received,) = server.requests
    assert received.path == "/prefix/"
    _verify_signature(received, server.url, "dynamodb")


@pytest.mark.parametrize("service, reply", [
    ("dynamodb", json_reply(400, {"__type": "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException",
                                  "message": "Requested resource not found"})),
    ("dynamodb", json_reply(400, {"__type": "com.amazon.coral.validate#ValidationException",
                                  "Message": "capital M message"})),
    ("dynamodb", json_reply(400, {"__type": "ConditionalCheckFailedException", "message": "failed",
                                  "Item": {"b": {"B": "AAE="}}})),
    ("kms", json_reply(400, {"__type": "NotFoundException", "message": "Key 'x' does not exist"}, crc=False)),
    ("kms", json_reply(400, {"__type": "AccessDeniedException", "Message": "no"}, crc=False)),
    ("kms", json_reply(400, {"__type": "InvalidCiphertextException"}, crc=False)),
    ("sqs", json_reply(400, {"__type": "com.amazonaws.sqs#QueueDoesNotExist", "message": "gone"}, crc=False,
                       headers=(("x-amzn-query-error", "AWS.SimpleQueueService.NonExistentQueue;Sender"),))),
    ("sqs", json_reply(400, {"__type": "com.amazonaws.sqs#InvalidAddress", "message": "bad"}, crc=False)),
    ("secretsmanager", json_reply(400, {"__type": "ResourceNotFoundException",
                                        "Message": "Secrets Manager can't find the specified secret."}, crc=False)),
    ("secretsmanager", json_reply(404, {"__type": "ResourceNotFoundException", "message": "x"}, crc=False)),
])
def test_error_answers_read_as_botocore_reads_them(stand_in, no_backoff, service, reply):
    server = stand_in(reply)
    method, params = CALLS[service]
    ours_response, boto_response = both_raise(lambda: getattr(ours(service, server.url), method)(**params),
                                              lambda: getattr(boto(service, server.url, attempts=1), method)(**params))
    assert ours_response["Error"] == boto_response["Error"]
    assert ours_response["ResponseMetadata"]["HTTPStatusCode"] == boto_response["ResponseMetadata"][
        "HTTPStatusCode"] == reply.status
    assert ours_response["ResponseMetadata"]["RequestId"] == boto_response["ResponseMetadata"]["RequestId"]
    assert len(server.requests) == 2


def test_an_error_type_only_in_the_header_is_read(stand_in, no_backoff):
    # The awsJson protocols allow the error type in x-amzn-ErrorType alone; botocore's JSON parser reads only the
    # body's __type and reports the HTTP status ("400") then. This client reads the header.
    server = stand_in(Reply(400, b"", [("x-amzn-ErrorType",
                                        "AccessDeniedException:http://internal.amazon.com/coral/com.amazon.coral.service/")]))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", server.url).get_item(TableName="t", Key={})
    assert raised.value.response["Error"] == {"Code": "AccessDeniedException", "Message": ""}
    empty = stand_in(Reply(403, b""))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", empty.url).get_item(TableName="t", Key={})
    assert raised.value.response["Error"]["Code"] == "403"


# ------------------------------------------------------------------------------------ container credentials

EXPIRATION = "2030-01-01T00:00:00Z"
EXPIRY = datetime.datetime(2030, 1, 1, tzinfo=datetime.UTC).timestamp()


def _credentials_reply(n: int, expiration: str | None = EXPIRATION) -> Reply:
    payload = {"AccessKeyId": f"ASIA{n:016d}", "SecretAccessKey": f"secret-{n}", "Token": f"token-{n}",
               "RoleArn": "arn:aws:iam::123456789012:role/fn"}
    if expiration:
        payload["Expiration"] = expiration
    return Reply(200, json.dumps(payload).encode(), [("Content-Type", "application/json")])


@pytest.fixture
def clock(monkeypatch):
    """The module's clock, set by the test; sleeps recorded."""
    now = [EXPIRY - 3600]
    sleeps: list[float] = []
    fake = types.SimpleNamespace(time=lambda: now[0], gmtime=time.gmtime, strftime=time.strftime, sleep=sleeps.append)
    monkeypatch.setattr(aws_json, "time", fake)
    return now


def test_container_credentials_are_fetched_with_the_token_and_parsed(stand_in, clock):
    server = stand_in(_credentials_reply(1))
    provider = aws_json.ContainerCredentials(server.url + "/v1/credentials?x=1", token="Bearer-abc")
    credentials = provider.get()
    assert (credentials.access_key, credentials.secret_key, credentials.token) == (
        f"ASIA{1:016d}", "secret-1", "token-1")
    assert credentials.expiry == EXPIRY
    (received,) = server.requests
    assert (received.method, received.path) == ("GET", "/v1/credentials?x=1")
    assert received.headers["Authorization"] == "Bearer-abc"


def test_container_credentials_token_file_is_read_and_wins(stand_in, clock, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text("file-token\n")
    server = stand_in(_credentials_reply(1))
    aws_json.ContainerCredentials(server.url + "/creds", token="env-token", token_file=str(token_file)).get()
    assert server.requests[0].headers["Authorization"] == "file-token"
    no_token = stand_in(_credentials_reply(1))
    aws_json.ContainerCredentials(no_token.url + "/creds").get()
    assert "Authorization" not in no_token.requests[0].headers


def test_container_credentials_refuse_a_malformed_or_missing_token(stand_in, clock, tmp_path):
    server = stand_in(_credentials_reply(1))
    with pytest.raises(AwsTransportError):
        aws_json.ContainerCredentials(server.url + "/creds", token="a\r\nInjected: yes").get()
    with pytest.raises(AwsTransportError):
        aws_json.ContainerCredentials(server.url + "/creds", token_file=str(tmp_path / "absent")).get()
    assert server.requests == []


def test_container_credentials_are_cached_until_fifteen_minutes_before_expiry(stand_in, clock):
    server = stand_in(_credentials_reply(1), _credentials_reply(2, "2030-01-01T01:00:00Z"))
    provider = aws_json.ContainerCredentials(server.url + "/creds", token="t")
    assert provider.get().access_key.endswith("1")
    clock[0] = EXPIRY - 900  # botocore's advisory window: refreshed when fewer than 15 minutes are left
    assert provider.get().access_key.endswith("1")
    assert len(server.requests) == 1
    clock[0] = EXPIRY - 899
    refreshed = provider.get()
    assert refreshed.access_key.endswith("2") and refreshed.token == "token-2"
    assert refreshed.expiry == EXPIRY + 3600
    assert len(server.requests) == 2
    assert provider.get() is refreshed
    provider.reset()
    provider.get()
    assert len(server.requests) == 3


def test_container_credentials_without_expiration_are_kept(stand_in, clock):
    server = stand_in(_credentials_reply(1, expiration=None))
    provider = aws_json.ContainerCredentials(server.url + "/creds")
    assert provider.get().expiry is None
    clock[0] += 10 * 365 * 86400
    provider.get()
    assert len(server.requests) == 1


def test_container_credentials_still_valid_are_used_when_the_refresh_fails(stand_in, clock):
    server = stand_in(_credentials_reply(1), Reply(500, b"{}"))
    provider = aws_json.ContainerCredentials(server.url + "/creds")
    first = provider.get()
    clock[0] = EXPIRY - 720  # botocore's advisory window (15 to 10 minutes left): a failed refresh is not fatal
    assert provider.get() is first
    assert len(server.requests) == 4  # one fetch, then three tries of the refresh
    clock[0] = EXPIRY - 540  # the mandatory window (fewer than 10 minutes): the failure is the caller's
    with pytest.raises(AwsTransportError):
        provider.get()


def test_a_client_signs_with_container_credentials(stand_in, clock):
    endpoint = stand_in(_credentials_reply(7))
    service = stand_in(json_reply(200, {}))
    client = JsonServiceClient("dynamodb", region=REGION, endpoint_url=service.url,
                               credentials=aws_json.ContainerCredentials(endpoint.url + "/creds", token="t"))
    client.get_item(TableName="t", Key={})
    (received,) = service.requests
    assert received.headers["X-Amz-Security-Token"] == "token-7"
    assert f"Credential=ASIA{7:016d}/" in received.headers["Authorization"]


@pytest.mark.parametrize("full_uri, accepted", [
    ("http://127.0.0.1:9000/creds", True),
    ("http://localhost/creds", True),
    ("http://169.254.170.23/v1/credentials", True),
    ("http://[fd00:ec2::23]/v1/credentials", True),
    ("https://credentials.example.com/creds", True),
    ("http://credentials.example.com/creds", False),
    ("http://10.0.0.1/creds", False),
    ("ftp://127.0.0.1/creds", False),
])
def test_container_full_uri_policy(full_uri, accepted):
    provider = aws_json.ContainerCredentials.from_environment({"AWS_CONTAINER_CREDENTIALS_FULL_URI": full_uri,
                                                               "AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok"})
    if accepted:
        assert isinstance(provider, aws_json.ContainerCredentials) and provider.url == full_uri
    else:
        assert provider is None


def test_container_relative_uri_and_token_settings():
    provider = aws_json.ContainerCredentials.from_environment({
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2/credentials/abc",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1/ignored",
        "AWS_CONTAINER_AUTHORIZATION_TOKEN": "tok", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE": "/tmp/tok"})
    assert provider.url == "http://169.254.170.2/v2/credentials/abc"
    assert (provider._token, provider._token_file) == ("tok", "/tmp/tok")
    assert aws_json.ContainerCredentials.from_environment({}) is None


@pytest.mark.parametrize("environ, expected", [
    ({"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_PROFILE": "p",
      "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1/c"}, "environment"),
    ({"AWS_PROFILE": "p", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1/c"}, None),
    ({"AWS_DEFAULT_PROFILE": "p"}, None),
    ({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://127.0.0.1/c"}, "container"),
    ({"AWS_CONTAINER_CREDENTIALS_FULL_URI": "http://example.com/c"}, None),
    ({}, None),
])
def test_credential_provider_precedence(environ, expected):
    provider = aws_json.credential_provider_from_environment(environ)
    kinds = {aws_json.EnvironmentCredentials: "environment", aws_json.ContainerCredentials: "container",
             type(None): None}
    assert kinds[type(provider)] == expected
    if expected == "environment":
        assert provider.get() == aws_json.Credentials("A", "S", None)


def test_environment_credentials_read_the_given_mapping():
    environ = {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SESSION_TOKEN": ""}
    provider = aws_json.EnvironmentCredentials(environ)
    assert provider.get() == aws_json.Credentials("A", "S", None)
    environ["AWS_SESSION_TOKEN"] = "T"
    assert provider.get().token == "T"
    environ.clear()
    with pytest.raises(AwsTransportError):
        provider.get()


def test_environment_credentials_read_the_legacy_security_token_as_botocore_does():
    from botocore.credentials import EnvProvider

    environ = {"AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S", "AWS_SECURITY_TOKEN": "legacy"}
    assert EnvProvider(environ=environ).load().get_frozen_credentials().token == "legacy"
    assert aws_json.EnvironmentCredentials(environ).get().token == "legacy"


# ------------------------------------------------------------------------------------------------ endpoints

@pytest.mark.parametrize("service", sorted(aws_json.SERVICES))
@pytest.mark.parametrize("region", ["us-east-1", "eu-west-2", "cn-north-1", "us-gov-west-1"])
def test_default_endpoint_is_botocore_s(service, region):
    expected = _BOTO_SESSION.create_client(service, region_name=region, aws_access_key_id="x",
                                           aws_secret_access_key="y").meta.endpoint_url
    assert aws_json.default_endpoint(service, region) == expected


@pytest.mark.parametrize("region", ["us-iso-east-1", "us-isob-east-1", "eu-isoe-west-1", "us-isof-south-1",
                                    "eusc-de-east-1", "local", ""])
def test_no_default_endpoint_outside_the_three_partitions(region):
    for service in aws_json.SERVICES:
        assert aws_json.default_endpoint(service, region) is None


@pytest.mark.parametrize("environ, expected", [
    ({"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:2"}, "http://ddb:2"),
    ({"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_KMS": "http://kms:3"}, "http://generic:1"),
    ({"AWS_ENDPOINT_URL": "http://generic:1"}, "http://generic:1"),
    ({"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:2",
      "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"}, "https://dynamodb.eu-west-2.amazonaws.com"),
    ({"AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:2", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "false"}, "http://ddb:2"),
    ({"AWS_USE_FIPS_ENDPOINT": "true"}, None),
    ({"AWS_USE_DUALSTACK_ENDPOINT": "TRUE"}, None),
    ({"AWS_USE_FIPS_ENDPOINT": "false", "AWS_USE_DUALSTACK_ENDPOINT": "false"},
     "https://dynamodb.eu-west-2.amazonaws.com"),
    ({}, "https://dynamodb.eu-west-2.amazonaws.com"),
])
def test_dynamodb_endpoint_from_environment(environ, expected):
    assert aws_json.endpoint_from_environment("dynamodb", "eu-west-2", environ) == expected


@pytest.mark.parametrize("environ", [
    {"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_DYNAMODB": "http://ddb:2",
     "AWS_ENDPOINT_URL_KMS": "http://kms:3", "AWS_ENDPOINT_URL_SQS": "http://sqs:4",
     "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://sm:5"},
    {"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_SECRETS_MANAGER": "http://sm:5"},
    {"AWS_ENDPOINT_URL": "http://generic:1", "AWS_ENDPOINT_URL_SQS": "http://sqs:4",
     "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "true"},
    {},
])
def test_endpoint_from_environment_is_botocore_s(monkeypatch, environ):
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    for service in aws_json.SERVICES:
        expected = botocore.session.get_session().create_client(service, region_name="eu-west-2",
                                                                aws_access_key_id="x",
                                                                aws_secret_access_key="y").meta.endpoint_url
        assert aws_json.endpoint_from_environment(service, "eu-west-2", dict(environ)) == expected, service


def test_a_client_takes_only_http_urls():
    for url in ("ftp://example.com", "dynamodb.us-east-1.amazonaws.com", "http://"):
        with pytest.raises(ValueError):
            JsonServiceClient("dynamodb", region=REGION, endpoint_url=url, credentials=aws_json.EnvironmentCredentials())
    with pytest.raises(ValueError):
        JsonServiceClient("s3", region=REGION, endpoint_url="http://x", credentials=aws_json.EnvironmentCredentials())


# --------------------------------------------------------------------------------------------------- events

class Heard:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, model: Any, params: Any = None, **_kwargs: Any) -> None:
        self.calls.append((model.service_model.service_name, model.name, dict(params or {})))


def test_before_call_service_hook_hears_each_call_as_botocore_s_does(stand_in):
    server = stand_in(json_reply(200, {}))
    heard_ours, heard_boto = Heard(), Heard()
    mine, theirs = ours("dynamodb", server.url), boto("dynamodb", server.url)
    mine.meta.events.register("before-call.dynamodb", heard_ours)
    theirs.meta.events.register("before-call.dynamodb", heard_boto)
    for client in (mine, theirs):
        client.get_item(TableName="t", Key={"pk": {"S": "a"}})
        client.put_item(TableName="t", Item={"pk": {"S": "a"}})
    assert [c[:2] for c in heard_ours.calls] == [c[:2] for c in heard_boto.calls] == [
        ("dynamodb", "GetItem"), ("dynamodb", "PutItem")]
    assert heard_ours.calls[0][2] == {"TableName": "t", "Key": {"pk": {"S": "a"}}}


def test_before_call_hears_every_service_and_names_are_hierarchical(stand_in):
    server = stand_in(json_reply(200, {}))
    everything, puts_only, other_service, prefix_only = Heard(), Heard(), Heard(), Heard()
    clients = {service: ours(service, server.url) for service in aws_json.SERVICES}
    for client in clients.values():
        client.meta.events.register("before-call", everything)
    clients["dynamodb"].meta.events.register("before-call.dynamodb.PutItem", puts_only)
    clients["dynamodb"].meta.events.register("before-call.kms", other_service)
    clients["dynamodb"].meta.events.register("before-call.dynamo", prefix_only)
    clients["dynamodb"].get_item(TableName="t", Key={})
    clients["dynamodb"].put_item(TableName="t", Item={})
    clients["kms"].decrypt(CiphertextBlob=b"x")
    clients["sqs"].send_message(QueueUrl="q", MessageBody="b")
    clients["secretsmanager"].get_secret_value(SecretId="s")
    assert [c[:2] for c in everything.calls] == [("dynamodb", "GetItem"), ("dynamodb", "PutItem"), ("kms", "Decrypt"),
                                                 ("sqs", "SendMessage"), ("secretsmanager", "GetSecretValue")]
    assert [c[:2] for c in puts_only.calls] == [("dynamodb", "PutItem")]
    assert other_service.calls == [] and prefix_only.calls == []


def test_secrets_manager_hooks_by_botocore_s_service_id(stand_in):
    # botocore names the events of a service by its hyphenated service id and hears the endpoint prefix as an alias.
    server = stand_in(json_reply(200, {"Name": "n"}, crc=False))
    for client in (boto("secretsmanager", server.url), ours("secretsmanager", server.url)):
        heard = Heard()
        client.meta.events.register("before-call.secretsmanager", heard)
        client.get_secret_value(SecretId="s")
        assert [c[:2] for c in heard.calls] == [("secretsmanager", "GetSecretValue")]


def test_secrets_manager_hooks_under_the_hyphenated_name(stand_in):
    server = stand_in(json_reply(200, {"Name": "n"}, crc=False))
    for client in (boto("secretsmanager", server.url), ours("secretsmanager", server.url)):
        heard = Heard()
        client.meta.events.register("before-call.secrets-manager", heard)
        client.get_secret_value(SecretId="s")
        assert [c[:2] for c in heard.calls] == [("secretsmanager", "GetSecretValue")], type(client).__name__


def test_unique_id_registers_once_and_unregisters(stand_in):
    server = stand_in(json_reply(200, {}))
    client = ours("dynamodb", server.url)
    first, second = Heard(), Heard()
    client.meta.events.register("before-call", first, unique_id="counter")
    client.meta.events.register("before-call", second, unique_id="counter")
    client.meta.events.register("before-call", first, unique_id="counter")
    client.get_item(TableName="t", Key={})
    assert len(first.calls) == 1 and second.calls == []
    client.meta.events.unregister("before-call", unique_id="counter")
    client.get_item(TableName="t", Key={})
    assert len(first.calls) == 1
    client.meta.events.register("before-call", second)
    client.meta.events.unregister("before-call", second)
    client.get_item(TableName="t", Key={})
    assert second.calls == []


def test_a_hook_is_called_before_the_request_and_once_per_call_not_per_attempt(stand_in, no_backoff):
    server = stand_in(json_reply(500, {"__type": "InternalServerError"}), json_reply(200, {}))
    client = ours("dynamodb", server.url)
    seen_requests: list[int] = []
    client.meta.events.register("before-call.dynamodb", lambda **_: seen_requests.append(len(server.requests)))
    client.get_item(TableName="t", Key={})
    assert seen_requests == [0]
    assert len(server.requests) == 2


def test_errors_do_not_carry_request_or_answer_bodies(stand_in, no_backoff):
    server = stand_in(json_reply(400, {"__type": "ValidationException", "message": "bad",
                                       "Item": {"pan": {"S": "4111111111111111"}}}))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", server.url).put_item(TableName="t", Item={"pan": {"S": "4761739001010010"}})
    assert "4111111111111111" not in str(raised.value) and "4761739001010010" not in str(raised.value)
    assert str(raised.value) == "An error occurred (ValidationException) when calling the PutItem operation: bad"
    garbage = stand_in(Reply(200, b"not json {"))
    with pytest.raises(AwsTransportError) as transport:
        ours("dynamodb", garbage.url).get_item(TableName="t", Key={"pan": {"S": "4761739001010010"}})
    assert "not json" not in str(transport.value) and "4761739001010010" not in str(transport.value)
    assert len(garbage.requests) == 3
    gateway = stand_in(Reply(502, b"<html>Bad Gateway 4761739001010010</html>", [("Content-Type", "text/html")]))
    with pytest.raises(AwsClientError) as raised:
        ours("dynamodb", gateway.url).get_item(TableName="t", Key={})
    assert raised.value.response["Error"] == {"Code": "502", "Message": ""}
    assert "4761739001010010" not in str(raised.value) and len(gateway.requests) == 3
