"""Partner templates in the Registry, immutable and versioned; built-in templates for every partner.

Records: ``PARTNER#<partnerId>`` / ``TEMPLATE#<templateRef>#v<version:06d>`` with ``templateRef``, ``version``,
``name``, ``fields`` (as :meth:`Template.to_dict`) and ``createdAt``. A published version never changes:
posting a template with an existing ``templateRef`` creates the next version (conditional put, so concurrent
publishers get distinct versions). Nothing deletes a version, because tokens made under it must stay readable.

A bfid names the template *and its version* (:func:`bfid_template_field`): ``<templateRef>`` for version 1,
``<templateRef>.<version>`` after that (a templateRef is letters and digits, so the dot cannot be part of it).
Detokenization therefore uses exactly the field definitions the token was made with, even after the template
changed and long after the Tokens item expired.

Built-in templates (:data:`vaultcore.tokens.templates.BUILTIN_TEMPLATES`, e.g. ``GATEWAY``) are version 1 for
every partner and their references are reserved.

Caches per container: the latest version of a reference for ``RECORD_CACHE_SECONDS`` (a new version is picked
up by other containers within that bound); a given version for an hour (versions are immutable).

:class:`StoredTemplate` is written by hand for a measured cold start reason (:mod:`vaultcore.plain`: a dataclass
costs 0.4-2 ms to create on python3.13, and importing ``dataclasses`` ~10 ms; docs/design/benchmarks.md).
"""

from __future__ import annotations

from typing import Any

from vaultcore import clock
from vaultcore.cache import ContainerCache
from vaultcore.partners.service import get_partner
from vaultcore.plain import Frozen, init
from vaultcore.store import registry
from vaultcore.tokens.bfid import BfidError, new_bfid
from vaultcore.tokens.errors import TEMPLATE_INVALID, TEMPLATE_UNKNOWN, TokenNotFound, TokenServiceError
from vaultcore.tokens.templates import BUILTIN_TEMPLATES, Template, TemplateError, generate_template_ref

__all__ = ["StoredTemplate", "bfid_template_field", "split_bfid_template", "load_latest", "load_version",
           "create_template", "get_template", "list_templates", "reset_caches"]

_VERSION_CACHE_SECONDS = 3600.0
_MAX_VERSION = 999_999
_latest_cache: ContainerCache[StoredTemplate] = ContainerCache("record_cache_seconds", max_items=2048)
_version_cache: ContainerCache[StoredTemplate] = ContainerCache(_VERSION_CACHE_SECONDS, max_items=2048)


class StoredTemplate(Frozen):
    __slots__ = ("template", "version", "created_at", "builtin")
    template: Template
    version: int
    created_at: int
    builtin: bool

    def __init__(self, template: Template, version: int, created_at: int = 0, builtin: bool = False) -> None:
        init(self, template=template, version=version, created_at=created_at, builtin=builtin)

    @property
    def template_ref(self) -> str:
        return self.template.template_ref

    @property
    def bfid_field(self) -> str:
        return bfid_template_field(self.template_ref, self.version)

    def public_view(self) -> dict[str, Any]:
        return {**self.template.to_dict(), "version": self.version, "createdAt": self.created_at,
                "builtin": self.builtin}


def bfid_template_field(template_ref: str, version: int) -> str:
    """What a bfid carries as its template: the reference, plus ``.<version>`` from version 2 on."""
    return template_ref if version == 1 else f"{template_ref}.{version}"


def split_bfid_template(text: str) -> tuple[str, int] | None:
    """(templateRef, version) of a bfid's template field; None when it is not one we write."""
    ref, dot, version = text.partition(".")
    if not dot:
        return (ref, 1) if ref.isalnum() and ref.isascii() else None
    if not (ref.isalnum() and ref.isascii() and version.isascii() and version.isdigit()):
        return None
    number = int(version)
    if number < 2 or str(number) != version:  # one spelling per version
        return None
    return ref, number


def _caches() -> tuple[ContainerCache[StoredTemplate], ContainerCache[StoredTemplate]]:
    return _latest_cache, _version_cache


def reset_caches() -> None:
    _latest_cache.reset()
    _version_cache.reset()


def _pk(partner_id: str) -> str:
    return f"PARTNER#{partner_id}"


def _prefix(template_ref: str) -> str:
    return f"TEMPLATE#{template_ref}#v"


def _from_item(item: dict[str, Any]) -> StoredTemplate:
    data = {"templateRef": item["templateRef"], "fields": item["fields"]}
    if item.get("name") is not None:
        data["name"] = item["name"]
    if item.get("accessMode") is not None:
        data["accessMode"] = item["accessMode"]
    return StoredTemplate(Template.from_dict(data), int(item["version"]), int(item.get("createdAt", 0)))


def _builtin(template_ref: str) -> StoredTemplate | None:
    template = BUILTIN_TEMPLATES.get(template_ref)
    return None if template is None else StoredTemplate(template, 1, 0, builtin=True)


def _versions(partner_id: str, template_ref: str) -> list[dict[str, Any]]:
    items = registry.query_prefix(_pk(partner_id), _prefix(template_ref))
    return sorted(items, key=lambda i: int(i["version"]))


def _valid_ref(template_ref: Any) -> bool:
    return isinstance(template_ref, str) and 1 <= len(template_ref) <= 32 and template_ref.isascii() \
        and template_ref.isalnum()


def load_latest(partner_id: str, template_ref: str) -> StoredTemplate | None:
    """The newest version of ``template_ref`` for the partner (built-ins first); None when unknown."""
    builtin = _builtin(template_ref)
    if builtin is not None:
        return builtin
    if not _valid_ref(template_ref):
        return None
    latest, versions = _caches()
    cached = latest.get((partner_id, template_ref))
    if cached is not None:
        return cached
    items = _versions(partner_id, template_ref)
    if not items:
        return None
    stored = _from_item(items[-1])
    latest.put((partner_id, template_ref), stored)
    versions.put((partner_id, template_ref, stored.version), stored)
    return stored


def load_version(partner_id: str, template_ref: str, version: int) -> StoredTemplate | None:
    """A given version (immutable, so cached for an hour); None when unknown."""
    builtin = _builtin(template_ref)
    if builtin is not None:
        return builtin if version == 1 else None
    if not _valid_ref(template_ref) or not 1 <= version <= _MAX_VERSION:
        return None
    _, versions = _caches()
    cached = versions.get((partner_id, template_ref, version))
    if cached is not None:
        return cached
    item = registry.get(_pk(partner_id), f"{_prefix(template_ref)}{version:06d}")
    if item is None:
        return None
    stored = _from_item(item)
    versions.put((partner_id, template_ref, version), stored)
    return stored


# ------------------------------------------------------------------------------------------ management API


def _check_bfid_room(partner_id: str, template_ref: str, version: int) -> None:
    try:
        new_bfid(bytes(32), 1, bfid_template_field(template_ref, version), partner_id)
    except BfidError:
        raise TokenServiceError(
            f"templateRef {template_ref} is too long for this partner's bfids (at most 150 characters); "
            f"choose a shorter templateRef", code=TEMPLATE_INVALID) from None


def create_template(partner_id: str, body: dict[str, Any]) -> StoredTemplate:
    """Publish a template: a new reference gets version 1, an existing one its next version."""
    get_partner(partner_id)
    for member in ("templateRef", "name"):  # optional, but strings when sent (the document allows no null)
        if member in body and not isinstance(body[member], str):
            raise TokenServiceError(f"{member} must be a string.", code=TEMPLATE_INVALID)
    ref = body.get("templateRef")
    if ref is None:
        ref = generate_template_ref()
    if isinstance(ref, str) and ref in BUILTIN_TEMPLATES:
        raise TokenServiceError(f"templateRef {ref} is reserved for a built-in template.", code=TEMPLATE_INVALID)
    try:
        template = Template.from_dict({**body, "templateRef": ref})
    except TemplateError as exc:
        raise TokenServiceError(str(exc), code=TEMPLATE_INVALID) from None
    existing = _versions(partner_id, template.template_ref)
    version = int(existing[-1]["version"]) + 1 if existing else 1
    for _attempt in range(5):
        if version > _MAX_VERSION:
            break
        _check_bfid_room(partner_id, template.template_ref, version)
        created_at = int(clock.now())
        item = {"pk": _pk(partner_id), "sk": f"{_prefix(template.template_ref)}{version:06d}", "type": "template",
                "partnerId": partner_id, "templateRef": template.template_ref, "version": version,
                "name": template.name, "fields": [f.to_dict() for f in template.fields],
                "createdAt": created_at}
        if template.access_mode != "tokenize":
            item["accessMode"] = template.access_mode
        try:
            registry.put_new(item)
        except registry.ConditionFailed:
            version += 1  # a concurrent publisher took this version
            continue
        stored = StoredTemplate(template, version, created_at)
        latest, versions = _caches()
        latest.put((partner_id, template.template_ref), stored)
        versions.put((partner_id, template.template_ref, version), stored)
        return stored
    raise TokenServiceError("Too many concurrent versions of this template; retry.", code=TEMPLATE_INVALID)


def get_template(partner_id: str, template_ref: str, version: int | None = None) -> tuple[StoredTemplate, list[int]]:
    """A template (latest or given version) and the list of its versions; 404 (3001) when unknown."""
    get_partner(partner_id)
    builtin = _builtin(template_ref)
    if builtin is not None and version in (None, 1):
        return builtin, [1]
    items = _versions(partner_id, template_ref) if builtin is None and _valid_ref(template_ref) else []
    chosen = items[-1] if items and version is None else next((i for i in items if int(i["version"]) == version),
                                                                None)
    if chosen is None:
        raise TokenNotFound("Template not found.", code=TEMPLATE_UNKNOWN)
    return _from_item(chosen), [int(i["version"]) for i in items]


def list_templates(partner_id: str) -> list[dict[str, Any]]:
    """Built-in templates, then the latest version of each partner template with its version count."""
    get_partner(partner_id)
    out = [{**_builtin(ref).public_view(), "versions": 1} for ref in BUILTIN_TEMPLATES]  # type: ignore[union-attr]
    latest: dict[str, dict[str, Any]] = {}
    counts: dict[str, int] = {}
    for item in registry.query_prefix(_pk(partner_id), "TEMPLATE#", limit=10_000):
        ref = item["templateRef"]
        counts[ref] = counts.get(ref, 0) + 1
        if ref not in latest or int(item["version"]) > int(latest[ref]["version"]):
            latest[ref] = item
    for ref in sorted(latest):
        out.append({**_from_item(latest[ref]).public_view(), "versions": counts[ref]})
    return out
