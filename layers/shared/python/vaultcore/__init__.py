"""vaultcore: the shared layer of the card-data security platform.

Pure modules (``crypto``, ``cards``, ``auth.hmac_scheme``, ``net``) import no AWS SDK; domain services
(``partners``, ``devices``, ``tokens``, ``proxy``, ``gateway``, ``postback``) use adapters from ``store``.
Nothing here touches AWS or reads the environment at import time (cold start, and so tests can set up moto first).
"""

__all__: list[str] = []
