"""An independent implementation of Ya OK's contact card and message envelope, written from
the construction documented in Sources/YaOK/Crypto/{ContactCard,Envelope,PublicIdentity}.swift
using PyNaCl's libsodium primitives only (no yaok import). The tests run it against the core.
"""

from __future__ import annotations

import base64
from typing import NamedTuple, Optional, Tuple

from nacl import bindings as nb

ENVELOPE_VERSION = 1
HINT_KEY = b"YaOK-hint-v1"
MESSAGE_KEY_KEY = b"YaOK-envelope-v1"
AUTH_KEY_KEY = b"YaOK-auth-v1"
USER_ID_KEY = b"YaOK-user-id-v1"
CARD_CONTEXT = b"YaOK-card-v1"
CARD_SCHEME = "yaok:1:"
BUCKETS = [64 << k for k in range(9)]  # 64 … 16384


def blake2b(data: bytes, size: int, key: bytes) -> bytes:
    """Keyed BLAKE2b (libsodium crypto_generichash): salt and personalisation left empty."""
    return nb.crypto_generichash_blake2b_salt_personal(data, digest_size=size, key=key)


# ---- identity

class Keys(NamedTuple):
    x25519_secret: bytes
    x25519_public: bytes
    ed25519_public: bytes
    ed25519_secret: bytes  # libsodium layout: seed || public


def keys_from_secrets(secrets: bytes) -> Keys:
    """yaok_identity_restore's 64 bytes: X25519 secret key (32) || Ed25519 seed (32)."""
    assert len(secrets) == 64
    x_secret = secrets[:32]
    ed_public, ed_secret = nb.crypto_sign_seed_keypair(secrets[32:])
    return Keys(x_secret, nb.crypto_scalarmult_base(x_secret), ed_public, ed_secret)


def fingerprint(enc: bytes, sign: bytes) -> str:
    """SHA-256 over encryption key || signing key, upper-case hex."""
    return nb.crypto_hash_sha256(enc + sign).hex().upper()


def user_id(enc: bytes, sign: bytes) -> str:
    """BLAKE2b-128 keyed "YaOK-user-id-v1" over encryption key || signing key, lower-case hex."""
    return blake2b(enc + sign, 16, USER_ID_KEY).hex()


# ---- contact card

class ParsedCard(NamedTuple):
    version: int
    encryption_key: bytes
    signing_key: bytes
    name: str
    signed: bytes      # every byte before the signature
    signature: bytes


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def parse_card(text: str) -> ParsedCard:
    """`yaok:1:` + base64url(version || X25519 (32) || Ed25519 (32) || u16 BE name length ||
    name || Ed25519 signature (64))."""
    assert text.startswith(CARD_SCHEME)
    raw = b64url_decode(text[len(CARD_SCHEME):])
    name_length = int.from_bytes(raw[65:67], "big")
    end = 67 + name_length
    assert len(raw) == end + 64
    return ParsedCard(raw[0], raw[1:33], raw[33:65], raw[67:end].decode("utf-8"), raw[:end], raw[end:])


def make_card(keys: Keys, name: str, version: int = 1) -> str:
    """A card signed over "YaOK-card-v1" || signed part."""
    name_bytes = name.encode("utf-8")
    signed = bytes([version]) + keys.x25519_public + keys.ed25519_public + len(name_bytes).to_bytes(2, "big") + name_bytes
    signature = nb.crypto_sign(CARD_CONTEXT + signed, keys.ed25519_secret)[:64]  # detached: first 64 bytes
    return CARD_SCHEME + b64url_encode(signed + signature)


# ---- envelope

def pad(body: bytes) -> bytes:
    """ISO/IEC 7816-4 (sodium_pad) to the smallest bucket holding len(body) + 1."""
    size = next(b for b in BUCKETS if b >= len(body) + 1)
    return body + b"\x80" + bytes(size - len(body) - 1)


def unpad(padded: bytes) -> Optional[bytes]:
    if len(padded) not in BUCKETS:
        return None
    stripped = padded.rstrip(b"\x00")
    if not stripped.endswith(b"\x80"):
        return None
    return stripped[:-1]


def associated_data(recipient: bytes, message_id: bytes, timestamp_ms: int, ephemeral: bytes,
                    header_ad: bytes = b"") -> bytes:
    """version || recipient key || message ID || timestamp (u64 BE) || ephemeral key ||
    the packet header's authenticated bytes (empty for a bare envelope)."""
    return (bytes([ENVELOPE_VERSION]) + recipient + message_id + timestamp_ms.to_bytes(8, "big") + ephemeral
            + header_ad)


def hint(ephemeral: bytes, recipient: bytes) -> bytes:
    return blake2b(ephemeral + recipient, 8, HINT_KEY)


def message_key(shared: bytes, ephemeral: bytes, recipient: bytes) -> Tuple[bytes, bytes]:
    okm = blake2b(shared + ephemeral + recipient, 64, MESSAGE_KEY_KEY)
    return okm[:32], okm[32:56]


def authenticator(static_shared: bytes, sender: bytes, recipient: bytes, ad: bytes, body: bytes) -> bytes:
    auth_key = blake2b(static_shared + sender + recipient, 32, AUTH_KEY_KEY)
    return blake2b(ad + body, 16, auth_key)


def seal(sender: Keys, recipient_public: bytes, body: bytes, message_id: bytes, timestamp_ms: int,
         ephemeral_secret: bytes, auth_override: Optional[bytes] = None,
         padded_override: Optional[bytes] = None, header_ad: bytes = b"") -> bytes:
    """E || hint || XChaCha20-Poly1305(key, nonce, AD; S || auth || pad(body))."""
    ephemeral = nb.crypto_scalarmult_base(ephemeral_secret)
    shared = nb.crypto_scalarmult(ephemeral_secret, recipient_public)
    ad = associated_data(recipient_public, message_id, timestamp_ms, ephemeral, header_ad)
    auth = auth_override if auth_override is not None else authenticator(
        nb.crypto_scalarmult(sender.x25519_secret, recipient_public),
        sender.x25519_public, recipient_public, ad, body)
    inner = sender.x25519_public + auth + (padded_override if padded_override is not None else pad(body))
    key, nonce = message_key(shared, ephemeral, recipient_public)
    cipher = nb.crypto_aead_xchacha20poly1305_ietf_encrypt(inner, ad, nonce, key)
    return ephemeral + hint(ephemeral, recipient_public) + cipher


class OpenedByNaCl(NamedTuple):
    sender_key: bytes
    body: bytes
    bucket: int


def open_(recipient: Keys, sealed: bytes, message_id: bytes, timestamp_ms: int,
          header_ad: bytes = b"") -> OpenedByNaCl:
    """Opens and fully verifies an envelope; raises AssertionError / nacl errors on failure."""
    ephemeral, hint_bytes, cipher = sealed[:32], sealed[32:40], sealed[40:]
    assert hint_bytes == hint(ephemeral, recipient.x25519_public), "hint does not match"
    shared = nb.crypto_scalarmult(recipient.x25519_secret, ephemeral)
    key, nonce = message_key(shared, ephemeral, recipient.x25519_public)
    ad = associated_data(recipient.x25519_public, message_id, timestamp_ms, ephemeral, header_ad)
    inner = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, ad, nonce, key)
    sender_key, auth, padded = inner[:32], inner[32:48], inner[48:]
    body = unpad(padded)
    assert body, "bad padding"
    expected = authenticator(nb.crypto_scalarmult(recipient.x25519_secret, sender_key),
                             sender_key, recipient.x25519_public, ad, body)
    assert nb.sodium_memcmp(auth, expected), "sender authenticator does not verify"
    return OpenedByNaCl(sender_key, body, len(padded))
