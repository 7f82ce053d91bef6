"""Management API: proxy configurations, the masked proxy logs and the dry run (DESIGN.md §5)."""

from __future__ import annotations

from vaultcore.admin.router import created, json_body, ok, route
from vaultcore.api.http import Request, Response
from vaultcore.errors import ValidationError
from vaultcore.proxy import logs as proxy_logs
from vaultcore.proxy import manage
from vaultcore.proxy.service import dry_run

__all__: list[str] = []


@route("POST", "/admin/v1/partners/{partner_id}/proxy-configurations")
def create_configuration(request: Request, partner_id: str) -> Response:
    return created(manage.create_config(partner_id, json_body(request)))


@route("GET", "/admin/v1/partners/{partner_id}/proxy-configurations")
def list_configurations(request: Request, partner_id: str) -> Response:
    return ok(manage.list_configs(partner_id))


@route("GET", "/admin/v1/partners/{partner_id}/proxy-configurations/{reference}")
def get_configuration(request: Request, partner_id: str, reference: str) -> Response:
    return ok(manage.get_config(partner_id, reference))


@route("PUT", "/admin/v1/partners/{partner_id}/proxy-configurations/{reference}")
def replace_configuration(request: Request, partner_id: str, reference: str) -> Response:
    return ok(manage.replace_config(partner_id, reference, json_body(request)))


@route("DELETE", "/admin/v1/partners/{partner_id}/proxy-configurations/{reference}")
def delete_configuration(request: Request, partner_id: str, reference: str) -> Response:
    return ok(manage.delete_config(partner_id, reference))


@route("POST", "/admin/v1/partners/{partner_id}/proxy-configurations/{reference}/dry-run")
def dry_run_configuration(request: Request, partner_id: str, reference: str) -> Response:
    return ok(dry_run(partner_id, reference, json_body(request)))


@route("GET", "/admin/v1/partners/{partner_id}/proxy-logs")
def list_proxy_logs(request: Request, partner_id: str) -> Response:
    limit_text = request.query.get("limit", "25")
    if not limit_text.isdigit():
        raise ValidationError("limit must be an integer from 1 to 100.", code=400)
    return ok(proxy_logs.list_logs(partner_id, config_ref=request.query.get("configReferenceID") or None,
                                   limit=int(limit_text), next_token=request.query.get("nextToken") or None))
