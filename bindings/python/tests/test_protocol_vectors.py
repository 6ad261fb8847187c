"""docs/PROTOCOL.md's test vectors, checked from outside the core: PyNaCl recomputes each one
from the document's inputs alone, and the core (through this binding) agrees."""

from __future__ import annotations

import re
from typing import Dict, List

import pytest

from nacl import bindings as nb

import yaok
from yaok import envelope, wire

import nacl_reference as ref
from conftest import REPO

PROTOCOL = REPO / "docs" / "PROTOCOL.md"


def read_vectors() -> Dict[str, Dict[str, str]]:
    """Fenced ```vector blocks: `key: value` lines; an indented line continues the value."""
    vectors: Dict[str, Dict[str, str]] = {}
    for block in re.findall(r"^```vector\n(.*?)^```", PROTOCOL.read_text(encoding="utf-8"), re.M | re.S):
        fields: Dict[str, str] = {}
        last = None
        for line in block.splitlines():
            if line.startswith((" ", "\t")) and last:
                fields[last] += line.strip()
            elif ":" in line:
                last, value = line.split(":", 1)
                fields[last.strip()] = value.strip()
        vectors[fields["name"]] = fields
    return vectors


VECTORS = read_vectors()


def of_kind(prefix: str) -> List[str]:
    return sorted(name for name in VECTORS if name.startswith(prefix))


def test_the_document_has_vectors():
    assert of_kind("identity-") and of_kind("card-") and of_kind("envelope-")
    assert len(of_kind("card-reject-")) == 4


@pytest.mark.parametrize("name", of_kind("identity-"))
def test_identity_vectors(name):
    v = VECTORS[name]
    secrets = bytes.fromhex(v["secrets"])
    keys = ref.keys_from_secrets(secrets)
    assert keys.x25519_public.hex() == v["x25519_public"]
    assert keys.ed25519_public.hex() == v["ed25519_public"]
    assert ref.user_id(keys.x25519_public, keys.ed25519_public) == v["user_id"]
    assert ref.fingerprint(keys.x25519_public, keys.ed25519_public) == v["fingerprint"]
    with yaok.Identity.restore(v["display_name"], secrets) as identity:
        assert identity.user_id == v["user_id"]
        assert identity.fingerprint == v["fingerprint"]


@pytest.mark.parametrize("name", [n for n in of_kind("card-") if not n.startswith("card-reject-")])
def test_card_vectors(name):
    v = VECTORS[name]
    owner = VECTORS[v["identity"]]
    keys = ref.keys_from_secrets(bytes.fromhex(owner["secrets"]))
    assert ref.edwards_from_montgomery(keys.x25519_public).hex() == v["edwards_key"]
    proof = ref.xeddsa_sign(keys.x25519_secret, ref.key_proof_message(keys.x25519_public, keys.ed25519_public))
    assert proof.hex() == v["key_proof"]
    prekey = None
    if "prekey_secret" in v:  # version 2 (§2, §13.4): the prekey of a fixed UTC day
        key_id = ref.PREKEY_BIT | int(v["prekey_day"])
        assert key_id == int(v["prekey_key_id"])
        prekey = (key_id, nb.crypto_scalarmult_base(bytes.fromhex(v["prekey_secret"])))
        assert prekey[1].hex() == v["prekey_public"]
    assert ref.make_card(keys, owner["display_name"], prekey=prekey) == v["text"]
    parsed = ref.parse_card(v["text"])
    assert ref.card_is_valid(v["text"]) and parsed.key_proof == proof and parsed.prekey == prekey
    with yaok.Card.decode(v["text"]) as card:
        assert card.name == owner["display_name"]
        assert card.public_keys == (keys.x25519_public, keys.ed25519_public)
    if prekey is None:
        with yaok.Identity.restore(owner["display_name"], bytes.fromhex(owner["secrets"])) as identity:
            assert identity.card == v["text"]


@pytest.mark.parametrize("name", of_kind("card-reject-"))
def test_card_reject_vectors(name):
    """Validly signed by the signer, but the X25519 key is not one the signer proved (or, in
    version 2, the prekey is not a prekey: a low-order key, an ID without the top bit)."""
    v = VECTORS[name]
    assert v["error"] == "invalidCard"
    signer = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["signer"]]["secrets"]))
    card = ref.parse_card(v["text"])
    assert card.signing_key == signer.ed25519_public
    ref.nb.crypto_sign_open(card.signature + ref.card_context(card.version) + card.signed, signer.ed25519_public)
    assert not ref.card_is_valid(v["text"])
    with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
        yaok.Card.decode(v["text"])


@pytest.mark.parametrize("name", of_kind("envelope-"))
def test_envelope_vectors(name):
    v = VECTORS[name]
    sender, recipient = VECTORS[v["sender"]], VECTORS[v["recipient"]]
    sender_keys = ref.keys_from_secrets(bytes.fromhex(sender["secrets"]))
    recipient_keys = ref.keys_from_secrets(bytes.fromhex(recipient["secrets"]))
    body = v["body_utf8"].encode("utf-8")
    message_id = bytes.fromhex(v["message_id"])
    timestamp = int(v["timestamp_ms"])
    sealed = ref.seal(sender_keys, recipient_keys.x25519_public, body, message_id, timestamp,
                      bytes.fromhex(v["ephemeral_secret"]))
    assert sealed.hex() == v["sealed"]
    opened = ref.open_(recipient_keys, sealed, message_id, timestamp)
    assert opened.body == body and opened.sender_key == sender_keys.x25519_public
    with yaok.Identity.restore(recipient["display_name"], bytes.fromhex(recipient["secrets"])) as me, \
            yaok.Identity.restore(sender["display_name"], bytes.fromhex(sender["secrets"])) as them, \
            yaok.Card.decode(them.card) as their_card:
        assert envelope.open(me, [their_card], sealed, message_id, timestamp) == (body, 0)


def test_routing_tag_vector():
    """PROTOCOL.md §4.3: the pair key from either side's secret, the tag each way."""
    v = VECTORS["wire-routing-tag"]
    alice = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["sender"]]["secrets"]))
    bob = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["recipient"]]["secrets"]))
    created = int(v["created_ms"])
    assert created // ref.DAY_MS == int(v["day"])
    key = ref.pair_key(alice, bob.x25519_public)
    assert key == ref.pair_key(bob, alice.x25519_public)
    assert key.hex() == v["pair_key"]
    assert ref.routing_tag(key, alice.x25519_public, bob.x25519_public, created).hex() == v["routing_tag"]
    assert ref.routing_tag(key, bob.x25519_public, alice.x25519_public, created).hex() == v["reverse_routing_tag"]
    # Version 1's tag, computable from Bob's card alone, is not it.
    v1 = ref.blake2b(bob.x25519_public + (created // ref.DAY_MS).to_bytes(4, "big"), 8, b"YaOK-route-v1")
    assert v1.hex() != v["routing_tag"]


@pytest.mark.parametrize("name", of_kind("wire-sealed-"))
def test_sealed_message_vectors(name):
    """A whole message packet (header whose authenticated bytes are the packet envelope's
    header_ad, §3.1 and §4.2) rebuilt from the document's inputs with PyNaCl alone."""
    v = VECTORS[name]
    sender = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["sender"]]["secrets"]))
    recipient = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["recipient"]]["secrets"]))
    eve = ref.keys_from_secrets(bytes(range(0x80, 0xc0)))
    body = v["body_utf8"].encode("utf-8")
    message_id = bytes.fromhex(v["message_id"])
    created = int(v["created_ms"])
    tag = ref.routing_tag(ref.pair_key(sender, recipient.x25519_public), sender.x25519_public,
                          recipient.x25519_public, created)
    assert tag.hex() == v["routing_tag"]
    bucket = next(b for b in ref.BUCKETS if b >= len(body) + 1)
    header, authenticated = ref.routed_header(1, int(v["hop_limit"]), message_id, created, int(v["lifetime_min"]),
                                              tag, 64 + bucket)
    assert authenticated.hex() == v["authenticated"]
    packet = ref.message_packet(sender, recipient.x25519_public, body, message_id, created, int(v["lifetime_min"]),
                                int(v["hop_limit"]), bytes.fromhex(v["ephemeral_secret"]))
    assert packet[:37] == header and len(packet) == 37 + 64 + bucket
    assert packet.hex() == v["packet"]
    # The recipient finds the sender by the tag among its contacts; nobody else does.
    assert ref.open_message_packet(recipient, [eve.x25519_public, sender.x25519_public], packet) == \
        (sender.x25519_public, body)
    for opener, contacts in ((recipient, [eve.x25519_public]), (eve, [sender.x25519_public, recipient.x25519_public])):
        with pytest.raises(AssertionError, match="not for me"):
            ref.open_message_packet(opener, contacts, packet)
    # Neither the hint nor the sender key is in the packet.
    assert sender.x25519_public not in packet and ref.hint(packet[37:69], recipient.x25519_public) not in packet


def test_text_repair_vector():
    """PROTOCOL.md §3.2: a body that is not UTF-8 is stored with one U+FFFD per maximal
    ill-formed subpart, as Python's own decoder replaces them."""
    v = VECTORS["text-repair"]
    assert bytes.fromhex(v["body"]).decode("utf-8", errors="replace").encode("utf-8").hex() == v["text"]


def test_ack_vector():
    """PROTOCOL.md §6.2: the ack key from either side, and the whole ack packet (its own
    header as associated data, no padding) rebuilt with PyNaCl alone."""
    v = VECTORS["ack-bob-to-alice"]
    acker = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["acker"]]["secrets"]))
    ackee = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["ackee"]]["secrets"]))
    key = ref.ack_key(acker, ackee.x25519_public, own_is_acker=True)
    assert key == ref.ack_key(ackee, acker.x25519_public, own_is_acker=False)
    assert key.hex() == v["ack_key"]
    assert ref.ack_key(ackee, acker.x25519_public, own_is_acker=True) != key  # the other direction
    created = int(v["created_ms"])
    tag = ref.routing_tag(ref.pair_key(acker, ackee.x25519_public), acker.x25519_public, ackee.x25519_public,
                          created)
    assert tag.hex() == v["routing_tag"] == VECTORS["wire-routing-tag"]["reverse_routing_tag"]
    acked = bytes.fromhex(v["acknowledged"])
    assert acked.hex() == VECTORS["wire-sealed-message"]["message_id"]
    packet = ref.ack_packet(key, [acked], bytes.fromhex(v["message_id"]), created, int(v["lifetime_min"]),
                            int(v["hop_limit"]), tag, bytes.fromhex(v["nonce"]))
    assert packet.hex() == v["packet"] and len(packet) == 94
    assert packet[37:].hex() == v["payload"]
    assert (packet[:2] + packet[3:37]).hex() == v["authenticated"]
    assert ref.open_ack(key, packet) == [acked]
    assert nb.crypto_aead_xchacha20poly1305_ietf_decrypt(packet[61:], packet[:2] + packet[3:37], packet[37:61],
                                                         key).hex() == v["plaintext"]
    # The core decodes it as an ack with these fields.
    fields = wire.decode_packet(packet)
    assert fields["type"] == "ack" and fields["lifetime_min"] == 10080 and fields["routing_tag"] == v["routing_tag"]


def test_relay_mailbox_vector():
    """Relay mailboxes (§8.2), per relay identifier, recomputed with PyNaCl and hashlib alone."""
    import hashlib
    import nacl.signing
    v = VECTORS["relay-mailbox"]
    alice = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["sender"]]["secrets"]))
    bob = ref.keys_from_secrets(bytes.fromhex(VECTORS[v["recipient"]]["secrets"]))
    key = ref.pair_key(alice, bob.x25519_public)
    assert key.hex() == v["pair_key"]
    relay = bytes.fromhex(v["relay_id"])
    assert len(relay) == 16

    def seed(sender: bytes, recipient: bytes) -> bytes:
        return hashlib.blake2b(b"YaOK-mailbox-v1" + relay + sender + recipient, digest_size=32, key=key).digest()
    ab, ba = seed(alice.x25519_public, bob.x25519_public), seed(bob.x25519_public, alice.x25519_public)
    assert ab.hex() == v["mailbox_seed"] and ba.hex() == v["reverse_mailbox_seed"]
    assert bytes(nacl.signing.SigningKey(ab).verify_key).hex() == v["mailbox_id"]
    assert bytes(nacl.signing.SigningKey(ba).verify_key).hex() == v["reverse_mailbox_id"]


def test_relay_login_vector():
    """CHALLENGE, AUTH and a padded SUBSCRIBE (§8.3) recomputed with PyNaCl alone."""
    import nacl.signing
    v = VECTORS["relay-login"]
    pseudonym = nacl.signing.SigningKey(bytes.fromhex(v["pseudonym_seed"]))
    public = bytes(pseudonym.verify_key)
    assert public.hex() == v["pseudonym"]
    nonce, binding, relay = bytes.fromhex(v["nonce"]), bytes.fromhex(v["binding"]), bytes.fromhex(v["relay_id"])
    assert (bytes([0x81, 0x01]) + nonce + relay).hex() == v["challenge_frame"].replace(" ", "")
    auth = pseudonym.sign(b"YaOK-relay-auth-v1" + nonce + binding).signature
    assert auth.hex() == v["auth_signature"].replace(" ", "")
    assert (bytes([0x01, 0x01]) + public + auth).hex() == v["auth_frame"].replace(" ", "")
    mailbox = nacl.signing.SigningKey(bytes.fromhex(v["mailbox_seed"]))
    assert bytes(mailbox.verify_key).hex() == VECTORS["relay-mailbox"]["reverse_mailbox_id"]
    proof = mailbox.sign(b"YaOK-relay-mailbox-v1" + nonce + binding + public).signature
    assert proof.hex() == v["subscribe_signature"].replace(" ", "")
    frame = bytes([0x02, 0x00, 0x01]) + bytes(mailbox.verify_key) + proof
    assert frame.hex() == v["subscribe_frame_head"].replace(" ", "")
    # 64 slots of 96 bytes, whatever the count: the unused ones are zero.
    assert int(v["subscribe_frame_length"]) == 3 + 64 * 96


def test_relay_post_vector():
    """A signed POST and a padded DELETE (§8.3) recomputed with PyNaCl alone."""
    import nacl.signing
    v = VECTORS["relay-post"]
    mailbox = nacl.signing.SigningKey(bytes.fromhex(v["mailbox_seed"]))
    assert bytes(mailbox.verify_key).hex() == VECTORS["relay-mailbox"]["mailbox_id"]
    packet = bytes.fromhex(VECTORS[v["packet"]]["packet"].replace(" ", ""))
    signature = mailbox.sign(b"YaOK-relay-post-v1" + packet).signature
    assert signature.hex() == v["post_signature"].replace(" ", "")
    frame = bytes([0x03]) + (1).to_bytes(4, "big") + bytes(mailbox.verify_key) + signature + packet
    assert frame.hex() == v["post_frame"].replace(" ", "")
    # What the relay checks: the mailbox ID is the key that signed this packet.
    mailbox.verify_key.verify(b"YaOK-relay-post-v1" + packet, signature)
    ref_ = bytes.fromhex(VECTORS["relay-mailbox"]["reverse_mailbox_id"]) + bytes.fromhex(v["delete_message_id"])
    assert (bytes([0x04, 0x00, 0x01]) + ref_).hex() == v["delete_frame_head"].replace(" ", "")
    assert int(v["delete_frame_length"]) == 3 + 16 * 48
