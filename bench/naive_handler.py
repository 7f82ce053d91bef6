"""The naive handler bench_cold_start.py compares every function with: what a Lambda written the usual way with
Powertools and boto3 pays for init and its first request, making the same AWS calls as the function it stands for.

It is copied as ``app.py`` into its own function directory and run by cold_start_probe.py like a real function:

* Powertools Logger (``inject_lambda_context``), Tracer (``capture_lambda_handler``: on, as in Lambda, since the
  bench sets Lambda's variables; its segments go to the X-Ray daemon address, loopback UDP where nothing
  listens), Metrics (``log_metrics``, one metric per request);
* API Gateway events through ``APIGatewayRestResolver`` (a catch-all route) with the body parsed by the Powertools
  parser (pydantic) through ``ApiGatewayEnvelope``; SQS and DynamoDB stream events through ``BatchProcessor``
  (its SQS or DynamoDBStreams event type) + ``process_partial_response``; scheduled events straight to the work;
* the work wrapped in ``idempotent_function`` (DynamoDBPersistenceLayer: its own boto3 session and client, as
  Powertools makes them). ``POWERTOOLS_IDEMPOTENCY_DISABLED`` is set by the bench so the idempotency layer adds no
  AWS call: the calls stay exactly those of the function measured;
* boto3 clients created at module level (``boto3.client``), then the recorded calls of the function measured
  (``NAIVE_CALLS``: service, operation, parameters, as cold_start_probe.py recorded them on its first request)
  made with them. An error answer (a replayed conditional write) is a call made all the same.

It does none of the function's own work (no HMAC check, no cryptography, no HTTP egress): the comparison is
between the function's whole first request and only the framework + SDK part of the naive one.
"""

import base64
import json
import os
from collections.abc import Mapping
from typing import Any

import boto3
from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.parser import BaseModel, envelopes, parse
from botocore import xform_name
from botocore.exceptions import ClientError
from pydantic import ConfigDict

logger = Logger(service="naive")
tracer = Tracer(service="naive")
metrics = Metrics(namespace="NaiveBench", service="naive")
app = APIGatewayRestResolver()
processor = BatchProcessor(event_type=EventType.SQS)
stream_processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
persistence = DynamoDBPersistenceLayer(table_name=os.environ.get("IDEMPOTENCY_TABLE", "IdempotencyTable"))
idempotency = IdempotencyConfig(event_key_jmespath="reference", raise_on_no_idempotency_key=False)

with open(os.environ["NAIVE_CALLS"]) as fh:
    CALLS: list[dict[str, Any]] = json.load(fh)
clients = {service: boto3.client(service) for service in sorted({c["service"] for c in CALLS})}


class Body(BaseModel):
    model_config = ConfigDict(extra="allow")
    reference: str | None = None


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"__b64__"}:
            return base64.b64decode(value["__b64__"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@idempotent_function(data_keyword_argument="body", persistence_store=persistence, config=idempotency)
def work(body: dict) -> dict:
    for call in CALLS:
        method = getattr(clients[call["service"]], xform_name(call["operation"]))
        try:
            method(**_decode(call["params"]))
        except ClientError:
            pass
    metrics.add_metric(name="Requests", unit=MetricUnit.Count, value=1)
    return {"success": True, "reference": body.get("reference")}


@app.route(".+", method=["GET", "POST", "PUT", "PATCH", "DELETE"])
def any_route() -> dict:
    body: dict = {}
    if app.current_event.body:
        parsed = parse(event=app.current_event.raw_event, model=Body, envelope=envelopes.ApiGatewayEnvelope)
        body = parsed.model_dump() if isinstance(parsed, Body) else {}  # the envelope gives Body or None
    return work(body=body)


def record_handler(record: Any) -> None:
    work(body=json.loads(record.body))


def stream_record_handler(record: Any) -> None:
    work(body={"reference": record.event_id})


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_REST)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics
def lambda_handler(event: dict, context: Any) -> Mapping[str, Any]:
    if "Records" in event and event["Records"] and event["Records"][0].get("eventSource") == "aws:dynamodb":
        return process_partial_response(event=event, record_handler=stream_record_handler,
                                        processor=stream_processor, context=context)
    if "Records" in event:
        return process_partial_response(event=event, record_handler=record_handler, processor=processor,
                                        context=context)
    if "httpMethod" not in event:  # a scheduled event
        return work(body={})
    return app.resolve(event, context)
