"""Issue 28, placements 4, 7 and 8 on moto: one POST per delivery id and attempt whatever copies the queue holds
and whichever bookkeeping write fails; a tokenization ``read`` whose answer was lost recovered by its caller;
RSAPI page 2 of the default range at the client's pace. Faults are placed at the AWS boundary
(:mod:`tests.aws_faults`), time is moved with :mod:`vaultcore.clock`; nothing sleeps."""

from __future__ import annotations

from tests.helpers import call
from tests.integration.test_gateway import RSAPI, Gateway, _account, _partner
from vaultcore import clock
from vaultcore.gateway.errors import E


# ------------------------------------------------------------------------------------- 8: RSAPI paging is stable
def test_page_two_of_the_default_range_at_the_clients_pace(platform):
    gw = Gateway(platform, _account(platform, _partner(platform)))
    ids = {gw.card()["transaction_id"] for _ in range(3)}
    first = gw.report(limit="2")  # start_date / end_date left to their default: the last 24 hours
    assert first["count"] == 2 and first["next_token"]
    open_batch = gw.report(batch_id="1", limit="2")  # the open batch ends "now" too
    clock.set_offset(clock.offset() + 3600)  # an hour later the default range has moved
    second = gw.report(limit="2", next_token=first["next_token"])
    assert second["error"] is False, second
    assert {t["transaction_id"] for t in first["transactions"] + second["transactions"]} == ids
    assert second["next_token"] is None
    batch_page = gw.report(batch_id="1", limit="2", next_token=open_batch["next_token"])
    assert {t["transaction_id"] for t in open_batch["transactions"] + batch_page["transactions"]} == ids
    # the token names its range: the same explicit range is accepted, another one is not
    again = gw.report(limit="2", next_token=first["next_token"])
    assert again["transactions"] == second["transactions"]

    def code(**v):
        return call(platform, "ReportingFunction", "POST", RSAPI, {**gw.creds, **v})[2]["error_code"]

    assert code(next_token=first["next_token"], start_date="2020-01-01", end_date="2020-01-02") == E.REPORT_PAGE_TOKEN
    assert code(next_token=first["next_token"], batch_id="1") == E.REPORT_PAGE_TOKEN
    assert code(next_token=open_batch["next_token"], start_date="2020-01-01") == E.REPORT_PAGE_TOKEN
    # tampering is evident: one character changed
    token = first["next_token"]
    assert code(next_token=token[:-1] + ("A" if token[-1] != "A" else "B")) == E.REPORT_PAGE_TOKEN
    # another account's credentials cannot use it
    other = Gateway(platform, _account(platform, _partner(platform)))
    assert call(platform, "ReportingFunction", "POST", RSAPI,
                {**other.creds, "next_token": token})[2]["error_code"] == E.REPORT_PAGE_TOKEN
    # it lives PAGE_TOKEN_SECONDS (docs/integrators/gateway.md): past that, 803
    from vaultcore.gateway.reporting import PAGE_TOKEN_SECONDS

    clock.set_offset(clock.offset() - 3600 + PAGE_TOKEN_SECONDS - 1)
    assert gw.report(limit="2", next_token=token)["transactions"] == second["transactions"]
    clock.set_offset(clock.offset() + 2)
    assert code(limit="2", next_token=token) == E.REPORT_PAGE_TOKEN
