"""Issue 31: the v4 payments' meta rules (the original's schemas, no card data), the details' mapping of a QSAPI
transaction onto the original's AuthResponse, the PAN detector the meta shares with the log redaction, the
processor's statement line, and each operation's scope (a Principal of limited scopes)."""

from __future__ import annotations

import pytest

from vaultcore.cards.masking import holds_pan, redact_text
from vaultcore.gateway import processor
from vaultcore.payments import meta, records
from vaultcore.v4.auth import Principal
from vaultcore.v4.errors import MemberInvalid, ScopeMissing


@pytest.mark.parametrize("text", ["4242424242424242", "4242 4242 4242 4242", "4242-4242-4242-4242",
                                  "card:5555555555554444.", "x378282246310005", "order 0000004242424242424242"])
def test_holds_pan_finds_what_the_log_redaction_masks(text):
    assert holds_pan(text) and redact_text(text) != text


@pytest.mark.parametrize("text", ["4242424242424241", "123456789012", "+14441234321", "2026-11-27T08:00:00Z",
                                  "1234 5678", "ABC123", ""])
def test_holds_pan_leaves_other_numbers(text):
    assert not holds_pan(text)


def _refused(fn, body) -> MemberInvalid:
    with pytest.raises(MemberInvalid) as caught:
        fn(body)
    return caught.value


def test_a_pan_in_any_member_is_refused_and_the_message_never_holds_it():
    bodies = [{"description": "4242 4242 4242 4242"}, {"customer": {"billingAddress": {"zip": "4242424242424242"}}},
              {"items": [{}, {"quantity": 4242424242424242}]}, {"trace": {"gpsLocation": {"latitude": "4242424242424242",
                                                                                          "longitude": "1"}}},
              {"x": {"y": ["4242424242424242"]}}]
    for body in bodies:
        for fn in (meta.validate_meta, meta.validate_update):
            error = _refused(fn, body)
            assert error.status == 422 and "4242" not in str(error) and "card number" in str(error), (body, error)


def test_the_members_and_limits_are_the_originals():
    assert meta.META_MEMBERS == ("description", "customer", "shippingAddress", "level2", "level3", "items", "trace")
    ok = meta.validate_meta({"level3": {"summaryCommodityCode": "ABCD", "vatRate": "1000"},
                             "items": [{"description": "x" * 35, "discountCode": "2"}],
                             "customer": {"phone": "+14441234321"}, "trace": {"timestamp": "2017-05-08T12:15:29.000Z",
                                                                           "tags": ["a" * 20]}})
    assert ok["items"][0]["description"] == "x" * 35
    for body, member in (({"level3": {"vatRate": "10000"}}, "level3.vatRate"),
                         ({"items": [{"description": "x" * 36}]}, "items[0].description"),
                         ({"items": [{}] * (meta.MAX_ITEMS + 1)}, "items"),
                         ({"trace": {"tags": ["a" * 21]}}, "trace.tags[0]"),
                         ({"customer": {"billingAddress": {"address1": "1 Main"}}}, "customer.billingAddress.city"),
                         ({"level2": {"other": "1"}}, "level2.other"), ({"overrides": {}}, "overrides")):
        assert _refused(meta.validate_meta, body).member == member, body
    assert meta.validate_update({"overrides": {"sendCustomerSMS": True}}) == {"overrides": {"sendCustomerSMS": True}}
    assert _refused(meta.validate_update, {"level2": {}}).member == "level2"  # not a TransactionUpdate member


def test_a_patch_replaces_level3_and_items_and_merges_the_customer():
    stored = meta.validate_meta({"customer": {"name": "Jane", "email": "j@example.com"},
                                 "level3": {"dutyAmount": "1.00", "freightAmount": "2.00"}, "items": [{"quantity": "1"}]})
    merged = meta.merge(stored, meta.validate_update({"customer": {"name": "Jane Q"}, "level3": {"vatAmount": "3.00"}}))
    assert merged["customer"] == {"name": "Jane Q", "email": "j@example.com"}
    assert merged["level3"] == {"vatAmount": "3.00"} and merged["items"] == [{"quantity": "1"}]
    with pytest.raises(MemberInvalid) as caught:  # an address first sent by a PATCH must be whole
        meta.merge(stored, meta.validate_update({"shippingAddress": {"city": "Atlanta"}}))
    assert caught.value.member == "shippingAddress.recipient"


def _item(**kw):
    return {"transaction_id": "418870114392", "created_at": 1795766229, "tender_type": "CARD", "card_brand": "VISA",
            "last4": "4242", "card_expiration": "1239", "transaction_type": "SALE", "transaction_approved": True,
            "authorization_code": "AB12CD", "authorization_message": "APPROVED", "transaction_cents": 1050,
            "currency": "USD", **kw}


def test_a_qsapi_transaction_as_the_originals_auth_response():
    out = records.auth_response(_item(first_name="Jane", last_name="Smith"))
    assert out == {"status": "APPROVED", "id": "418870114392", "timestamp": "2026-11-27T07:57:09Z",
                   "card": {"name": "Jane Smith", "brand": "VISA", "last4": "4242", "expiry": "1239"},
                   "auth": {"code": "AB12CD", "message": "APPROVED", "processorMessage": "APPROVED"},
                   "amounts": {"currency": "USD", "total": "10.50"}}
    assert records.auth_response(_item(card_brand="American Express"))["card"]["brand"] == "AMEX"
    statuses = {(): "APPROVED", (("transaction_approved", False), ("error_code", 500)): "DECLINED",
                (("transaction_approved", False), ("error_code", 503)): "ERROR",
                (("transaction_type", "AUTHORIZATION"), ("auth_status", "authorized")): "AUTHORIZED",
                (("transaction_type", "AUTHORIZATION"), ("auth_status", "captured")): "CAPTURED",
                (("transaction_type", "CAPTURE"),): "CAPTURED", (("transaction_type", "STORE"),): "SAVED",
                (("transaction_type", "CREDIT"),): "CREDITED", (("reversed_by", "1"),): "VOIDED",
                (("voided_by", "1"),): "VOIDED", (("refunded_cents", 100),): "REFUNDED",
                (("transaction_type", "REFUND"), ("authorization_message", "VOID")): "VOIDED",
                (("tender_type", "ACH"), ("authorization_message", "PENDING")): "PENDING"}
    for changes, status in statuses.items():
        assert records.status_of(_item(**dict(changes))) == status, changes
    ach = records.auth_response(_item(tender_type="ACH", card_brand=None))
    assert "card" not in ach


def test_the_processor_echoes_the_descriptor_it_applied():
    d = processor.Descriptor("ddesc_" + "0" * 32, "PayConex Store 001", "Kansas City", "MO")
    card = processor.authorize_card(processor.CardPayment("4242424242424242", "1239", descriptor=d))
    assert card.dynamic_descriptor == "PayConex Store 001 Kansas City MO" and card.approved
    declined = processor.authorize_card(processor.CardPayment("4000000000000002", "1239", descriptor=d))
    assert declined.dynamic_descriptor == card.dynamic_descriptor and not declined.approved
    ach = processor.debit_ach(processor.AchPayment("000123456789", "011000015", descriptor=d))
    assert ach.dynamic_descriptor == card.dynamic_descriptor
    assert processor.authorize_card(processor.CardPayment("4242424242424242", "1239")).dynamic_descriptor is None


def test_each_operation_asks_the_originals_scope():
    from vaultcore.descriptors.routes import SCOPES as DD
    from vaultcore.payments.routes import SCOPES as PAY

    assert sorted(PAY.values()) == ["pcx:payments:create", "pcx:payments:read", "pcx:payments:update"]
    assert sorted(set(DD.values())) == [f"pcx:dynamic_descriptors:{a}" for a in ("create", "delete", "read",
                                                                                 "update")]
    reader = Principal(account=None, key_id="api_" + "0" * 32, scopes=frozenset({"pcx:payments:read"}))  # type: ignore[arg-type]
    reader.require(PAY[("/api/v4/accounts/{account_id}/payments/{transaction_id}", "GET")])
    for scope in (*(s for s in PAY.values() if s != "pcx:payments:read"), *DD.values()):
        with pytest.raises(ScopeMissing):
            reader.require(scope)
    wildcard = Principal(account=None, key_id=None, scopes=frozenset({"pcx:dynamic_descriptors:*"}))  # type: ignore[arg-type]
    for scope in DD.values():
        wildcard.require(scope)


# A PAN written with other separators or other digits is still card data (review of issue 31): the meta, a
# descriptor, a key's label and a webhook's URL refuse these forms too, not only the log redaction's.
_DISGUISED = ["4242.4242.4242.4242", "4242  4242  4242  4242", "4242/4242/4242/4242", "4242_4242_4242_4242",
              "4242\u00a04242\u00a04242\u00a04242", "4242\u20134242\u20134242\u20134242", "4242 - 4242 - 4242 - 4242",
              "4242\t4242\t4242\t4242", "\uff14\uff12\uff14\uff12" * 4, "\u0664\u0662\u0664\u0662" * 4]


@pytest.mark.parametrize("text", _DISGUISED)
def test_a_pan_with_other_separators_or_unicode_digits_is_refused_in_the_meta(text):
    for fn in (meta.validate_meta, meta.validate_update):
        error = _refused(fn, {"description": text})
        assert error.member == "description" and "card number" in str(error), (text, error)
        error = _refused(fn, {"items": [{"description": "ok"}, {"x": {"y": [text]}}]})
        assert "card number" in str(error), (text, error)


@pytest.mark.parametrize("text", ["2026-11-27 10:00:00.123", "10.00 20.00", "+14441234321", "1 Main St. Apt 4",
                                  "4242.4242.4242.4241", "SKU 12-34-56"])
def test_the_wider_detector_leaves_ordinary_values(text):
    assert meta.validate_meta({"description": text})["description"] == text
    assert "description" in meta.validate_update({"description": text})


@pytest.mark.parametrize("text", _DISGUISED[:1] + _DISGUISED[8:])
def test_a_descriptor_refuses_a_disguised_pan(text):
    from vaultcore.descriptors import records as descriptors

    with pytest.raises(MemberInvalid) as caught:
        descriptors._validate({"descriptor": text[:25]}, partial=True)
    assert caught.value.member == "descriptor" and "card number" in str(caught.value)


@pytest.mark.parametrize("name", ["4242424242424242", "4242.4242.4242.4242", "\uff14\uff12\uff14\uff12" * 4])
def test_a_member_name_holding_a_pan_is_never_echoed(name):
    """Review of issue 31: an unknown member is refused naming it (422 details[].source); a name that is a card
    number was echoed in the answer by the descriptors, the API keys and the webhooks."""
    from vaultcore.apikeys import service as apikeys
    from vaultcore.descriptors import records as descriptors
    from vaultcore.webhooks import endpoints

    calls = (lambda: descriptors._validate({name: "x"}, partial=True), lambda: apikeys._body({name: 1}, apikeys._CREATE),
             lambda: endpoints._validate({name: "x"}, None), lambda: meta.validate_meta({name: "x"}))
    for call in calls:
        with pytest.raises(MemberInvalid) as caught:
            call()
        assert "4242" not in str(caught.value) and "\uff14" not in str(caught.value), caught.value
        assert "4242" not in caught.value.member and "\uff14" not in caught.value.member
