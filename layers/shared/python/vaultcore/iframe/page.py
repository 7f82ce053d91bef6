"""The iframe page, ``checkout.js`` and ``frame.js``: served by the gateway API itself, no third-party resource.

``GET /iframe/v1/frame?token=<bearer>&origin=<the parent page's origin>[&style=<JSON>]`` is the page
``checkout.js`` puts in its iframe. It answers with

* ``Content-Security-Policy``: ``default-src 'self'``; scripts and styles only by this response's nonce (a new
  128-bit one per response); ``connect-src 'self'`` (plus the collector's origin with antiFraud);
  ``frame-ancestors`` = the configuration's ``allowedParentDomains`` (never ``*``; ``'none'`` when the token
  names no configuration); ``form-action 'none'``, ``base-uri 'none'``, ``object-src 'none'``;
* ``X-Content-Type-Options: nosniff``, ``Referrer-Policy: no-referrer``, ``Cache-Control: no-store``.

Its fields (by ``name``: ``cardNumber``, ``cardExpiration``, ``cardCvv``, ``address1`` ... ``zip``,
``bankAccountNumber``, ``bankRoutingNumber``, ``accountHolderName``, a ``paymentMethod`` radio group when both
methods are allowed) are rendered here, each with a label and a message element a screen reader announces. A
bad or expired token, a deleted configuration, or an ``origin`` that is not allowed renders no fields: the page
only tells its parent (``onError``) — when the origin is allowed, since ``postMessage`` goes to the verified
parent origin only, never ``*``.

``style``: a JSON object of the allow-list :data:`STYLE_OPTIONS`, each value matched by its pattern; anything
else is dropped. The values become CSS custom properties in the nonce'd stylesheet, so no markup or rule can
be injected.
"""

from __future__ import annotations

import html
import json
import os
import re
import secrets
import uuid
from functools import lru_cache
from pathlib import Path
from typing import Any

from vaultcore import clock
from vaultcore.iframe import configs, domains, instances

__all__ = ["STYLE_OPTIONS", "render_frame", "static_file", "clean_style", "content_security_policy"]

_COLOR = r"#[0-9a-fA-F]{3,8}|[a-zA-Z]{3,20}|rgba?\([0-9., %]{5,40}\)"
_LENGTH = r"[0-9]{1,3}(\.[0-9]{1,2})?(px|rem|em|%)"
#: mount({style}) options -> the pattern a value must match.
STYLE_OPTIONS: dict[str, re.Pattern[str]] = {
    "color": re.compile(_COLOR), "backgroundColor": re.compile(_COLOR), "labelColor": re.compile(_COLOR),
    "borderColor": re.compile(_COLOR), "focusColor": re.compile(_COLOR), "errorColor": re.compile(_COLOR),
    "fontFamily": re.compile(r"[A-Za-z0-9 ,\-]{1,80}"), "fontSize": re.compile(_LENGTH),
    "borderRadius": re.compile(_LENGTH), "padding": re.compile(_LENGTH),
}
_DEFAULT_STYLE = {"color": "#1a1a1a", "backgroundColor": "#ffffff", "labelColor": "#333333",
                  "borderColor": "#8a8a8a", "focusColor": "#0b57d0", "errorColor": "#b3261e",
                  "fontFamily": "system-ui, sans-serif", "fontSize": "16px", "borderRadius": "4px", "padding": "8px"}

_TEXT = {
    "en": {"cardNumber": "Card number", "cardExpiration": "Expiration (MM/YY)", "cardCvv": "Security code (CVV)",
           "address1": "Address", "address2": "Address line 2", "city": "City", "state": "State",
           "zip": "ZIP / postal code", "bankAccountNumber": "Account number",
           "bankRoutingNumber": "Routing number", "accountHolderName": "Account holder name",
           "paymentMethod": "Payment method", "CARD": "Card", "ACH": "Bank account (ACH)",
           "optional": "(optional)", "form": "Payment details", "email": "Email", "phone": "Phone (+ and digits)",
           "saveCARD": "Save this card for future payments", "saveACH": "Save this bank account for future payments",
           "savedCARD": "This card will be saved for future payments.",
           "savedACH": "This bank account will be saved for future payments.", "pay": "Pay"},
    "es": {"cardNumber": "Número de tarjeta", "cardExpiration": "Vencimiento (MM/AA)",
           "cardCvv": "Código de seguridad (CVV)", "address1": "Dirección", "address2": "Dirección (línea 2)",
           "city": "Ciudad", "state": "Estado", "zip": "Código postal", "bankAccountNumber": "Número de cuenta",
           "bankRoutingNumber": "Número de ruta", "accountHolderName": "Titular de la cuenta",
           "paymentMethod": "Método de pago", "CARD": "Tarjeta", "ACH": "Cuenta bancaria (ACH)",
           "optional": "(opcional)", "form": "Datos de pago", "email": "Correo electrónico",
           "phone": "Teléfono (+ y dígitos)", "saveCARD": "Guardar esta tarjeta para pagos futuros",
           "saveACH": "Guardar esta cuenta bancaria para pagos futuros",
           "savedCARD": "Esta tarjeta se guardará para pagos futuros.",
           "savedACH": "Esta cuenta bancaria se guardará para pagos futuros.", "pay": "Pagar"},
}
_AUTOCOMPLETE = {"cardNumber": "cc-number", "cardExpiration": "cc-exp", "cardCvv": "cc-csc",
                 "address1": "address-line1", "address2": "address-line2", "city": "address-level2",
                 "state": "address-level1", "zip": "postal-code", "accountHolderName": "name", "email": "email",
                 "phone": "tel"}
_NUMERIC = ("cardNumber", "cardExpiration", "cardCvv", "bankAccountNumber", "bankRoutingNumber")
_MAXLENGTH = {"cardNumber": 23, "cardExpiration": 5, "cardCvv": 4, "bankAccountNumber": 17, "bankRoutingNumber": 9,
              "accountHolderName": 100, "address1": 100, "address2": 100, "city": 64, "state": 64, "zip": 10,
              "email": 254, "phone": 17}
_STATIC = Path(__file__).with_name("static")


@lru_cache(maxsize=4)
def static_file(name: str) -> str:
    """``checkout.js`` or ``frame.js`` (package data beside this module)."""
    if name not in ("checkout.js", "frame.js"):
        raise FileNotFoundError(name)
    return (_STATIC / name).read_text(encoding="utf-8")


def clean_style(raw: str | None) -> dict[str, str]:
    """The allow-listed style options of the ``style`` query parameter (anything else is dropped)."""
    if not raw or len(raw) > 2000:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items()
            if k in STYLE_OPTIONS and isinstance(v, str) and STYLE_OPTIONS[k].fullmatch(v)}


@lru_cache(maxsize=1)
def _collector_base() -> str:
    """``{collector_url}`` of the deployed stack (IFRAME_COLLECTOR_URL); empty: the same origin (the runner)."""
    return os.environ.get("IFRAME_COLLECTOR_URL", "").rstrip("/")


def _origin_of(url: str) -> str:
    m = re.match(r"(https?://[^/]+)", url)
    return m.group(1) if m else ""


def content_security_policy(nonce: str, ancestors: list[str] | None, collector: str = "") -> str:
    connect = "'self'" + (f" {_origin_of(collector)}" if collector else "")
    frame_ancestors = " ".join(ancestors) if ancestors else "'none'"
    return (f"default-src 'self'; script-src 'nonce-{nonce}'; style-src 'nonce-{nonce}'; img-src 'self' data:; "
            f"connect-src {connect}; frame-ancestors {frame_ancestors}; form-action 'none'; base-uri 'none'; "
            "object-src 'none'")


def _headers(csp: str) -> dict[str, str]:
    return {"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": csp,
            "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer", "Cache-Control": "no-store",
            "Permissions-Policy": "camera=(), microphone=(), geolocation=(), payment=()"}


def _field(name: str, text: dict[str, str], mode: str = "required", prefill: dict[str, str] | None = None) -> str:
    label = html.escape(text[name] + (" " + text["optional"] if mode == "optional" else ""))
    attrs = [f'id="f-{name}"', f'name="{name}"', 'type="text"', f'aria-describedby="m-{name}"',
             'aria-invalid="false"', f'maxlength="{_MAXLENGTH[name]}"', 'spellcheck="false"']
    if name in _AUTOCOMPLETE:
        attrs.append(f'autocomplete="{_AUTOCOMPLETE[name]}"')
    if name in _NUMERIC:
        attrs.append('inputmode="numeric"')
    if mode == "required":
        attrs.append('aria-required="true"')
    if prefill and prefill.get(name):  # the instance's customer (never card data): the shopper may change it
        attrs.append(f'value="{html.escape(prefill[name], quote=True)}"')
    return (f'<div class="f" data-field="{name}"><label for="f-{name}">{label}</label>'
            f'<input {" ".join(attrs)}><p class="m" id="m-{name}" role="status" aria-live="polite"></p></div>')


def _save(method: str, mode: str, text: dict[str, str]) -> str:
    """savePaymentOption: optional is a checkbox (unchecked), required a notice (the data is stored), omit
    nothing."""
    if mode == "optional":
        return (f'<div class="f s"><label class="r"><input type="checkbox" id="f-save{method}" '
                f'name="savePayment"> {html.escape(text["save" + method])}</label></div>')
    if mode == "required":
        return f'<p class="f s" id="f-save{method}" data-required="true">{html.escape(text["saved" + method])}</p>'
    return ""


def prefill_of(customer: dict[str, Any] | None) -> dict[str, str]:
    """The fields an instance's ``customer`` fills in: email, phone, the billing address, the ACH holder's name."""
    if not customer:
        return {}
    address = customer.get("billingAddress") or {}
    out = {k: str(address[k]) for k in configs.ADDRESS_FIELDS if address.get(k)}
    out.update({k: str(customer[k]) for k in ("email", "phone") if customer.get(k)})
    if customer.get("name"):
        out["accountHolderName"] = str(customer["name"])
    return out


def _form(config: dict[str, Any], text: dict[str, str], standalone: bool = False,
          prefill: dict[str, str] | None = None) -> str:
    methods = config["allowedPaymentMethods"]
    parts = [f'<form id="vault-form" novalidate aria-label="{html.escape(text["form"])}">']
    if len(methods) > 1:
        radios = "".join(f'<label class="r"><input type="radio" name="paymentMethod" value="{m}"'
                         f'{" checked" if i == 0 else ""}> {html.escape(text[m])}</label>'
                         for i, m in enumerate(methods))
        parts.append(f'<fieldset id="methods"><legend>{html.escape(text["paymentMethod"])}</legend>{radios}'
                     '</fieldset>')
    settings_ = config["cardSettings"]
    if "CARD" in methods:
        fields = [_field("cardNumber", text), _field("cardExpiration", text)]
        if settings_["cvv"] != "omit":
            fields.append(_field("cardCvv", text, settings_["cvv"]))
        for name, mode in settings_["billingAddress"].items():
            if mode != "omit":
                fields.append(_field(name, text, mode, prefill))
        if settings_["contactInfo"] != "omit":  # the original's contact information: email and phone
            fields += [_field("email", text, settings_["contactInfo"], prefill),
                       _field("phone", text, "optional", prefill)]
        fields.append(_save("CARD", settings_["savePaymentOption"], text))
        hidden = " hidden" if methods[0] != "CARD" else ""
        parts.append(f'<div class="group" data-method="CARD"{hidden}><p class="brand" id="brand" '
                     'aria-live="polite"></p>' + "".join(fields) + "</div>")
    if "ACH" in methods:
        fields = [_field("accountHolderName", text, "required", prefill), _field("bankRoutingNumber", text),
                  _field("bankAccountNumber", text),
                  _save("ACH", config["achSettings"]["savePaymentOption"], text)]
        hidden = " hidden" if methods[0] != "ACH" else ""
        parts.append(f'<div class="group" data-method="ACH"{hidden}>' + "".join(fields) + "</div>")
    if standalone:  # opened top-level (no parent page to call submit()): its own button and result line
        parts.append(f'<button type="submit" id="pay">{html.escape(text["pay"])}</button>'
                     '<p id="done" role="status" aria-live="polite"></p>')
    parts.append("</form>")
    return "".join(parts)


_CSS = """:root{%s}
*{box-sizing:border-box}body{margin:0;padding:2px;background:var(--vc-backgroundColor);color:var(--vc-color);
font-family:var(--vc-fontFamily);font-size:var(--vc-fontSize)}
fieldset{border:0;margin:0 0 8px;padding:0}legend{color:var(--vc-labelColor);margin-bottom:4px}
.r{margin-right:16px}.f{margin:0 0 8px}label{display:block;color:var(--vc-labelColor);margin-bottom:2px}
input[type=text]{width:100%%;font:inherit;color:inherit;background:inherit;padding:var(--vc-padding);
border:1px solid var(--vc-borderColor);border-radius:var(--vc-borderRadius)}
input:focus{outline:2px solid var(--vc-focusColor);outline-offset:1px}
input[aria-invalid=true]{border-color:var(--vc-errorColor)}
.s input{margin-right:6px}#pay{font:inherit;padding:var(--vc-padding)}
.m{margin:2px 0 0;min-height:1em;font-size:.85em;color:var(--vc-errorColor)}.brand{margin:0 0 4px;font-size:.85em}
[hidden]{display:none!important}"""


def render_frame(token: str | None, origin: str | None, style: str | None) -> tuple[int, dict[str, str], str]:
    """``(status, headers, html)`` of the iframe page (module docstring)."""
    nonce = secrets.token_urlsafe(16)
    instance = instances.instance_of(token)
    config = configs.load(instance["accountId"], instance["configId"]) if instance else None
    ancestors = config["allowedParentDomains"] if config else None
    error = None
    if instance is None or config is None or int(instance.get("expiresAt", 0)) <= clock.now():
        error = "TOKEN_INVALID"
    elif not domains.origin_allowed(origin, ancestors or []):
        error = "ORIGIN_NOT_ALLOWED"
    parent = origin if (ancestors and domains.origin_allowed(origin, ancestors)) else None
    # No allowedParentDomains: frame-ancestors 'none' (the browser embeds it nowhere), so the page is only ever
    # shown top-level, by its instance's bearer token; no parent origin, so nothing is ever posted (never '*').
    standalone = config is not None and not ancestors
    if error == "ORIGIN_NOT_ALLOWED" and standalone:
        error = None
    # the instance's language (init's `language`) over its configuration's
    code = configs.language_code((instance or {}).get("language") or config["language"]) if config else "en"
    lang = code if code in _TEXT else "en"  # German, French, Italian: English until translated
    text = _TEXT[lang]
    styles = {**_DEFAULT_STYLE, **clean_style(style)}
    css = _CSS % ";".join(f"--vc-{k}:{v}" for k, v in styles.items())
    collector = ""
    data: dict[str, Any] = {"parentOrigin": parent, "error": error}
    body = ""
    extra = ""
    if error is None and config is not None and instance is not None:
        data.update(methods=config["allowedPaymentMethods"], cardSettings=config["cardSettings"],
                    achSettings=config["achSettings"], language=lang, antiFraud=config["antiFraud"],
                    standalone=standalone)
        body = _form(config, text, standalone, prefill_of(instance.get("customer")))
        if config["antiFraud"]:
            from vaultcore.fraud.collector import active_client_ids

            clients = active_client_ids(instance["accountId"])
            if clients:
                collector = _collector_base()
                dvci = str(uuid.uuid4())
                data["deviceTransId"] = dvci
                src = f"{collector}/cdn/cs/{clients[-1]}.js"
                extra = (f'<script id="bcn" nonce="{nonce}" dvc="a" dvct="800" dvci="{dvci}" '
                         f'sid="{html.escape(instance["customId"])}" src="{html.escape(src)}"></script>')
    config_json = json.dumps(data).replace("<", "\\u003c")
    page = (f'<!doctype html><html lang="{lang}"><head>'
            '<meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">'
            f'<title>{html.escape(text["form"])}</title><style nonce="{nonce}">{css}</style></head><body>'
            f'{body}<script type="application/json" id="vault-config">{config_json}</script>'
            f'<script nonce="{nonce}" src="frame.js"></script>{extra}</body></html>')
    csp = content_security_policy(nonce, ancestors, collector)
    return 200, _headers(csp), page
