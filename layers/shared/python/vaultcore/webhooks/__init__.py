"""Merchants' webhook endpoints (the original's PayConex v4 ``webhooks``), delivered by the postback machinery.

* :mod:`.endpoints`: an account's endpoints (``url``, ``event``, ``id``) in the Registry, each with its own
  signing secret (KMS-wrapped, shown once, rotatable with overlap), the URL checked by the SSRF guard;
* :mod:`.outbox`: the one seam into the postback machinery: "deliver event E with payload P to endpoint X of
  account A" as Deliveries ``MSG#`` items written with the operation that raises the event (the outbox);
* :mod:`.delivery`: what the postback sender needs for a webhook message: the endpoint's URL and live secrets,
  the body and its headers;
* :mod:`.routes`: the v4 HTTP operations (wiring: ``functions/webhooks/app.py``).
"""
