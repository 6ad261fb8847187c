"""Carrying for others through the binding: mode and caps, the typed status, the event
kind, misuse (include/yaok.h, "carrying for others"; docs/ABI.md, "carry")."""

import time
import pytest

import yaok
from yaok import CarryMode, CarryStatus, EventKind


@pytest.fixture
def node_pair(node, bob_card):
    """Alice's node with Bob (an identity, not linked) as a contact."""
    contact = node.add_contact(bob_card)
    return node, None, contact.id


def test_defaults_and_modes(node_pair):
    alice, bob, bob_id = node_pair
    status = alice.carry_status()
    assert isinstance(status, CarryStatus)
    assert status.mode is CarryMode.ANYONE and status.mode == "anyone"
    assert (status.max_packets, status.max_bytes) == (2000, 32 << 20)
    assert status.packets_held == 0 and status.packets_taken == 0

    # A message to a contact who is not linked: an own carried copy waits for a carrier.
    # The copy is made on the node's event thread soon after the send (PROTOCOL.md §12.6).
    alice.send(bob_id, "through strangers")
    deadline = time.monotonic() + 10
    while alice.carry_status().packets_held != 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert alice.carry_status().packets_held == 1

    alice.set_carry("contacts", max_packets=100, max_bytes=1 << 20)
    status = alice.carry_status()
    assert (status.mode, status.max_packets, status.max_bytes) == (CarryMode.CONTACTS, 100, 1 << 20)
    assert status.packets_held == 1

    alice.set_carry(CarryMode.OFF)
    status = alice.carry_status()
    assert status.mode is CarryMode.OFF and status.packets_held == 0 and status.bytes_held == 0
    assert alice.diagnostics()["carry"]["mode"] == "off"
    assert CarryStatus.from_json(alice.diagnostics()["carry"]) == alice.carry_status()


def test_misuse_is_refused_and_changes_nothing(node_pair):
    alice, _, _ = node_pair
    with pytest.raises(yaok.InvalidArgument, match="carry mode"):
        alice.set_carry("everyone")
    with pytest.raises(yaok.InvalidArgument):
        alice.set_carry("anyone", max_bytes=1000)  # under one packet: the library says so
    with pytest.raises(yaok.InvalidArgument):
        alice.set_carry("anyone", max_packets=0)
    with pytest.raises(yaok.InvalidArgument):
        alice.set_carry("anyone", max_packets=2_000_000)
    with pytest.raises(TypeError):
        alice.set_carry("anyone", max_packets="10")  # type: ignore[arg-type]
    assert alice.carry_status().mode is CarryMode.ANYONE


def test_event_kind():
    assert EventKind.CARRY_ACTIVITY == 10
