"""An independent implementation of Ya OK's carried packets, written from docs/PROTOCOL.md
§10 with PyNaCl's libsodium primitives and the §3/§4.3 helpers of nacl_reference (no yaok
import): the carried tag, content, envelope, packet identity, claim hash and purge record."""

from __future__ import annotations

from typing import List, NamedTuple, Optional

from nacl import bindings as nb

from nacl_reference import BUCKETS, Keys, authenticator, blake2b, message_key, pad, pair_key

CARRIED_TYPE = 0x06
PURGE_TYPE = 0x07
CARRIED_ENVELOPE_VERSION = 3
CARRIED_KEY_KEY = b"YaOK-carried-v1"
CLAIM_KEY = b"YaOK-claim-v1"
IDENTITY_KEY = b"YaOK-carried-id-v1"
HOUR_MS = 3_600_000
MAX_LIFETIME_MS = 14 * 86_400_000
MAX_CONTENT = 39 + 10240


def carried_tag(key: bytes, sender_public: bytes, recipient_public: bytes, epoch: int) -> bytes:
    """BLAKE2b-64 keyed with the pair key over 0x06 || S || R || epoch (u32 BE)."""
    return blake2b(bytes([CARRIED_TYPE]) + sender_public + recipient_public + epoch.to_bytes(4, "big"), 8, key)


def expiry_hour(created_ms: int, lifetime_ms: int) -> int:
    """created + lifetime, rounded up to a whole hour."""
    assert 1 <= lifetime_ms <= MAX_LIFETIME_MS
    return -(-(created_ms + lifetime_ms) // HOUR_MS)


def claim_hash(claim: bytes) -> bytes:
    return blake2b(claim, 16, CLAIM_KEY)


def message_content(message_id: bytes, created_ms: int, claim: bytes, text: bytes) -> bytes:
    return b"\x01" + message_id + created_ms.to_bytes(6, "big") + claim + text


def ack_content(ack_id: bytes, created_ms: int, claim: bytes, acknowledged: List[bytes]) -> bytes:
    return b"\x02" + ack_id + created_ms.to_bytes(6, "big") + claim + bytes([len(acknowledged)]) + b"".join(acknowledged)


def authenticated_header(expiry: int, tag: bytes, hashed_claim: bytes, payload_length: int) -> bytes:
    """The 32 header bytes without hop limit and copy budget."""
    return bytes([1, CARRIED_TYPE]) + expiry.to_bytes(4, "big") + tag + hashed_claim + payload_length.to_bytes(2, "big")


def carried_ad(sender: bytes, recipient: bytes, ephemeral: bytes, header_ad: bytes) -> bytes:
    return bytes([CARRIED_ENVELOPE_VERSION]) + sender + recipient + ephemeral + header_ad


def seal(sender: Keys, recipient_public: bytes, content: bytes, created_ms: int, lifetime_ms: int,
         hop_limit: int, copy_budget: int, ephemeral_secret: bytes) -> bytes:
    """The encoded carried packet (PROTOCOL.md §10.4's sealing)."""
    expiry = expiry_hour(created_ms, lifetime_ms)
    tag = carried_tag(pair_key(sender, recipient_public), sender.x25519_public, recipient_public, expiry // 24)
    hashed = claim_hash(content[23:39])
    bucket = next(b for b in BUCKETS if b >= len(content) + 1)
    header_ad = authenticated_header(expiry, tag, hashed, 64 + bucket)
    ephemeral = nb.crypto_scalarmult_base(ephemeral_secret)
    shared = nb.crypto_scalarmult(ephemeral_secret, recipient_public)
    ad = carried_ad(sender.x25519_public, recipient_public, ephemeral, header_ad)
    auth = authenticator(nb.crypto_scalarmult(sender.x25519_secret, recipient_public),
                         sender.x25519_public, recipient_public, ad, content)
    key, nonce = message_key(shared, ephemeral, recipient_public, CARRIED_KEY_KEY)
    sealed = ephemeral + nb.crypto_aead_xchacha20poly1305_ietf_encrypt(auth + pad(content), ad, nonce, key)
    return header_ad[:2] + bytes([hop_limit, copy_budget]) + header_ad[2:] + sealed


def identity(packet: bytes) -> bytes:
    """BLAKE2b-128 keyed "YaOK-carried-id-v1" over the packet without bytes 2 and 3."""
    return blake2b(packet[:2] + packet[4:], 16, IDENTITY_KEY)


class Opened(NamedTuple):
    sender: bytes
    content: bytes


def open_(recipient: Keys, contacts: List[bytes], packet: bytes, now_ms: int) -> Opened:
    """Decode, check the time, find the sender by tag, open; AssertionError / nacl errors on failure."""
    assert packet[0] == 1 and packet[1] == CARRIED_TYPE and len(packet) >= 34 and packet[3] >= 1
    expiry = int.from_bytes(packet[4:8], "big")
    tag, hashed, length = packet[8:16], packet[16:32], int.from_bytes(packet[32:34], "big")
    assert length == len(packet) - 34, "bad length"
    assert now_ms < expiry * HOUR_MS <= now_ms + MAX_LIFETIME_MS + HOUR_MS + 900_000, "expired or over-long"
    sender = next((c for c in contacts
                   if carried_tag(pair_key(recipient, c), c, recipient.x25519_public, expiry // 24) == tag), None)
    assert sender is not None, "not for me"
    sealed = packet[34:]
    assert len(sealed) >= 128
    ephemeral = sealed[:32]
    key, nonce = message_key(nb.crypto_scalarmult(recipient.x25519_secret, ephemeral), ephemeral,
                             recipient.x25519_public, CARRIED_KEY_KEY)
    ad = carried_ad(sender, recipient.x25519_public, ephemeral, packet[:2] + packet[4:34])
    inner = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(sealed[32:], ad, nonce, key)
    auth, padded = inner[:16], inner[16:]
    stripped = padded.rstrip(b"\x00")
    assert stripped.endswith(b"\x80")
    content = stripped[:-1]
    assert len(content) <= MAX_CONTENT and next(b for b in BUCKETS if b >= len(content) + 1) == len(padded)
    assert nb.sodium_memcmp(auth, authenticator(nb.crypto_scalarmult(recipient.x25519_secret, sender),
                                                sender, recipient.x25519_public, ad, content))
    assert claim_hash(content[23:39]) == hashed, "claim is not the preimage"
    created = int.from_bytes(content[17:23], "big")
    assert 0 < expiry * HOUR_MS - created <= MAX_LIFETIME_MS + HOUR_MS
    return Opened(sender, content)


def purge_record(claims: List[bytes]) -> bytes:
    ordered = sorted(set(claims))
    assert 1 <= len(ordered) <= 255 and all(len(c) == 16 for c in ordered)
    return bytes([1, PURGE_TYPE, len(ordered)]) + b"".join(ordered)


def decode_purge_record(data: bytes) -> Optional[List[bytes]]:
    """The claims, or None for anything purge_record does not make."""
    if len(data) < 3 or data[0] != 1 or data[1] != PURGE_TYPE or data[2] == 0 or len(data) != 3 + 16 * data[2]:
        return None
    claims = [data[3 + 16 * i:19 + 16 * i] for i in range(data[2])]
    return claims if all(a < b for a, b in zip(claims, claims[1:])) else None
