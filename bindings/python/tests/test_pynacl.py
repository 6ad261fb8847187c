"""Cross-checks against PyNaCl, an independent binding of the same libsodium primitives:
the core's cards and envelopes must match the construction documented in the Swift sources
(reimplemented in nacl_reference.py), in both directions."""

from __future__ import annotations

import hashlib

import nacl.exceptions
import nacl.signing
import pytest

import yaok
from yaok import envelope

import nacl_reference as ref
from conftest import ALICE_SECRETS, BOB_SECRETS, EVE_SECRETS, MESSAGE_ID, TIMESTAMP_MS

EPHEMERAL_SECRET = bytes(range(192, 224))


@pytest.fixture
def alice_keys() -> ref.Keys:
    return ref.keys_from_secrets(ALICE_SECRETS)


@pytest.fixture
def bob_keys() -> ref.Keys:
    return ref.keys_from_secrets(BOB_SECRETS)


@pytest.fixture
def eve_keys() -> ref.Keys:
    return ref.keys_from_secrets(EVE_SECRETS)


# ---- identity and contact card

def test_card_signature_made_by_the_core_verifies_in_pynacl():
    with yaok.Identity.new("Zoë 🔒") as someone:
        card = ref.parse_card(someone.card)
    assert card.version == 1 and card.name == "Zoë 🔒"
    verify_key = nacl.signing.VerifyKey(card.signing_key)
    assert verify_key.verify(ref.CARD_CONTEXT + card.signed, card.signature) == ref.CARD_CONTEXT + card.signed
    with pytest.raises(nacl.exceptions.BadSignatureError):
        verify_key.verify(card.signed, card.signature)  # the context string is part of what is signed


def test_restored_keys_match_pynacl_derivation(alice, alice_card, alice_keys):
    parsed = ref.parse_card(alice.card)
    assert parsed.encryption_key == alice_keys.x25519_public
    assert parsed.signing_key == alice_keys.ed25519_public
    assert alice_card.public_keys == (alice_keys.x25519_public, alice_keys.ed25519_public)
    assert alice.fingerprint == ref.fingerprint(alice_keys.x25519_public, alice_keys.ed25519_public)
    assert alice.fingerprint == hashlib.sha256(alice_keys.x25519_public + alice_keys.ed25519_public).hexdigest().upper()
    assert alice.user_id == ref.user_id(alice_keys.x25519_public, alice_keys.ed25519_public)


def test_card_text_built_by_pynacl_is_identical(alice, alice_keys):
    """Ed25519 is deterministic, so the card is a reproducible test vector."""
    assert ref.make_card(alice_keys, "Alice") == alice.card
    with yaok.Identity.restore("山田 👩‍💻", ALICE_SECRETS) as other_name:
        assert ref.make_card(alice_keys, "山田 👩‍💻") == other_name.card


def test_card_signed_by_pynacl_decodes_in_the_core(alice_keys):
    with yaok.Card.decode(ref.make_card(alice_keys, "Alice from PyNaCl")) as card:
        assert card.name == "Alice from PyNaCl"
        assert card.public_keys == (alice_keys.x25519_public, alice_keys.ed25519_public)


def test_core_refuses_cards_pynacl_signed_wrongly(alice_keys, eve_keys):
    good = ref.parse_card(ref.make_card(alice_keys, "Alice"))
    # Alice's keys and name, signed by Eve: the signature does not match the signing key.
    forged_signature = nacl.signing.SigningKey(EVE_SECRETS[32:]).sign(ref.CARD_CONTEXT + good.signed).signature
    forged = ref.CARD_SCHEME + ref.b64url_encode(good.signed + forged_signature)
    # A changed name under the original signature.
    renamed = good.signed.replace(b"Alice", b"Alicf")
    altered = ref.CARD_SCHEME + ref.b64url_encode(renamed + good.signature)
    # Properly signed, but a version the core does not know.
    version_2 = ref.make_card(alice_keys, "Alice", version=2)
    # Properly signed, but an invalid display name.
    bad_name = ref.make_card(alice_keys, "A")
    for text in (forged, altered, version_2, bad_name):
        with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
            yaok.Card.decode(text)


def test_core_card_key_proof_verifies_with_pynacl(alice, alice_keys):
    card = ref.parse_card(alice.card)
    message = ref.key_proof_message(alice_keys.x25519_public, alice_keys.ed25519_public)
    assert ref.xeddsa_verify(alice_keys.x25519_public, message, card.key_proof)
    assert card.key_proof == ref.xeddsa_sign(alice_keys.x25519_secret, message)
    assert ref.card_is_valid(alice.card)


def test_core_refuses_a_card_that_borrows_someone_elses_encryption_key(alice_keys, eve_keys):
    """Eve signs a card with Alice's X25519 key and her own Ed25519 key: she cannot prove
    she holds Alice's key, whatever proof she puts in (issue 8 §3)."""
    borrowed = alice_keys.x25519_public
    proofs = [
        ref.xeddsa_sign(eve_keys.x25519_secret, ref.key_proof_message(borrowed, eve_keys.ed25519_public)),
        ref.xeddsa_sign(alice_keys.x25519_secret, ref.key_proof_message(alice_keys.x25519_public,
                                                                        alice_keys.ed25519_public)),
        bytes(64),
    ]
    for proof in proofs:
        text = ref.make_card(eve_keys, "Alice", encryption_key=borrowed, key_proof=proof)
        assert not ref.card_is_valid(text)
        with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
            yaok.Card.decode(text)


@pytest.mark.parametrize("key", [bytes(32), b"\x01" + bytes(31), bytes.fromhex(
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f")])
def test_core_refuses_a_card_with_a_low_order_encryption_key(eve_keys, key):
    assert ref.is_low_order(key)
    text = ref.make_card(eve_keys, "Eve", encryption_key=key, key_proof=bytes(64))
    with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
        yaok.Card.decode(text)


# ---- envelope: PyNaCl -> core

@pytest.mark.parametrize("body", [b"x", b"Hello, Bob!", bytes(63), bytes(range(256)) * 40])
def test_envelope_sealed_by_pynacl_opens_in_the_core(alice_keys, bob_keys, bob, alice_card, eve_card, body):
    sealed = ref.seal(alice_keys, bob_keys.x25519_public, body, MESSAGE_ID, TIMESTAMP_MS, EPHEMERAL_SECRET)
    assert envelope.open(bob, [eve_card, alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS) == (body, 1)


def test_fixed_test_vector(alice_keys, bob_keys, bob, alice_card):
    """Every input fixed (keys, ephemeral secret, message ID, time): a reproducible vector
    for docs/PROTOCOL.md. The expected bytes pin the reference implementation against drift."""
    sealed = ref.seal(alice_keys, bob_keys.x25519_public, b"Hello, Bob!", MESSAGE_ID, TIMESTAMP_MS,
                      EPHEMERAL_SECRET)
    assert len(sealed) == 104 + 64
    assert envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS) == (b"Hello, Bob!", 0)
    assert sealed.hex() == VECTOR_HEX


def test_pynacl_envelope_for_someone_else_is_not_for_me(alice_keys, bob_keys, eve, alice_card):
    sealed = ref.seal(alice_keys, bob_keys.x25519_public, b"hi", MESSAGE_ID, TIMESTAMP_MS, EPHEMERAL_SECRET)
    with pytest.raises(yaok.NotForMe):
        envelope.open(eve, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)


def test_wrong_authenticator_is_sender_auth_failed(alice_keys, bob_keys, eve_keys, bob, alice_card):
    """Eve claims to be Alice: a valid AEAD envelope carrying Alice's key, but Eve cannot
    compute Alice's static-static MAC. The core says SENDER_AUTH_FAILED, not TAMPERED."""
    ad = ref.associated_data(bob_keys.x25519_public, MESSAGE_ID, TIMESTAMP_MS,
                             ref.nb.crypto_scalarmult_base(EPHEMERAL_SECRET))
    eve_auth = ref.authenticator(ref.nb.crypto_scalarmult(eve_keys.x25519_secret, bob_keys.x25519_public),
                                 alice_keys.x25519_public, bob_keys.x25519_public, ad, b"I am Alice")
    impostor = alice_keys._replace(x25519_secret=eve_keys.x25519_secret)
    for sealed in (
        ref.seal(alice_keys, bob_keys.x25519_public, b"I am Alice", MESSAGE_ID, TIMESTAMP_MS,
                 EPHEMERAL_SECRET, auth_override=eve_auth),
        ref.seal(impostor, bob_keys.x25519_public, b"I am Alice", MESSAGE_ID, TIMESTAMP_MS, EPHEMERAL_SECRET),
        ref.seal(alice_keys, bob_keys.x25519_public, b"I am Alice", MESSAGE_ID, TIMESTAMP_MS,
                 EPHEMERAL_SECRET, auth_override=bytes(16)),
    ):
        with pytest.raises(yaok.SenderAuthFailed) as info:
            envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)
        assert info.value.status == 303


def test_bad_padding_is_malformed(alice_keys, bob_keys, bob, alice_card):
    for padded in (bytes(64), b"x" * 64, ref.pad(b"hi")[:63] + b"\x01", ref.pad(b"hi") + b"\x00"):
        sealed = ref.seal(alice_keys, bob_keys.x25519_public, b"hi", MESSAGE_ID, TIMESTAMP_MS,
                          EPHEMERAL_SECRET, padded_override=padded)
        with pytest.raises(yaok.MalformedEnvelope):
            envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)


@pytest.mark.parametrize("body, size", [(b"hi", 128), (b"hi", 16384), (b"x" * 12000, 16384)])
def test_padding_must_be_the_smallest_bucket_and_the_body_at_most_10_kib(alice_keys, bob_keys, bob, alice_card,
                                                                        body, size):
    """PROTOCOL.md §3: open accepts exactly what seal makes (issue 8 §10)."""
    padded = body + b"\x80" + bytes(size - len(body) - 1)
    assert ref.unpad(padded) is None
    sealed = ref.seal(alice_keys, bob_keys.x25519_public, body, MESSAGE_ID, TIMESTAMP_MS, EPHEMERAL_SECRET,
                      padded_override=padded)
    with pytest.raises(yaok.MalformedEnvelope):
        envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)


def test_pynacl_envelope_with_other_associated_data_is_tampered(alice_keys, bob_keys, bob, alice_card):
    sealed = ref.seal(alice_keys, bob_keys.x25519_public, b"hi", MESSAGE_ID, TIMESTAMP_MS, EPHEMERAL_SECRET)
    with pytest.raises(yaok.Tampered):
        envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS - 1)


# ---- envelope: core -> PyNaCl

@pytest.mark.parametrize("length", [1, 11, 64, 1000, 10240])
def test_envelope_sealed_by_the_core_decrypts_with_pynacl_alone(alice, bob_card, alice_keys, bob_keys, length):
    body = bytes((i * 31 + 7) % 256 for i in range(length))
    sealed = envelope.seal(alice, bob_card, body, MESSAGE_ID, TIMESTAMP_MS)
    opened = ref.open_(bob_keys, sealed, MESSAGE_ID, TIMESTAMP_MS)
    assert opened.body == body
    assert opened.sender_key == alice_keys.x25519_public
    assert opened.bucket == next(b for b in ref.BUCKETS if b > length)
    assert len(sealed) == 104 + opened.bucket


def test_core_envelope_binds_its_associated_data(alice, bob_card, bob_keys):
    sealed = envelope.seal(alice, bob_card, b"bound", MESSAGE_ID, TIMESTAMP_MS)
    with pytest.raises(nacl.exceptions.CryptoError):
        ref.open_(bob_keys, sealed, MESSAGE_ID, TIMESTAMP_MS + 1)
    with pytest.raises(nacl.exceptions.CryptoError):
        ref.open_(bob_keys, sealed, bytes(16), TIMESTAMP_MS)


def test_core_hides_the_sender_outside_the_ciphertext(alice, bob_card, alice_keys):
    sealed = envelope.seal(alice, bob_card, b"who am I", MESSAGE_ID, TIMESTAMP_MS)
    assert alice_keys.x25519_public not in sealed and alice_keys.ed25519_public not in sealed


# The fixed vector: Alice (secrets 00..3f) to Bob (40..7f), ephemeral secret c0..df,
# message ID 00..0f, timestamp 1700000000000, body "Hello, Bob!".
VECTOR_HEX = (
    "dc2cca31e8e43bbd91dff7e475cca3347eb478107d5bd765aba4ae4a30c35d4495e6640c2b2dc5e67707"
    "be6fdf26ad5c8938068ad126ca28055bef08f9e63676f1bab5eb0cff39cbd8eff3363fefca2a7cb5f26f"
    "0e8b7e5f190a0bd8cfabfd9d7f65f1d03aa5a84663c5ddd90efb48f6b0a01aee671ab1acfe46dfc56fef"
    "f68f83393fe5f0afbca265f92345a246d2cd68a3ddbc8fb3dd337f41bc7d6b1da92d014a474619fd437d"
)
