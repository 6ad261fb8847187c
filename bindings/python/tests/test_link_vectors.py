"""docs/PROTOCOL.md §5 (links), checked from outside the core: noise_reference.py (PyNaCl,
hashlib, hmac) recomputes every link vector from the document's inputs alone, and
`noiseprotocol`, a Noise implementation written by other people on another crypto library
(`cryptography`), must produce the same handshake messages, hash and transport keys, and
the same ciphertext for the explicit-counter transport packets."""

from __future__ import annotations

from typing import Dict, NamedTuple, Tuple

import pytest
from noise.connection import Keypair, NoiseConnection

import noise_reference as ref
from test_protocol_vectors import VECTORS, of_kind


def hex_field(v: Dict[str, str], key: str) -> bytes:
    return bytes.fromhex(v[key])  # fromhex skips the white space the document wraps with


class Party(NamedTuple):
    identity: ref.Identity
    static_secret: bytes
    certificate: bytes


def party(cert_vector: str) -> Party:
    v = VECTORS[cert_vector]
    identity = ref.identity_from_secrets(hex_field(VECTORS[v["identity"]], "secrets"))
    static_secret = hex_field(v, "link_static_secret")
    return Party(identity, static_secret, ref.certificate(identity, ref.public_key(static_secret)))


class Run(NamedTuple):
    m1: bytes
    m2: bytes
    m3: bytes
    initiator: ref.Session
    responder: ref.Session


def run_handshake(v: Dict[str, str]) -> Run:
    alice, bob = party(v["initiator"]), party(v["responder"])
    initiator = ref.Handshake(True, alice.static_secret, alice.certificate, hex_field(v, "initiator_ephemeral_secret"))
    responder = ref.Handshake(False, bob.static_secret, bob.certificate, hex_field(v, "responder_ephemeral_secret"))
    m1 = initiator.write_m1()
    m2 = responder.read_m1_write_m2(m1)
    m3, initiator_session = initiator.read_m2_write_m3(m2)
    return Run(m1, m2, m3, initiator_session, responder.read_m3(m3))


def noise_side(initiator: bool, static_secret: bytes, ephemeral_secret: bytes) -> NoiseConnection:
    connection = NoiseConnection.from_name(ref.PROTOCOL_NAME)
    connection.set_prologue(ref.PROLOGUE)
    if initiator:
        connection.set_as_initiator()
    else:
        connection.set_as_responder()
    connection.set_keypair_from_private_bytes(Keypair.STATIC, static_secret)
    # A fixed ephemeral key is what makes a vector; noiseprotocol warns that this is for tests.
    connection.set_keypair_from_private_bytes(Keypair.EPHEMERAL, ephemeral_secret)
    with pytest.warns(UserWarning, match="ephemeral"):
        connection.start_handshake()
    return connection


def noise_handshake(v: Dict[str, str]) -> Tuple[NoiseConnection, NoiseConnection, Tuple[bytes, bytes, bytes]]:
    alice, bob = party(v["initiator"]), party(v["responder"])
    i = noise_side(True, alice.static_secret, hex_field(v, "initiator_ephemeral_secret"))
    r = noise_side(False, bob.static_secret, hex_field(v, "responder_ephemeral_secret"))
    m1 = bytes(i.write_message(b""))
    assert r.read_message(m1) == b""
    m2 = bytes(r.write_message(bob.certificate))
    assert i.read_message(m2) == bob.certificate
    m3 = bytes(i.write_message(alice.certificate))
    assert r.read_message(m3) == alice.certificate
    assert i.handshake_finished and r.handshake_finished
    return i, r, (m1, m2, m3)


def test_the_document_has_link_vectors():
    assert len(of_kind("link-cert-")) == 2
    assert of_kind("link-handshake-")
    assert len(of_kind("link-packet-")) == 3


# ---- certificates

@pytest.mark.parametrize("name", of_kind("link-cert-"))
def test_certificate_vectors(name):
    v = VECTORS[name]
    p = party(name)
    link_public = ref.public_key(p.static_secret)
    assert link_public.hex() == v["link_static_public"]
    assert p.certificate.hex() == v["certificate"]
    cert = ref.verify_certificate(hex_field(v, "certificate"), link_public)
    assert (cert.identity_x25519_public, cert.identity_ed25519_public) == (p.identity.x25519_public,
                                                                             p.identity.ed25519_public)


@pytest.mark.parametrize("name", of_kind("link-cert-"))
def test_certificate_refuses_another_key_and_a_changed_byte(name):
    v = VECTORS[name]
    cert, link_public = hex_field(v, "certificate"), hex_field(v, "link_static_public")
    other_link_key = ref.public_key(bytes([0x55]) * 32)
    with pytest.raises(ref.LinkError) as refused:
        ref.verify_certificate(cert, other_link_key)
    assert refused.value.status == "SENDER_AUTH_FAILED"
    for index in (0, 40, 64, 127):  # the X25519 key, the Ed25519 key, both signature halves
        changed = bytearray(cert)
        changed[index] ^= 0x01
        with pytest.raises(ref.LinkError) as refused:
            ref.verify_certificate(bytes(changed), link_public)
        assert refused.value.status == "SENDER_AUTH_FAILED"


# ---- handshake

@pytest.mark.parametrize("name", of_kind("link-handshake-"))
def test_handshake_vectors(name):
    v = VECTORS[name]
    run = run_handshake(v)
    assert (len(run.m1), len(run.m2), len(run.m3)) == (37, 229, 197)
    assert run.m1.hex() == v["m1"]
    assert run.m2.hex() == v["m2"]
    assert run.m3.hex() == v["m3"]
    assert run.initiator.handshake_hash.hex() == v["handshake_hash"] == run.responder.handshake_hash.hex()
    assert run.initiator.send_key.hex() == v["initiator_to_responder_key"] == run.responder.receive_key.hex()
    assert run.initiator.receive_key.hex() == v["responder_to_initiator_key"] == run.responder.send_key.hex()
    alice, bob = party(v["initiator"]), party(v["responder"])
    assert run.initiator.remote.identity_ed25519_public == bob.identity.ed25519_public
    assert run.responder.remote.identity_ed25519_public == alice.identity.ed25519_public


@pytest.mark.parametrize("name", of_kind("link-handshake-"))
def test_handshake_vectors_match_noiseprotocol(name):
    v = VECTORS[name]
    i, r, messages = noise_handshake(v)
    for step, (packet_field, message) in enumerate(zip(("m1", "m2", "m3"), messages), start=1):
        packet = hex_field(v, packet_field)
        assert packet[:2] == bytes([1, 3]) and int.from_bytes(packet[2:4], "big") == len(packet) - 4
        assert packet[4] == step and packet[5:] == message
    assert i.get_handshake_hash().hex() == v["handshake_hash"] == r.get_handshake_hash().hex()
    assert i.noise_protocol.cipher_state_encrypt.k.hex() == v["initiator_to_responder_key"]
    assert i.noise_protocol.cipher_state_decrypt.k.hex() == v["responder_to_initiator_key"]
    assert r.noise_protocol.cipher_state_decrypt.k.hex() == v["initiator_to_responder_key"]


def test_initiator_refuses_a_tampered_m2_and_a_certificate_for_another_key():
    v = VECTORS["link-handshake-alice-bob"]
    alice = party(v["initiator"])
    ephemeral = hex_field(v, "initiator_ephemeral_secret")

    def initiator() -> ref.Handshake:
        handshake = ref.Handshake(True, alice.static_secret, alice.certificate, ephemeral)
        handshake.write_m1()
        return handshake

    m2 = bytearray(hex_field(v, "m2"))
    m2[5 + 32 + 3] ^= 0x80  # inside the encrypted static key
    with pytest.raises(ref.LinkError) as refused:
        initiator().read_m2_write_m3(bytes(m2))
    assert refused.value.status == "TAMPERED"

    # Bob's real certificate, presented with a link key it does not certify.
    bob = party(v["responder"])
    impostor = ref.Handshake(False, bytes([0x66]) * 32, bob.certificate, hex_field(v, "responder_ephemeral_secret"))
    handshake = initiator()
    with pytest.raises(ref.LinkError) as refused:
        handshake.read_m2_write_m3(impostor.read_m1_write_m2(hex_field(v, "m1")))
    assert refused.value.status == "SENDER_AUTH_FAILED"

    with pytest.raises(ref.LinkError) as refused:
        initiator().read_m2_write_m3(hex_field(v, "m2")[:-1])
    assert refused.value.status == "MALFORMED_PACKET"


# ---- transport

def keys_of(v: Dict[str, str]) -> Tuple[bytes, bytes]:
    """(sending key, receiving key) for this packet's direction."""
    handshake = VECTORS[v["handshake"]]
    k1, k2 = hex_field(handshake, "initiator_to_responder_key"), hex_field(handshake, "responder_to_initiator_key")
    return {"initiator-to-responder": (k1, k1), "responder-to-initiator": (k2, k2)}[v["direction"]]


@pytest.mark.parametrize("name", of_kind("link-packet-"))
def test_link_packet_vectors(name):
    v = VECTORS[name]
    key, _ = keys_of(v)
    counter, kind, body = int(v["counter"]), int(v["kind"], 16), hex_field(v, "body")
    packet = ref.seal(key, counter, kind, body)
    assert packet.hex() == v["packet"]
    assert packet[:2] == bytes([1, 5]) and int.from_bytes(packet[2:4], "big") == len(packet) - 4
    assert int.from_bytes(packet[4:12], "big") == counter
    assert ref.Receiver(key).open(packet) == (kind, body)
    if kind == ref.KIND_PACKET:
        assert body == hex_field(VECTORS["wire-routed-message"], "packet")


@pytest.mark.parametrize("name", of_kind("link-packet-"))
def test_link_packet_vectors_match_noiseprotocol(name):
    """The explicit counter is Noise's nonce: noiseprotocol's own CipherState, with its
    nonce set to the counter and the header as ad, makes the same ciphertext."""
    v = VECTORS[name]
    i, r, _ = noise_handshake(VECTORS[v["handshake"]])
    sender = i if v["direction"] == "initiator-to-responder" else r
    cipher = sender.noise_protocol.cipher_state_encrypt
    packet = hex_field(v, "packet")
    cipher.set_nonce(int(v["counter"]))
    plaintext = bytes([int(v["kind"], 16)]) + hex_field(v, "body")
    assert cipher.encrypt_with_ad(packet[:12], plaintext) == packet[12:]


def test_receiver_drops_replays_old_counters_and_tampering_but_tolerates_gaps():
    v = VECTORS["link-handshake-alice-bob"]
    key = hex_field(v, "responder_to_initiator_key")
    receiver = ref.Receiver(key)
    keepalive = ref.seal(key, 0, ref.KIND_KEEPALIVE, b"")
    assert receiver.open(keepalive) == (ref.KIND_KEEPALIVE, b"")
    later = ref.seal(key, 7, ref.KIND_KEEPALIVE, b"")  # 1..6 lost
    tampered = bytearray(later)
    tampered[-1] ^= 1
    with pytest.raises(ref.LinkError) as refused:
        receiver.open(bytes(tampered))
    assert refused.value.status == "TAMPERED"
    assert receiver.open(later) == (ref.KIND_KEEPALIVE, b"")  # the forgery spent no counter
    for old in (later, keepalive, ref.seal(key, 5, ref.KIND_KEEPALIVE, b"")):
        with pytest.raises(ref.LinkError) as refused:
            receiver.open(old)
        assert refused.value.status == "EXPIRED"
    unknown = ref.seal(key, 8, 0x7f, b"future")
    with pytest.raises(ref.LinkError) as refused:
        receiver.open(unknown)
    assert refused.value.status == "UNKNOWN_PACKET_TYPE"
    with pytest.raises(ref.LinkError) as refused:
        receiver.open(unknown)  # authentic, so its counter was spent although it was dropped
    assert refused.value.status == "EXPIRED"
