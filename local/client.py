"""Sign and send a request with the HMAC scheme: the integrator's helper.

    python -m local.client --url http://127.0.0.1:3000/api/partner/validate \\
        --partner-id demo --hmac-key <hmacKey as issued> --data '{"reference": "r-1"}'

``--hmac-key`` is the key exactly as the management API issued it; the HMAC is keyed with its bytes as
they are (not base64-decoded: docs/integrators/authentication.md, "The HMAC key"). ``--print-header`` prints the
Authorization header instead of sending (each header is good for one request only: the nonce is single-use).
"""

from __future__ import annotations

import argparse
import json
import sys
import urllib.error
import urllib.request
from urllib.parse import urlsplit

from vaultcore.auth.hmac_scheme import build_hmac_header


def sign(partner_id: str, hmac_key: str, url: str, body: bytes) -> str:
    return build_hmac_header(partner_id, hmac_key.encode("utf-8"), urlsplit(url).path, body)


def send(url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, data=body, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:  # noqa: S310 - the caller chooses the URL
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, dict(err.headers), err.read()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--partner-id", required=True)
    p.add_argument("--hmac-key", required=True, help="the hmacKey exactly as issued")
    p.add_argument("--data", default="", help="request body (sent byte for byte); @file reads a file")
    p.add_argument("--header", action="append", default=[], help="extra header 'Name: value'")
    p.add_argument("--content-type", default="application/json")
    p.add_argument("--print-header", action="store_true")
    args = p.parse_args(argv)
    if args.data.startswith("@"):
        with open(args.data[1:], "rb") as fh:
            body = fh.read()
    else:
        body = args.data.encode("utf-8")
    auth = sign(args.partner_id, args.hmac_key, args.url, body)
    if args.print_header:
        print(auth)
        return 0
    headers = {"Authorization": auth, "Content-Type": args.content_type, "Accept": "application/json"}
    for h in args.header:
        name, _, value = h.partition(":")
        headers[name.strip()] = value.strip()
    status, resp_headers, data = send(args.url, body, headers)
    print(f"HTTP {status}", file=sys.stderr)
    for k in ("vault-id",):
        if k in {x.lower() for x in resp_headers}:
            print(f"{k}: {[v for x, v in resp_headers.items() if x.lower() == k][0]}", file=sys.stderr)
    try:
        print(json.dumps(json.loads(data), indent=2))
    except ValueError:
        sys.stdout.write(data.decode("utf-8", "replace"))
    return 0 if status < 400 else 1


if __name__ == "__main__":
    sys.exit(main())
