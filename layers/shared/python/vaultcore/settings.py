"""Environment settings, read once per container on first use (never at import time).

:class:`Settings` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass costs
0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md)."""

from __future__ import annotations

import os
from functools import lru_cache

from vaultcore.plain import Frozen, init

__all__ = ["Settings", "settings", "reset_settings"]


class Settings(Frozen):
    __slots__ = ("environment", "registry_table", "nonces_table", "tokens_table", "proxy_configs_table",
                 "transactions_table", "proxy_logs_table", "deliveries_table", "idempotency_table", "signals_table",
                 "kms_key_id", "postback_queue_url", "postback_dlq_url", "allow_local_egress", "record_cache_seconds",
                 "key_cache_seconds", "hmac_accept_decoded_key", "audit_table", "auth_failure_limit",
                 "auth_failure_window_seconds", "audit_shards", "proxy_log_shards", "nonce_shards")
    environment: str
    registry_table: str
    nonces_table: str
    tokens_table: str
    proxy_configs_table: str
    transactions_table: str
    proxy_logs_table: str
    deliveries_table: str
    idempotency_table: str
    signals_table: str
    kms_key_id: str
    postback_queue_url: str
    postback_dlq_url: str
    allow_local_egress: bool
    record_cache_seconds: float
    key_cache_seconds: float
    hmac_accept_decoded_key: bool
    audit_table: str  # detokenization audit records (issue 21, vaultcore.store.audit)
    # issue 27: per-credential failure counts (vaultcore.store.auth_failures): this many failures in one window
    # refuse every attempt on the credential until the window ends
    auth_failure_limit: int
    auth_failure_window_seconds: int
    # Partition spread (vaultcore.store.spread; template parameters AuditShards, ProxyLogShards, NonceShards): the
    # number of partition key values one partner's items are written under. Raise only, never lower.
    audit_shards: int
    proxy_log_shards: int
    nonce_shards: int

    def __init__(self, environment: str, registry_table: str, nonces_table: str, tokens_table: str,
                 proxy_configs_table: str, transactions_table: str, proxy_logs_table: str, deliveries_table: str,
                 idempotency_table: str, signals_table: str, kms_key_id: str, postback_queue_url: str,
                 postback_dlq_url: str, allow_local_egress: bool, record_cache_seconds: float, key_cache_seconds: float,
                 hmac_accept_decoded_key: bool = True, audit_table: str = "Audit", auth_failure_limit: int = 20,
                 auth_failure_window_seconds: int = 300, audit_shards: int = 32, proxy_log_shards: int = 32,
                 nonce_shards: int = 64) -> None:
        init(self, environment=environment, registry_table=registry_table, nonces_table=nonces_table,
             tokens_table=tokens_table, proxy_configs_table=proxy_configs_table, transactions_table=transactions_table,
             proxy_logs_table=proxy_logs_table, deliveries_table=deliveries_table, idempotency_table=idempotency_table,
             signals_table=signals_table, kms_key_id=kms_key_id, postback_queue_url=postback_queue_url,
             postback_dlq_url=postback_dlq_url, allow_local_egress=allow_local_egress,
             record_cache_seconds=record_cache_seconds, key_cache_seconds=key_cache_seconds,
             hmac_accept_decoded_key=hmac_accept_decoded_key, audit_table=audit_table,
             auth_failure_limit=auth_failure_limit, auth_failure_window_seconds=auth_failure_window_seconds,
             audit_shards=audit_shards, proxy_log_shards=proxy_log_shards, nonce_shards=nonce_shards)

    @property
    def is_cert(self) -> bool:
        return self.environment == "cert"


@lru_cache(maxsize=1)
def settings() -> Settings:
    env = os.environ
    environment = env.get("ENVIRONMENT", "cert").strip().lower()
    if environment not in ("cert", "prod"):
        raise RuntimeError("ENVIRONMENT must be cert or prod")
    return Settings(
        environment=environment,
        registry_table=env.get("REGISTRY_TABLE", "Registry"),
        nonces_table=env.get("NONCES_TABLE", "Nonces"),
        tokens_table=env.get("TOKENS_TABLE", "Tokens"),
        proxy_configs_table=env.get("PROXY_CONFIGS_TABLE", "ProxyConfigs"),
        transactions_table=env.get("TRANSACTIONS_TABLE", "Transactions"),
        proxy_logs_table=env.get("PROXY_LOGS_TABLE", "ProxyLogs"),
        deliveries_table=env.get("DELIVERIES_TABLE", "Deliveries"),
        idempotency_table=env.get("IDEMPOTENCY_TABLE", "Idempotency"),
        signals_table=env.get("SIGNALS_TABLE", "Signals"),
        kms_key_id=env.get("KMS_KEY_ID", "alias/vault-platform"),
        postback_queue_url=env.get("POSTBACK_QUEUE_URL", ""),
        postback_dlq_url=env.get("POSTBACK_DLQ_URL", ""),
        # Loopback/http egress is a local-runner-only switch: a deployed stack never sets it (DESIGN.md §6).
        allow_local_egress=env.get("VAULT_ALLOW_LOCAL_EGRESS", "") == "1",
        record_cache_seconds=float(env.get("RECORD_CACHE_SECONDS", "60")),
        key_cache_seconds=float(env.get("KEY_CACHE_SECONDS", "300")),
        # Accept-both migration of the HMAC key (docs/integrators/authentication.md "The HMAC key"): "0" refuses the
        # legacy decoded form.
        hmac_accept_decoded_key=env.get("HMAC_ACCEPT_DECODED_KEY", "1") != "0",
        audit_table=env.get("AUDIT_TABLE", "Audit"),
        auth_failure_limit=int(env.get("AUTH_FAILURE_LIMIT", "20")),
        auth_failure_window_seconds=int(env.get("AUTH_FAILURE_WINDOW_SECONDS", "300")),
        audit_shards=max(1, int(env.get("AUDIT_SHARDS", "32"))),
        proxy_log_shards=max(1, int(env.get("PROXY_LOG_SHARDS", "32"))),
        nonce_shards=max(1, int(env.get("NONCE_SHARDS", "64"))),
    )


def reset_settings() -> None:
    """Forget cached settings (tests that change the environment call this)."""
    settings.cache_clear()
