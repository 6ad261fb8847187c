"""docs/PROTOCOL.md §5.8–5.10 (anonymous links and contact recognition), recomputed from the
document's inputs alone: the anonymous handshake with noise_reference.py's Noise state and,
independently, with the `noiseprotocol` package; the contact link key, probe markers (and
their bit positions) and proofs with hashlib's BLAKE2b and PyNaCl's X25519."""

from __future__ import annotations

import hashlib
from typing import Dict, List, Tuple

import pytest
from nacl import bindings as nb
from noise.connection import Keypair, NoiseConnection

import noise_reference as ref
from test_protocol_vectors import VECTORS, of_kind

PROLOGUE_V2 = b"YaOK-link-v2"
CONTACT_DOMAIN = b"YaOK-contact-link-v1"
PROBE_CONTEXT = b"YaOK-contact-probe-v1"
PROOF_CONTEXT = b"YaOK-contact-proof-v1"
FILTER_BITS = 8192


def hx(v: Dict[str, str], key: str) -> bytes:
    return bytes.fromhex(v[key])


def packet(step: int, message: bytes) -> bytes:
    """Steps 0x11, 0x12, 0x13: §5.2's are 1, 2, 3."""
    return ref.handshake_packet(0x10 + step, message)


def anonymous_handshake(v: Dict[str, str]) -> Tuple[List[bytes], bytes, bytes, bytes]:
    """XX, prologue "YaOK-link-v2", per-link static keys, empty payloads."""
    i_s, r_s = hx(v, "initiator_static_secret"), hx(v, "responder_static_secret")
    i_e, r_e = hx(v, "initiator_ephemeral_secret"), hx(v, "responder_ephemeral_secret")
    i, r = ref.SymmetricState(ref.PROTOCOL_NAME), ref.SymmetricState(ref.PROTOCOL_NAME)
    for st in (i, r):
        st.mix_hash(PROLOGUE_V2)
    # m1: -> e
    i.mix_hash(ref.public_key(i_e))
    m1 = ref.public_key(i_e) + i.encrypt_and_hash(b"")
    r.mix_hash(m1[:32]); r.decrypt_and_hash(b"")
    # m2: <- e, ee, s, es
    r.mix_hash(ref.public_key(r_e))
    r.mix_key(ref.dh(r_e, m1[:32]))
    m2 = ref.public_key(r_e) + r.encrypt_and_hash(ref.public_key(r_s))
    r.mix_key(ref.dh(r_s, m1[:32]))
    m2 += r.encrypt_and_hash(b"")
    i.mix_hash(m2[:32]); i.mix_key(ref.dh(i_e, m2[:32]))
    rs = i.decrypt_and_hash(m2[32:80]); i.mix_key(ref.dh(i_e, rs))
    assert i.decrypt_and_hash(m2[80:]) == b""
    # m3: -> s, se
    m3 = i.encrypt_and_hash(ref.public_key(i_s))
    i.mix_key(ref.dh(i_s, m2[:32]))
    m3 += i.encrypt_and_hash(b"")
    i_rs = r.decrypt_and_hash(m3[:48]); r.mix_key(ref.dh(r_e, i_rs))
    assert r.decrypt_and_hash(m3[48:]) == b""
    assert i.h == r.h and i.split() == r.split()
    k1, k2 = i.split()
    return [packet(1, m1), packet(2, m2), packet(3, m3)], i.h, k1, k2


def identity_secret(name: str) -> bytes:
    return hx(VECTORS[name], "secrets")[:32]


def identity_public(name: str) -> bytes:
    return hx(VECTORS[name], "x25519_public")


def contact_link_key(own: str, peer: str) -> bytes:
    shared = nb.crypto_scalarmult(identity_secret(own), identity_public(peer))
    return hashlib.blake2b(shared, key=CONTACT_DOMAIN, digest_size=32).digest()


def mac(key: bytes, context: bytes, initiator: bool, h: bytes) -> bytes:
    return hashlib.blake2b(context + bytes([1 if initiator else 2]) + h, key=key, digest_size=32).digest()


def positions(marker: bytes) -> List[int]:
    return [int.from_bytes(marker[j:j + 2], "big") % FILTER_BITS for j in range(0, 32, 2)]


def test_the_document_has_the_vectors():
    assert of_kind("link-anon-handshake") and of_kind("contact-recognition-")


@pytest.mark.parametrize("name", of_kind("link-anon-handshake"))
def test_anonymous_handshake(name):
    v = VECTORS[name]
    (m1, m2, m3), h, k1, k2 = anonymous_handshake(v)
    assert (len(m1), len(m2), len(m3)) == (37, 101, 69)
    assert (m1.hex(), m2.hex(), m3.hex()) == (v["m1"].replace(" ", ""), hx(v, "m2").hex(), hx(v, "m3").hex())
    assert h == hx(v, "handshake_hash")
    assert (k1, k2) == (hx(v, "initiator_to_responder_key"), hx(v, "responder_to_initiator_key"))


@pytest.mark.parametrize("name", of_kind("link-anon-handshake"))
def test_anonymous_handshake_with_noiseprotocol(name):
    v = VECTORS[name]
    sides = []
    for initiator, s, e in ((True, "initiator_static_secret", "initiator_ephemeral_secret"),
                            (False, "responder_static_secret", "responder_ephemeral_secret")):
        c = NoiseConnection.from_name(ref.PROTOCOL_NAME)
        c.set_prologue(PROLOGUE_V2)
        c.set_as_initiator() if initiator else c.set_as_responder()
        c.set_keypair_from_private_bytes(Keypair.STATIC, hx(v, s))
        c.set_keypair_from_private_bytes(Keypair.EPHEMERAL, hx(v, e))
        with pytest.warns(UserWarning, match="ephemeral"):
            c.start_handshake()
        sides.append(c)
    i, r = sides
    m1 = bytes(i.write_message(b"")); assert r.read_message(m1) == b""
    m2 = bytes(r.write_message(b"")); assert i.read_message(m2) == b""
    m3 = bytes(i.write_message(b"")); assert r.read_message(m3) == b""
    assert [packet(n, m) for n, m in ((1, m1), (2, m2), (3, m3))] == [hx(v, "m1"), hx(v, "m2"), hx(v, "m3")]
    assert i.get_handshake_hash() == hx(v, "handshake_hash")


@pytest.mark.parametrize("name", of_kind("contact-recognition-"))
def test_contact_recognition(name):
    v = VECTORS[name]
    h = hx(VECTORS[v["handshake"]], "handshake_hash")
    ck = contact_link_key(v["initiator"], v["responder"])
    assert ck == contact_link_key(v["responder"], v["initiator"])  # the same on both sides
    assert ck == hx(v, "contact_link_key")
    for role, initiator in (("initiator", True), ("responder", False)):
        marker = mac(ck, PROBE_CONTEXT, initiator, h)
        assert marker == hx(v, f"{role}_marker")
        assert positions(marker) == [int(p) for p in v[f"{role}_positions"].split()]
        assert mac(ck, PROOF_CONTEXT, initiator, h) == hx(v, f"{role}_proof")
