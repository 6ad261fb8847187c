"""docs/PROTOCOL.md §13's forward-secret envelope vector, recomputed by fs_reference (PyNaCl)
from the document's inputs alone; the Swift tests (ForwardSecretEnvelopeTests) check the core
against the same vector."""

from __future__ import annotations

import pytest

import fs_reference as fs
import nacl_reference as ref
from test_protocol_vectors import VECTORS


def keys(name: str) -> ref.Keys:
    return ref.keys_from_secrets(bytes.fromhex(VECTORS[name]["secrets"]))


def test_fs_envelope_vector():
    v = VECTORS["fs-envelope-alice-to-bob"]
    alice, bob = keys(v["sender"]), keys(v["recipient"])
    receiver_secret = bytes.fromhex(v["receiver_secret"])
    receiver = fs.receiver_key(int(v["receiver_key_id"]), receiver_secret)
    announced = fs.receiver_key(int(v["announced_key_id"]), bytes.fromhex(v["announced_secret"]))
    assert receiver.public.hex() == v["receiver_public"] and announced.public.hex() == v["announced_public"]
    announcement = fs.Announcement(announced, int(v["release"]))
    message_id, created, header_ad = bytes.fromhex(v["message_id"]), int(v["timestamp_ms"]), bytes.fromhex(v["header_ad"])
    sealed = fs.seal(alice, bob.x25519_public, receiver, announcement, v["body_utf8"].encode(), message_id, created,
                     bytes.fromhex(v["ephemeral_secret"]), header_ad)
    assert sealed.hex() == v["sealed"]
    assert sealed[:4].hex() == v["selector"]
    body, got, key_id = fs.open_(bob, alice.x25519_public, [(receiver.key_id, receiver_secret)], sealed, message_id,
                                 created, header_ad)
    assert (body, got, key_id) == (v["body_utf8"].encode(), announcement, receiver.key_id)
    # Bob's long-term key opens nothing; neither does another receiver key.
    with pytest.raises(AssertionError, match="no receiver key"):
        fs.open_(bob, alice.x25519_public, [(7, bob.x25519_secret)], sealed, message_id, created, header_ad)
    # Another sender in the AD: the AEAD fails.
    with pytest.raises(Exception):
        fs.open_(bob, bob.x25519_public, [(7, receiver_secret)], sealed, message_id, created, header_ad)


def test_fs_ack_vectors():
    v = VECTORS["fs-ack-bob-to-alice"]
    a = VECTORS[v["ack"]]
    acker, ackee = keys(a["acker"]), keys(a["ackee"])
    key = ref.ack_key(acker, ackee.x25519_public, own_is_acker=True)
    created = int(a["created_ms"])
    tag = ref.routing_tag(ref.pair_key(acker, ackee.x25519_public), acker.x25519_public, ackee.x25519_public, created)
    announcement = fs.Announcement(fs.receiver_key(int(v["announced_key_id"]), bytes.fromhex(v["announced_secret"])),
                                   int(v["release"]))
    for acked, name in (([bytes.fromhex(a["acknowledged"])], "packet"), ([], "release_only_packet")):
        packet = fs.ack_packet(key, acked, announcement, bytes.fromhex(a["message_id"]), created, int(a["lifetime_min"]),
                               int(a["hop_limit"]), tag, bytes.fromhex(a["nonce"]))
        assert packet.hex() == v[name]
        assert fs.open_ack(key, packet) == (acked, announcement)
        with pytest.raises(AssertionError):
            ref.open_ack(key, packet)  # a §6.2 reader refuses it by its length


def test_fs_carried_vector():
    """§13.6: a carried copy sealed to a receiver key, recomputed from the inputs alone."""
    import carried_reference as carried
    v = VECTORS["fs-carried-alice-to-bob"]
    alice, bob = keys(v["sender"]), keys(v["recipient"])
    receiver_secret = bytes.fromhex(v["receiver_secret"])
    receiver = fs.receiver_key(int(v["receiver_key_id"]), receiver_secret)
    announcement = fs.Announcement(fs.receiver_key(int(v["announced_key_id"]), bytes.fromhex(v["announced_secret"])),
                                   int(v["release"]))
    created = int(v["created_ms"])
    content = carried.message_content(bytes.fromhex(v["message_id"]), created, bytes.fromhex(v["claim"]),
                                      v["body_utf8"].encode())
    assert content.hex() == v["content"]
    packet = fs.seal_carried(alice, bob.x25519_public, receiver, announcement, content, created,
                             int(v["lifetime_ms"]), int(v["hop_limit"]), int(v["copy_budget"]),
                             bytes.fromhex(v["ephemeral_secret"]))
    assert packet.hex() == v["packet"]
    assert (packet[:2] + packet[4:34]).hex() == v["authenticated"]
    assert packet[34:38].hex() == v["selector"]
    assert carried.identity(packet).hex() == v["identity"]
    # 44 bytes more than §10.4's carried copy of the same content.
    assert len(packet) - len(bytes.fromhex(VECTORS["carried-message"]["packet"])) == 44
    assert fs.open_carried(bob, alice.x25519_public, [(receiver.key_id, receiver_secret)], packet) == \
        (content, announcement, receiver.key_id)
    # Bob's long-term key opens nothing: neither as a receiver key nor as §10.4.
    with pytest.raises(AssertionError, match="no receiver key"):
        fs.open_carried(bob, alice.x25519_public, [(7, bob.x25519_secret)], packet)
    with pytest.raises(Exception):
        carried.open_(bob, [alice.x25519_public], packet, created)
