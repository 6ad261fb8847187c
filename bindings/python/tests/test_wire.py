"""yaok.wire (include/yaok.h, "wire (interoperability)"): the library's strict decoder,
framer and fragmenter agree with every wire vector of docs/PROTOCOL.md and with the
packets that the independent implementation (nacl_reference.py) builds."""

from __future__ import annotations

from typing import Any, Dict

import pytest

import yaok
from yaok import wire

import nacl_reference as ref
from test_protocol_vectors import VECTORS, of_kind

ROUTED = ["wire-routed-message", "wire-routed-ack"]
TYPE_NAMES = {1: "message", 2: "ack", 3: "handshake", 4: "fragment", 5: "link"}


def packet_of(name: str) -> bytes:
    return bytes.fromhex(VECTORS[name]["packet"])


def test_there_are_wire_vectors_for_every_check():
    assert of_kind("wire-reject-") and of_kind("link-packet-")
    assert set(ROUTED + ["wire-handshake", "wire-sealed-message", "wire-frame", "wire-fragmentation"]) <= set(VECTORS)


@pytest.mark.parametrize("name", ROUTED)
def test_routed_vectors_decode_to_their_fields(name: str):
    v = VECTORS[name]
    assert wire.decode_packet(packet_of(name)) == {
        "version": 1, "type": TYPE_NAMES[int(v["type"], 16)],
        "hop_limit": int(v["hop_limit"]), "message_id": v["message_id"],
        "created_ms": int(v["created_ms"]), "lifetime_min": int(v["lifetime_min"]),
        "expires_ms": int(v["expires_ms"]), "routing_tag": v["routing_tag"],
        "authenticated": bytes.fromhex(v["authenticated"]).hex(), "payload": v["payload"],
    }


def test_the_sealed_message_vector_decodes_to_its_fields():
    v = VECTORS["wire-sealed-message"]
    packet = packet_of("wire-sealed-message")
    fields = wire.decode_packet(packet)
    assert {k: fields[k] for k in ("type", "hop_limit", "message_id", "created_ms", "lifetime_min",
                                   "routing_tag", "authenticated")} == {
        "type": "message", "hop_limit": int(v["hop_limit"]), "message_id": v["message_id"],
        "created_ms": int(v["created_ms"]), "lifetime_min": int(v["lifetime_min"]),
        "routing_tag": v["routing_tag"], "authenticated": v["authenticated"]}
    assert fields["payload"] == packet[37:].hex()


def test_a_packet_built_by_the_reference_implementation_decodes_to_its_fields():
    sender = ref.keys_from_secrets(bytes(range(0x40, 0x80)))
    recipient = ref.keys_from_secrets(bytes(range(0x80, 0xc0)))
    message_id, created, lifetime, hop = bytes(range(16, 32)), 1_712_345_678_901, 60, 6
    packet = ref.message_packet(sender, recipient.x25519_public, "Grüße".encode(), message_id, created,
                                lifetime, hop, bytes(range(0xc0, 0xe0)))
    tag = ref.routing_tag(ref.pair_key(sender, recipient.x25519_public), sender.x25519_public,
                          recipient.x25519_public, created)
    _, authenticated = ref.routed_header(1, hop, message_id, created, lifetime, tag, len(packet) - 37)
    assert wire.decode_packet(packet) == {
        "version": 1, "type": "message", "hop_limit": hop, "message_id": message_id.hex(),
        "created_ms": created, "lifetime_min": lifetime, "expires_ms": created + lifetime * 60_000,
        "routing_tag": tag.hex(), "authenticated": authenticated.hex(), "payload": packet[37:].hex()}
    # And the reference's ack header too (an ack's payload is opaque to this layer).
    ack, _ = ref.routed_header(2, 9, message_id, created, lifetime, tag, 3)
    assert wire.decode_packet(ack + b"abc")["type"] == "ack"


def test_handshake_vector():
    v = VECTORS["wire-handshake"]
    assert wire.decode_packet(packet_of("wire-handshake")) == {"version": 1, "type": "handshake",
                                                             "payload": v["payload"]}


@pytest.mark.parametrize("name", of_kind("link-packet-"))
def test_link_packet_vectors(name: str):
    packet = packet_of(name)
    assert wire.decode_packet(packet) == {"version": 1, "type": "link",
                                          "counter": int(VECTORS[name]["counter"]).to_bytes(8, "big").hex(),
                                          "ciphertext": packet[12:].hex()}


def test_frame_vector():
    v = VECTORS["wire-frame"]
    assert wire.frame(bytes.fromhex(v["packet"])) == bytes.fromhex(v["frame"])
    assert wire.frame(bytearray(b"\x01")) == b"\x00\x01\x01"


def test_fragmentation_vector():
    v = VECTORS["wire-fragmentation"]
    packet = bytes.fromhex(v["packet"])
    fragments = [bytes.fromhex(v[f"fragment_{i}"]) for i in range(4)]
    assert wire.split(packet, int(v["mtu"]), int(v["group"])) == fragments
    chunk = int(v["mtu"]) - 8
    for i, unit in enumerate(fragments):
        assert wire.decode_packet(unit) == {"version": 1, "type": "fragment", "group": int(v["group"]),
                                            "index": i, "count": 4, "data": packet[i * chunk:(i + 1) * chunk].hex()}
    # A packet that fits is sent whole; the group is then not used.
    assert wire.split(packet, len(packet), 7) == [packet]
    assert wire.split(packet, 40, 0xFFFF)[0][2:4] == b"\xff\xff"


@pytest.mark.parametrize("name", of_kind("wire-reject-"))
def test_reject_vectors_raise_the_protocol_status(name: str):
    v = VECTORS[name]
    expected = {"unsupportedVersion": yaok.UnsupportedVersion, "unknownPacketType": yaok.UnknownPacketType,
                "malformedPacket": yaok.MalformedPacket}[v["error"]]
    with pytest.raises(expected) as info:
        wire.decode_packet(bytes.fromhex(v["bytes"]))
    assert type(info.value) is expected and isinstance(info.value, yaok.ProtocolError)


MALFORMED: Dict[str, Any] = {
    "truncated header": (packet_of("wire-routed-message")[:20], "truncated at creation time"),
    "trailing byte": (packet_of("wire-routed-message") + b"\0", "payload length 4 but 5 bytes follow"),
    "zero lifetime": (packet_of("wire-routed-message")[:25] + b"\0\0" + packet_of("wire-routed-message")[27:],
                      "lifetime is 0 minutes"),
    "fragment count 1": (bytes.fromhex("0104123400000001aa"), "fragment count 1 is below 2"),
    "fragment index = count": (bytes.fromhex("0104123400020002aa"), "fragment index 2 is not below count 2"),
    "empty fragment": (bytes.fromhex("0104123400000002"), "fragment without data"),
    "short link packet": (bytes.fromhex("010500080000000000000000"), "link length 8 is under 25"),
    "too long": (b"\x01\x03" + bytes(17407), "exceeds the maximum 17408"),
    "version only": (b"\x01", "truncated at packet type"),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_packets_name_the_defect(case: str):
    packet, message = MALFORMED[case]
    with pytest.raises(yaok.MalformedPacket, match=message):
        wire.decode_packet(packet)


def test_bad_frames_and_splits():
    with pytest.raises(yaok.InvalidArgument, match="keepalive"):
        wire.frame(b"")
    with pytest.raises(yaok.FrameTooLarge):
        wire.frame(bytes(wire.MAX_PACKET_BYTES + 1))
    with pytest.raises(yaok.InvalidArgument, match="MTU must be at least 20"):
        wire.split(b"\x01\x01", wire.MIN_MTU - 1, 0)
    for bad in (b"", bytes(wire.MAX_PACKET_BYTES + 1)):
        with pytest.raises(yaok.InvalidArgument, match="Packet length"):
            wire.split(bad, wire.MIN_MTU, 0)
    with pytest.raises(yaok.InvalidArgument):
        wire.split(b"\x01", 20, 1 << 16)
    with pytest.raises(TypeError):
        wire.decode_packet("0101")  # type: ignore[arg-type]
