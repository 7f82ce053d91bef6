"""Time-ordered delivery ids (vaultcore.ids): RFC 9562 layout, chronological hex order, determinism of the
webhook deliveries' ids (issue 29: the delivery log lists newest delivery first from the ids' order)."""

from __future__ import annotations

import uuid

from vaultcore import clock, ids


def test_uuid7_has_the_rfc_9562_layout_and_the_clock_s_milliseconds(frozen_clock):
    value = ids.uuid7()
    parsed = uuid.UUID(value)
    assert parsed.version == 7 and parsed.variant == uuid.RFC_4122 and str(parsed) == value
    assert ids.uuid_millis(value) == int(frozen_clock * 1000)
    assert ids.is_time_ordered(value)


def test_uuid7_sorts_chronologically_even_within_one_millisecond_and_with_the_clock_set_back(frozen_clock):
    same_ms = [ids.uuid7() for _ in range(200)]  # the clock stands still: one millisecond for all of them
    assert same_ms == sorted(same_ms) and len(set(same_ms)) == 200
    clock.set_offset(clock.offset() + 5)
    later = ids.uuid7()
    assert later > same_ms[-1] and ids.uuid_millis(later) == int((frozen_clock + 5) * 1000)
    clock.set_offset(clock.offset() - 10)  # set back: still after every id this process made
    assert ids.uuid7() > later


def test_time_ordered_uuid_is_deterministic_and_sorts_by_its_time():
    first = ids.time_ordered_uuid(1_800_000_000, "account:event:key:endpoint")
    assert first == ids.time_ordered_uuid(1_800_000_000, "account:event:key:endpoint")
    assert first != ids.time_ordered_uuid(1_800_000_000, "account:event:key:other")
    assert ids.time_ordered_uuid(1_800_000_001, "a") > ids.time_ordered_uuid(1_800_000_000, "z")
    assert uuid.UUID(first).version == 8 and ids.uuid_millis(first) == 1_800_000_000_000
    assert ids.is_time_ordered(first)


def test_ids_of_the_version_before_are_not_time_ordered():
    assert not ids.is_time_ordered(str(uuid.uuid4()))
    assert not ids.is_time_ordered(str(uuid.uuid5(uuid.NAMESPACE_URL, "x")))
    assert not ids.is_time_ordered("d-1") and not ids.is_time_ordered(ids.uuid7().upper())
