"""The original's v4 list convention: a bare JSON array, paged by ``page`` and ``limit``, described by headers.

The original's lists (payment iFrames, API keys, webhooks, dynamic descriptors) answer the page's items as a bare
array and describe the paging in ``X-Total``, ``X-Per-Page``, ``X-Current_page`` (sic), ``X-Last-Page``,
``X-Total-In-This-Page``, ``X-From``, ``X-To``, ``X-Path``, ``X-First-Page-Url``, ``X-Last-Page-Url``,
``X-Prev-Page-Url``, ``X-Next-Page-Url`` and ``X-Links``; its generated clients read them, so every v4 list here
answers the same way (:func:`paged`).
"""

from __future__ import annotations

from typing import Any

from vaultcore.api.http import Request, Response, json_response
from vaultcore.v4.errors import MemberInvalid

__all__ = ["PAGE_LIMIT", "paged", "int_query"]

PAGE_LIMIT = 100  # the original's default `limit` of its lists, and its largest


def int_query(request: Request, name: str, default: int, high: int) -> int:
    """A whole-number query parameter, 1 to ``high`` (absent or empty: ``default``); else 422 naming it."""
    raw = request.query.get(name)
    if raw is None or raw == "":
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= high:
        raise MemberInvalid(name, f"a whole number, 1 to {high}")
    return int(raw)


def _page_url(request: Request, page: int, limit: int) -> str:
    """The absolute URL of one page (the original's X-*-Page-Url headers): the caller's scheme and host (API
    Gateway sets X-Forwarded-Proto; the local runner, on a loopback host, is plain HTTP)."""
    host = request.header("host") or "localhost"
    loopback = host.split(":", 1)[0] in ("127.0.0.1", "localhost", "[::1]")
    scheme = request.header("x-forwarded-proto") or ("http" if loopback else "https")
    path = request.raw_path or request.path
    return f"{scheme}://{host}{path}" + (f"?page={page}&limit={limit}" if page else "")


def paged(request: Request, items: list[Any], *, status: int = 200) -> Response:
    """``items`` (all of them, in the list's order) as the original's list: the requested page as a bare array
    (``page`` default 1, ``limit`` default and at most :data:`PAGE_LIMIT`) and its ``X-*`` paging headers."""
    page = int_query(request, "page", 1, 1_000_000)
    limit = int_query(request, "limit", PAGE_LIMIT, PAGE_LIMIT)
    total = len(items)
    last = max(1, -(-total // limit))
    shown = items[(page - 1) * limit:page * limit]
    first_index = (page - 1) * limit + 1 if shown else 0
    url = lambda n: _page_url(request, n, limit)  # noqa: E731 - one line per header below
    links = [f"url={url(page - 1) if page > 1 else ''}|label=&laquo; Previous|active="]
    links += [f"url={url(n)}|label={n}|active={1 if n == page else ''}" for n in range(1, last + 1)]
    links.append(f"url={url(page + 1) if page < last else ''}|label=Next &raquo;|active=")
    headers = {"X-Total": str(total), "X-Per-Page": str(limit), "X-Current_page": str(page),
               "X-Last-Page": str(last), "X-Total-In-This-Page": str(len(shown)),
               "X-From": str(first_index), "X-To": str(first_index + len(shown) - 1 if shown else 0),
               "X-Path": _page_url(request, 0, limit), "X-First-Page-Url": url(1), "X-Last-Page-Url": url(last),
               "X-Links": " ".join(links)}
    if page > 1:
        headers["X-Prev-Page-Url"] = url(min(page - 1, last))
    if page < last:
        headers["X-Next-Page-Url"] = url(page + 1)
    return json_response(status, shown, headers)
