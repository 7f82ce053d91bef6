"""schemathesis against the partner-facing documents and the management API: the second half of
``test_schemathesis_e2e.py`` (whose docstring says what is generated and checked), in a file of its own so that
pytest-xdist runs the halves on two workers, each with a runner of its own. The management API runs last: its
cases rotate, disable and delete the seeded resources the others use."""

from __future__ import annotations

import pytest
import schemathesis

from tests.e2e.test_schemathesis_e2e import APIS_HERE, CHECKS, _load, _node_id, platform  # noqa: F401 - fixtures

APIS_THERE = ("proxy", "secure", "management")
assert not set(APIS_HERE) & set(APIS_THERE)


@pytest.fixture(scope="module", params=APIS_THERE)
def api_schema(request, platform):  # noqa: F811 - this file's documents, on the imported runner fixture
    return _load(request.param)


lazy_schema = schemathesis.pytest.from_fixture("api_schema")


@lazy_schema.parametrize()
def test_every_operation_conforms_to_its_document(case, platform):  # noqa: F811
    runner, session = platform
    case.call_and_validate(base_url=runner.base_url, session=session, checks=CHECKS)
