"""local/moto_atomic.py serialises moto's DynamoDB request handlers as well as its backend: moto's UpdateItem
handler deep-copies the stored item outside the backend call, and concurrent updates adding attributes to that item
made the copy fail ("dictionary changed size during iteration", answered as a 500 DynamoDB never gives). Many
threads updating one item, each adding attributes, all succeed."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import boto3
import pytest

THREADS = 8
UPDATES = 40


@pytest.fixture
def ddb(bare_moto):
    client = boto3.client("dynamodb", region_name="us-east-1")
    client.create_table(TableName="T", BillingMode="PAY_PER_REQUEST",
                        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
    client.put_item(TableName="T", Item={"k": {"S": "one"}})
    return client


def test_concurrent_updates_of_one_item_all_answer(ddb):
    def updates(thread: int) -> int:
        for n in range(UPDATES):
            ddb.update_item(TableName="T", Key={"k": {"S": "one"}}, UpdateExpression="SET #a = :v",
                            ExpressionAttributeNames={"#a": f"a{thread}_{n}"},
                            ExpressionAttributeValues={":v": {"S": "x" * 50}},
                            ReturnValuesOnConditionCheckFailure="ALL_OLD")
        return UPDATES

    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        done = sum(pool.map(updates, range(THREADS)))
    assert done == THREADS * UPDATES
    item = ddb.get_item(TableName="T", Key={"k": {"S": "one"}})["Item"]
    assert len(item) == 1 + THREADS * UPDATES
