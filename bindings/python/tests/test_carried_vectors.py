"""docs/PROTOCOL.md §10's carried-packet vectors, recomputed by carried_reference (PyNaCl)
from the document's inputs alone; the Swift tests (CarriedVectorTests) check the core
against the same vectors."""

from __future__ import annotations

import pytest

import carried_reference as carried
import nacl_reference as ref
from test_protocol_vectors import VECTORS


def keys(name: str) -> ref.Keys:
    return ref.keys_from_secrets(bytes.fromhex(VECTORS[name]["secrets"]))


def test_carried_tag_vector():
    v = VECTORS["carried-tag"]
    alice, bob = keys(v["sender"]), keys(v["recipient"])
    key = ref.pair_key(alice, bob.x25519_public)
    assert key.hex() == v["pair_key"] == ref.pair_key(bob, alice.x25519_public).hex()
    epoch = int(v["epoch"])
    assert carried.carried_tag(key, alice.x25519_public, bob.x25519_public, epoch).hex() == v["carried_tag"]
    assert carried.carried_tag(key, bob.x25519_public, alice.x25519_public, epoch).hex() == v["reverse_carried_tag"]
    # Never the §4.3 tag of the pair (same pair key, different input).
    assert v["carried_tag"] != ref.routing_tag(key, alice.x25519_public, bob.x25519_public, epoch * ref.DAY_MS).hex()


@pytest.mark.parametrize("name", ["carried-message", "carried-ack"])
def test_carried_packet_vectors(name):
    v = VECTORS[name]
    sender, recipient = keys(v["sender"]), keys(v["recipient"])
    created, claim = int(v["created_ms"]), bytes.fromhex(v["claim"])
    if "body_utf8" in v:
        content = carried.message_content(bytes.fromhex(v["message_id"]), created, claim, v["body_utf8"].encode())
    else:
        content = carried.ack_content(bytes.fromhex(v["message_id"]), created, claim, [bytes.fromhex(v["acknowledged"])])
    assert content.hex() == v["content"]
    assert carried.expiry_hour(created, int(v["lifetime_ms"])) == int(v["expiry_hour"])
    assert carried.claim_hash(claim).hex() == v["claim_hash"]
    packet = carried.seal(sender, recipient.x25519_public, content, created, int(v["lifetime_ms"]),
                          int(v["hop_limit"]), int(v["copy_budget"]), bytes.fromhex(v["ephemeral_secret"]))
    assert packet.hex() == v["packet"]
    assert packet[8:16].hex() == v["routing_tag"]
    assert (packet[:2] + packet[4:34]).hex() == v["authenticated"]
    assert carried.identity(packet).hex() == v["identity"]
    # Opened as the recipient would: its contacts' tags tried in turn (the first is not the sender).
    other = ref.keys_from_secrets(bytes(range(128, 192))).x25519_public
    opened = carried.open_(recipient, [other, sender.x25519_public], packet, created)
    assert opened == carried.Opened(sender.x25519_public, content)
    # Carriers may rewrite bytes 2 and 3 only: the identity and the opening do not change.
    rewritten = packet[:2] + b"\x00\x01" + packet[4:]
    assert carried.identity(rewritten) == carried.identity(packet)
    assert carried.open_(recipient, [sender.x25519_public], rewritten, created).content == content
    with pytest.raises(Exception):
        carried.open_(recipient, [sender.x25519_public], packet[:20] + bytes([packet[20] ^ 1]) + packet[21:], created)


def test_purge_vectors():
    v = VECTORS["carried-purge"]
    claims = [bytes.fromhex(c) for c in v["claims"].split()]
    record = carried.purge_record(claims)
    assert record.hex() == v["record"]
    assert carried.decode_purge_record(record) == sorted(claims)
    hashes = {carried.claim_hash(c).hex() for c in claims}
    assert {VECTORS["carried-message"]["claim_hash"], VECTORS["carried-ack"]["claim_hash"]} == hashes
    assert carried.decode_purge_record(bytes.fromhex(VECTORS["purge-reject-order"]["bytes"].replace(" ", ""))) is None


@pytest.mark.parametrize("name", ["carried-reject-budget", "carried-reject-length"])
def test_carried_reject_vectors(name):
    data = bytes.fromhex(VECTORS[name]["bytes"].replace(" ", ""))
    assert VECTORS[name]["error"] == "malformedPacket"
    with pytest.raises(AssertionError):
        carried.open_(keys("identity-bob"), [], data, 1_700_000_000_000)
