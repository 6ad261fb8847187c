"""An independent implementation of the forward-secret packet envelope (docs/PROTOCOL.md
§13.2), written from the document with PyNaCl's libsodium primitives (no yaok import). The
tests recompute §13's vectors with it; the Swift tests check the core against the same ones."""

from __future__ import annotations

from typing import List, NamedTuple, Tuple

from nacl import bindings as nb

import nacl_reference as ref

FS_ENVELOPE_VERSION = 3
FS_MESSAGE_KEY_KEY = b"YaOK-envelope-v3"
SELECTOR_KEY = b"YaOK-rk-select-v1"


class ReceiverKey(NamedTuple):
    key_id: int
    public: bytes

    def encoded(self) -> bytes:
        return self.key_id.to_bytes(4, "big") + self.public


class Announcement(NamedTuple):
    key: ReceiverKey
    release: int

    def encoded(self) -> bytes:
        return self.key.encoded() + self.release.to_bytes(4, "big")


def receiver_key(key_id: int, secret: bytes) -> ReceiverKey:
    return ReceiverKey(key_id, nb.crypto_scalarmult_base(secret))


def selector(receiver_public: bytes, ephemeral: bytes) -> bytes:
    return ref.blake2b(receiver_public + ephemeral, 4, SELECTOR_KEY)


def associated_data(sender: bytes, recipient: bytes, receiver_public: bytes, message_id: bytes,
                    timestamp_ms: int, ephemeral: bytes, header_ad: bytes) -> bytes:
    """0x03 || S || R || K || message ID || timestamp (u64 BE) || E || header_ad."""
    return (bytes([FS_ENVELOPE_VERSION]) + sender + recipient + receiver_public + message_id
            + timestamp_ms.to_bytes(8, "big") + ephemeral + header_ad)


def seal(sender: ref.Keys, recipient_public: bytes, receiver: ReceiverKey, announce: Announcement, body: bytes,
         message_id: bytes, timestamp_ms: int, ephemeral_secret: bytes, header_ad: bytes) -> bytes:
    ephemeral = nb.crypto_scalarmult_base(ephemeral_secret)
    shared = nb.crypto_scalarmult(ephemeral_secret, receiver.public)
    ad = associated_data(sender.x25519_public, recipient_public, receiver.public, message_id, timestamp_ms,
                         ephemeral, header_ad)
    announced = announce.encoded()
    auth = ref.authenticator(nb.crypto_scalarmult(sender.x25519_secret, recipient_public),
                             sender.x25519_public, recipient_public, ad + announced, body)
    key, nonce = ref.message_key(shared, ephemeral, receiver.public, FS_MESSAGE_KEY_KEY)
    cipher = nb.crypto_aead_xchacha20poly1305_ietf_encrypt(auth + announced + ref.pad(body), ad, nonce, key)
    return selector(receiver.public, ephemeral) + ephemeral + cipher


def open_(recipient: ref.Keys, sender_public: bytes, receiver_secrets: List[Tuple[int, bytes]], sealed: bytes,
          message_id: bytes, timestamp_ms: int, header_ad: bytes) -> Tuple[bytes, Announcement, int]:
    """(body, announced key, ID of the receiver key that opened it); AssertionError or a
    nacl error on any failure, "no receiver key" when no retained key's selector matches."""
    assert len(sealed) >= 4 + 32 + 16 + 40 + 64 + 16, "too short"
    wanted, ephemeral, cipher = sealed[:4], sealed[4:36], sealed[36:]
    matches = [(i, s) for i, s in receiver_secrets if selector(nb.crypto_scalarmult_base(s), ephemeral) == wanted]
    assert matches, "no receiver key"
    key_id, secret = matches[0]
    public = nb.crypto_scalarmult_base(secret)
    key, nonce = ref.message_key(nb.crypto_scalarmult(secret, ephemeral), ephemeral, public, FS_MESSAGE_KEY_KEY)
    ad = associated_data(sender_public, recipient.x25519_public, public, message_id, timestamp_ms, ephemeral,
                         header_ad)
    inner = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, ad, nonce, key)
    auth, announced, padded = inner[:16], inner[16:56], inner[56:]
    body = ref.unpad(padded)
    assert body, "bad padding"
    expected = ref.authenticator(nb.crypto_scalarmult(recipient.x25519_secret, sender_public),
                                 sender_public, recipient.x25519_public, ad + announced, body)
    assert nb.sodium_memcmp(auth, expected), "sender authenticator does not verify"
    announced_id = int.from_bytes(announced[:4], "big")
    assert announced_id != 0, "receiver key ID 0 is reserved"
    release = int.from_bytes(announced[36:], "big")
    return body, Announcement(ReceiverKey(announced_id, announced[4:36]), release), key_id


# ---- the ack of a forward-secret pair (§13.3): count (0..255) || IDs || announcement

def ack_packet(key: bytes, acked: List[bytes], announcement: Announcement, message_id: bytes, created_ms: int,
               lifetime_min: int, hop_limit: int, tag: bytes, nonce: bytes) -> bytes:
    plaintext = bytes([len(acked)]) + b"".join(acked) + announcement.encoded()
    header, authenticated = ref.routed_header(2, hop_limit, message_id, created_ms, lifetime_min, tag,
                                              24 + len(plaintext) + 16)
    return header + nonce + nb.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, authenticated, nonce, key)


def open_ack(key: bytes, packet: bytes) -> Tuple[List[bytes], Announcement]:
    payload = packet[37:]
    plaintext = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(payload[24:], packet[:2] + packet[3:37],
                                                              payload[:24], key)
    count = plaintext[0]
    assert len(plaintext) == 1 + 16 * count + 40, "bad ack plaintext"
    ids = [plaintext[1 + 16 * i:17 + 16 * i] for i in range(count)]
    a = plaintext[1 + 16 * count:]
    key_id = int.from_bytes(a[:4], "big")
    assert key_id != 0, "receiver key ID 0 is reserved"
    return ids, Announcement(ReceiverKey(key_id, a[4:36]), int.from_bytes(a[36:], "big"))


# ---- a carried copy sealed to a receiver key (§13.6): §10.4's packet, §13.2's selector
# and announcement, AD 0x04 || S || R || K || E || header_ad, domain "YaOK-carried-v2"

FS_CARRIED_VERSION = 4
FS_CARRIED_KEY_KEY = b"YaOK-carried-v2"
FS_OVERHEAD = 4 + 32 + 16 + 40 + 16


def carried_ad(sender: bytes, recipient: bytes, receiver_public: bytes, ephemeral: bytes, header_ad: bytes) -> bytes:
    return bytes([FS_CARRIED_VERSION]) + sender + recipient + receiver_public + ephemeral + header_ad


def seal_carried(sender: ref.Keys, recipient_public: bytes, receiver: ReceiverKey, announce: Announcement,
                 content: bytes, created_ms: int, lifetime_ms: int, hop_limit: int, copy_budget: int,
                 ephemeral_secret: bytes) -> bytes:
    """The encoded carried packet, sealed to `receiver` (a receiver key of the recipient's)."""
    import carried_reference as carried
    expiry = carried.expiry_hour(created_ms, lifetime_ms)
    tag = carried.carried_tag(ref.pair_key(sender, recipient_public), sender.x25519_public, recipient_public,
                              expiry // 24)
    bucket = next(b for b in ref.BUCKETS if b >= len(content) + 1)
    header_ad = carried.authenticated_header(expiry, tag, carried.claim_hash(content[23:39]), FS_OVERHEAD + bucket)
    ephemeral = nb.crypto_scalarmult_base(ephemeral_secret)
    ad = carried_ad(sender.x25519_public, recipient_public, receiver.public, ephemeral, header_ad)
    announced = announce.encoded()
    auth = ref.authenticator(nb.crypto_scalarmult(sender.x25519_secret, recipient_public),
                             sender.x25519_public, recipient_public, ad + announced, content)
    key, nonce = ref.message_key(nb.crypto_scalarmult(ephemeral_secret, receiver.public), ephemeral, receiver.public,
                                 FS_CARRIED_KEY_KEY)
    cipher = nb.crypto_aead_xchacha20poly1305_ietf_encrypt(auth + announced + ref.pad(content), ad, nonce, key)
    sealed = selector(receiver.public, ephemeral) + ephemeral + cipher
    return header_ad[:2] + bytes([hop_limit, copy_budget]) + header_ad[2:] + sealed


def open_carried(recipient: ref.Keys, sender_public: bytes, receiver_secrets: List[Tuple[int, bytes]],
                 packet: bytes) -> Tuple[bytes, Announcement, int]:
    """(content, announcement, ID of the receiver key that opened it); "no receiver key" when
    no retained key's selector matches; AssertionError or a nacl error on any other failure."""
    import carried_reference as carried
    header_ad, sealed = packet[:2] + packet[4:34], packet[34:]
    assert len(sealed) >= FS_OVERHEAD + 64, "too short"
    wanted, ephemeral, cipher = sealed[:4], sealed[4:36], sealed[36:]
    matches = [(i, s) for i, s in receiver_secrets if selector(nb.crypto_scalarmult_base(s), ephemeral) == wanted]
    assert matches, "no receiver key"
    key_id, secret = matches[0]
    public = nb.crypto_scalarmult_base(secret)
    key, nonce = ref.message_key(nb.crypto_scalarmult(secret, ephemeral), ephemeral, public, FS_CARRIED_KEY_KEY)
    ad = carried_ad(sender_public, recipient.x25519_public, public, ephemeral, header_ad)
    inner = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, ad, nonce, key)
    auth, announced, padded = inner[:16], inner[16:56], inner[56:]
    stripped = padded.rstrip(b"\x00")
    assert stripped.endswith(b"\x80"), "bad padding"
    content = stripped[:-1]
    assert len(content) <= carried.MAX_CONTENT and next(b for b in ref.BUCKETS if b >= len(content) + 1) == len(padded)
    expected = ref.authenticator(nb.crypto_scalarmult(recipient.x25519_secret, sender_public),
                                 sender_public, recipient.x25519_public, ad + announced, content)
    assert nb.sodium_memcmp(auth, expected), "sender authenticator does not verify"
    assert carried.claim_hash(content[23:39]) == packet[16:32], "claim is not the preimage"
    announced_id = int.from_bytes(announced[:4], "big")
    assert announced_id != 0, "receiver key ID 0 is reserved"
    return content, Announcement(ReceiverKey(announced_id, announced[4:36]), int.from_bytes(announced[36:], "big")), key_id
