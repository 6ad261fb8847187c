"""An independent implementation of Ya OK's contact card, message envelope, packet envelope,
routing tag and end-to-end ack, written from docs/PROTOCOL.md §1–§3, §4.2–§4.3 and §6.2
using PyNaCl's libsodium primitives and Python integers only (no yaok import). The tests run
it against the core.
"""

from __future__ import annotations

import base64
import hashlib
from typing import List, NamedTuple, Optional, Tuple

import nacl.exceptions
from nacl import bindings as nb

ENVELOPE_VERSION = 1
HINT_KEY = b"YaOK-hint-v1"
MESSAGE_KEY_KEY = b"YaOK-envelope-v1"
AUTH_KEY_KEY = b"YaOK-auth-v1"
PACKET_ENVELOPE_VERSION = 2
PACKET_MESSAGE_KEY_KEY = b"YaOK-envelope-v2"
ROUTE_KEY_KEY = b"YaOK-route-v2"
ACK_KEY_KEY = b"YaOK-ack-v1"
DAY_MS = 86_400_000
USER_ID_KEY = b"YaOK-user-id-v1"
CARD_CONTEXT = b"YaOK-card-v1"
CARD_KEY_CONTEXT = b"YaOK-card-key-v1"
CARD_SCHEME = "yaok:1:"
CARD_CONTEXT_V2 = b"YaOK-card-v2"
CARD_SCHEME_V2 = "yaok:2:"
PREKEY_BIT = 0x8000_0000
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


# ---- XEdDSA (Signal's specification, revision 1), for the card's key proof

P = 2**255 - 19                                           # the field of Curve25519
L = 2**252 + 27742317777372353535851937790883648493       # the order of the base point


def sha512(data: bytes) -> bytes:
    return hashlib.sha512(data).digest()


def edwards_from_montgomery(u: bytes) -> bytes:
    """XEdDSA's convert_mont: the Edwards y = (u - 1) / (u + 1) mod p, sign bit 0. Raises
    ValueError for a non-canonical u (>= p, top bit included) or u = -1."""
    n = int.from_bytes(u, "little")
    if len(u) != 32 or n >= P:
        raise ValueError("not a canonical X25519 public key")
    if (n + 1) % P == 0:
        raise ValueError("u = -1 has no Edwards form")
    y = (n - 1) * pow(n + 1, P - 2, P) % P
    return y.to_bytes(32, "little")


def xeddsa_sign(x25519_secret: bytes, message: bytes) -> bytes:
    """R || s, an Ed25519 signature under edwards_from_montgomery(X25519 public key).
    Z (XEdDSA's random bytes) is 64 zero bytes, so signatures are deterministic."""
    k = bytearray(x25519_secret)
    k[0] &= 248
    k[31] &= 127
    k[31] |= 64
    e = nb.crypto_scalarmult_ed25519_base_noclamp(bytes(k))  # E = kB
    a = int.from_bytes(k, "little") % L
    if e[31] & 0x80:                                         # E's sign bit: use -k, so aB = A
        a = (-a) % L
    public = e[:31] + bytes([e[31] & 0x7F])
    a_bytes = a.to_bytes(32, "little")
    r = int.from_bytes(sha512(b"\xfe" + b"\xff" * 31 + a_bytes + message + bytes(64)), "little") % L
    big_r = nb.crypto_scalarmult_ed25519_base_noclamp(r.to_bytes(32, "little"))
    h = int.from_bytes(sha512(big_r + public + message), "little") % L
    return big_r + ((r + h * a) % L).to_bytes(32, "little")


def xeddsa_verify(x25519_public: bytes, message: bytes, signature: bytes) -> bool:
    """libsodium's Ed25519 verification under the Edwards form of the X25519 key."""
    try:
        nb.crypto_sign_open(signature + message, edwards_from_montgomery(x25519_public))
        return True
    except (ValueError, nacl.exceptions.BadSignatureError):
        return False


def is_low_order(x25519_public: bytes) -> bool:
    """X25519 with any secret gives all zeros (libsodium refuses it)."""
    try:
        nb.crypto_scalarmult(b"\x5a" * 32, x25519_public)
        return False
    except Exception:  # PyNaCl raises RuntimeError for libsodium's -1
        return True


# ---- contact card

class ParsedCard(NamedTuple):
    version: int
    encryption_key: bytes
    signing_key: bytes
    name: str
    key_proof: bytes
    signed: bytes      # every byte before the signature
    signature: bytes
    prekey: Optional[Tuple[int, bytes]] = None  # version 2: (key_id, X25519 public key)


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def key_proof_message(encryption_key: bytes, signing_key: bytes) -> bytes:
    return CARD_KEY_CONTEXT + encryption_key + signing_key


def parse_card(text: str) -> ParsedCard:
    """`yaok:1:` + base64url(version || X25519 (32) || Ed25519 (32) || u16 BE name length ||
    name || key proof (64) || Ed25519 signature (64)); `yaok:2:` (version 2) has the prekey,
    key_id (u32 BE, top bit set) || X25519 public key (32), between the name and the proof."""
    version = 1 if text.startswith(CARD_SCHEME) else 2
    assert text.startswith(CARD_SCHEME if version == 1 else CARD_SCHEME_V2)
    raw = b64url_decode(text[len(CARD_SCHEME):])
    assert raw[0] == version
    name_length = int.from_bytes(raw[65:67], "big")
    end = 67 + name_length
    prekey = None
    if version == 2:
        prekey = (int.from_bytes(raw[end:end + 4], "big"), raw[end + 4:end + 36])
        end += 36
    assert len(raw) == end + 128
    return ParsedCard(raw[0], raw[1:33], raw[33:65], raw[67:67 + name_length].decode("utf-8"), raw[end:end + 64],
                      raw[:end + 64], raw[end + 64:], prekey)


def card_context(version: int) -> bytes:
    return CARD_CONTEXT if version == 1 else CARD_CONTEXT_V2


def card_is_valid(text: str) -> bool:
    """The checks of PROTOCOL.md §2 but the display-name rules: version, lengths, the
    Ed25519 signature, the prekey (version 2: top bit set, not of low order), the X25519
    key (not of low order) and its key proof."""
    try:
        card = parse_card(text)
        nb.crypto_sign_open(card.signature + card_context(card.version) + card.signed, card.signing_key)
    except (AssertionError, ValueError, nacl.exceptions.BadSignatureError):
        return False
    if card.prekey is not None and (not card.prekey[0] & PREKEY_BIT or is_low_order(card.prekey[1])):
        return False
    return (card.version in (1, 2) and not is_low_order(card.encryption_key)
            and xeddsa_verify(card.encryption_key, key_proof_message(card.encryption_key, card.signing_key),
                              card.key_proof))


def make_card(keys: Keys, name: str, version: int = 1, encryption_key: Optional[bytes] = None,
              key_proof: Optional[bytes] = None, prekey: Optional[Tuple[int, bytes]] = None) -> str:
    """A card signed over "YaOK-card-v1" || signed part (with `prekey` (key_id, public key):
    version 2, "YaOK-card-v2"); the key proof is made with the X25519 secret of `keys`
    unless given. `encryption_key` replaces the card's X25519 key (for cards that must be
    refused)."""
    if prekey is not None:
        version = 2
    encryption_key = encryption_key if encryption_key is not None else keys.x25519_public
    if key_proof is None:
        key_proof = xeddsa_sign(keys.x25519_secret, key_proof_message(encryption_key, keys.ed25519_public))
    name_bytes = name.encode("utf-8")
    signed = (bytes([version]) + encryption_key + keys.ed25519_public + len(name_bytes).to_bytes(2, "big")
              + name_bytes + (prekey[0].to_bytes(4, "big") + prekey[1] if prekey is not None else b"") + key_proof)
    signature = nb.crypto_sign(card_context(version) + signed, keys.ed25519_secret)[:64]  # detached: first 64 bytes
    return (CARD_SCHEME_V2 if prekey is not None else CARD_SCHEME) + b64url_encode(signed + signature)


# ---- envelope

def pad(body: bytes) -> bytes:
    """ISO/IEC 7816-4 (sodium_pad) to the smallest bucket holding len(body) + 1."""
    size = next(b for b in BUCKETS if b >= len(body) + 1)
    return body + b"\x80" + bytes(size - len(body) - 1)


MAX_BODY = 10240


def unpad(padded: bytes) -> Optional[bytes]:
    """The body, if `padded` is exactly what pad() makes of it: ISO/IEC 7816-4 in the
    smallest bucket, the body 1 to 10240 bytes (PROTOCOL.md §3, opening step 4)."""
    if len(padded) not in BUCKETS:
        return None
    stripped = padded.rstrip(b"\x00")
    if not stripped.endswith(b"\x80"):
        return None
    body = stripped[:-1]
    if not 1 <= len(body) <= MAX_BODY or next(b for b in BUCKETS if b >= len(body) + 1) != len(padded):
        return None
    return body


def associated_data(recipient: bytes, message_id: bytes, timestamp_ms: int, ephemeral: bytes,
                    header_ad: bytes = b"") -> bytes:
    """version || recipient key || message ID || timestamp (u64 BE) || ephemeral key ||
    the packet header's authenticated bytes (empty for a bare envelope)."""
    return (bytes([ENVELOPE_VERSION]) + recipient + message_id + timestamp_ms.to_bytes(8, "big") + ephemeral
            + header_ad)


def hint(ephemeral: bytes, recipient: bytes) -> bytes:
    return blake2b(ephemeral + recipient, 8, HINT_KEY)


def message_key(shared: bytes, ephemeral: bytes, recipient: bytes,
                domain: bytes = MESSAGE_KEY_KEY) -> Tuple[bytes, bytes]:
    okm = blake2b(shared + ephemeral + recipient, 64, domain)
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


# ---- routing tag (§4.3)

def pair_key(own: Keys, peer_public: bytes) -> bytes:
    """BLAKE2b-256 keyed "YaOK-route-v2" over X25519(own secret, peer public): the same for
    both contacts, unknown to anyone else."""
    return blake2b(nb.crypto_scalarmult(own.x25519_secret, peer_public), 32, ROUTE_KEY_KEY)


def routing_tag(key: bytes, sender_public: bytes, recipient_public: bytes, created_ms: int) -> bytes:
    """BLAKE2b-64 keyed with the pair key over sender || recipient || UTC day (u32 BE)."""
    day = created_ms // DAY_MS
    return blake2b(sender_public + recipient_public + day.to_bytes(4, "big"), 8, key)


# ---- packet envelope (§3.1): no hint, no sender key inside

def packet_associated_data(sender: bytes, recipient: bytes, message_id: bytes, timestamp_ms: int,
                           ephemeral: bytes, header_ad: bytes) -> bytes:
    """0x02 || sender key || recipient key || message ID || timestamp (u64 BE) || ephemeral
    key || the packet header's authenticated bytes."""
    return (bytes([PACKET_ENVELOPE_VERSION]) + sender + recipient + message_id + timestamp_ms.to_bytes(8, "big")
            + ephemeral + header_ad)


def packet_seal(sender: Keys, recipient_public: bytes, body: bytes, message_id: bytes, timestamp_ms: int,
                ephemeral_secret: bytes, header_ad: bytes, auth_override: Optional[bytes] = None) -> bytes:
    """E || XChaCha20-Poly1305(key, nonce, AD; auth || pad(body)), key and nonce from
    BLAKE2b-512 keyed "YaOK-envelope-v2"."""
    ephemeral = nb.crypto_scalarmult_base(ephemeral_secret)
    shared = nb.crypto_scalarmult(ephemeral_secret, recipient_public)
    ad = packet_associated_data(sender.x25519_public, recipient_public, message_id, timestamp_ms, ephemeral,
                                header_ad)
    auth = auth_override if auth_override is not None else authenticator(
        nb.crypto_scalarmult(sender.x25519_secret, recipient_public),
        sender.x25519_public, recipient_public, ad, body)
    key, nonce = message_key(shared, ephemeral, recipient_public, PACKET_MESSAGE_KEY_KEY)
    return ephemeral + nb.crypto_aead_xchacha20poly1305_ietf_encrypt(auth + pad(body), ad, nonce, key)


def packet_open(recipient: Keys, sender_public: bytes, sealed: bytes, message_id: bytes, timestamp_ms: int,
                header_ad: bytes) -> bytes:
    """The body; raises AssertionError / nacl errors on any failure."""
    assert len(sealed) >= 32 + 16 + 64 + 16, "too short"
    ephemeral, cipher = sealed[:32], sealed[32:]
    shared = nb.crypto_scalarmult(recipient.x25519_secret, ephemeral)
    key, nonce = message_key(shared, ephemeral, recipient.x25519_public, PACKET_MESSAGE_KEY_KEY)
    ad = packet_associated_data(sender_public, recipient.x25519_public, message_id, timestamp_ms, ephemeral,
                                header_ad)
    inner = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(cipher, ad, nonce, key)
    auth, padded = inner[:16], inner[16:]
    body = unpad(padded)
    assert body, "bad padding"
    expected = authenticator(nb.crypto_scalarmult(recipient.x25519_secret, sender_public),
                             sender_public, recipient.x25519_public, ad, body)
    assert nb.sodium_memcmp(auth, expected), "sender authenticator does not verify"
    return body


# ---- message packet (§4.2)

def routed_header(packet_type: int, hop_limit: int, message_id: bytes, created_ms: int, lifetime_min: int,
                  tag: bytes, payload_length: int) -> Tuple[bytes, bytes]:
    """(the header's 37 bytes, its 36 authenticated bytes: all but the hop limit)."""
    authenticated = (bytes([1, packet_type]) + message_id + created_ms.to_bytes(6, "big")
                     + lifetime_min.to_bytes(2, "big") + tag + payload_length.to_bytes(2, "big"))
    return authenticated[:2] + bytes([hop_limit]) + authenticated[2:], authenticated


def message_packet(sender: Keys, recipient_public: bytes, body: bytes, message_id: bytes, created_ms: int,
                   lifetime_min: int, hop_limit: int, ephemeral_secret: bytes) -> bytes:
    """header (tag of sender → recipient for the day of `created_ms`) || packet envelope."""
    tag = routing_tag(pair_key(sender, recipient_public), sender.x25519_public, recipient_public, created_ms)
    bucket = next(b for b in BUCKETS if b >= len(body) + 1)
    header, authenticated = routed_header(1, hop_limit, message_id, created_ms, lifetime_min, tag, 64 + bucket)
    return header + packet_seal(sender, recipient_public, body, message_id, created_ms, ephemeral_secret,
                                authenticated)


def open_message_packet(recipient: Keys, contacts: List[bytes], packet: bytes) -> Tuple[bytes, bytes]:
    """(sender key, body): the sender is the contact whose tag the packet carries."""
    assert packet[0] == 1 and packet[1] == 1 and len(packet) >= 37
    message_id, created = packet[3:19], int.from_bytes(packet[19:25], "big")
    tag, length = packet[27:35], int.from_bytes(packet[35:37], "big")
    assert length == len(packet) - 37
    for contact in contacts:
        if routing_tag(pair_key(recipient, contact), contact, recipient.x25519_public, created) == tag:
            body = packet_open(recipient, contact, packet[37:], message_id, created, packet[:2] + packet[3:37])
            return contact, body
    raise AssertionError("not for me")


# ---- end-to-end ack (§6.2)

def ack_key(own: Keys, peer_public: bytes, own_is_acker: bool) -> bytes:
    """BLAKE2b-256 keyed "YaOK-ack-v1" over X25519(own secret, peer public) || acker public ||
    ackee public: the same for both contacts, different per direction."""
    acker, ackee = (own.x25519_public, peer_public) if own_is_acker else (peer_public, own.x25519_public)
    return blake2b(nb.crypto_scalarmult(own.x25519_secret, peer_public) + acker + ackee, 32, ACK_KEY_KEY)


def ack_packet(key: bytes, acked: List[bytes], message_id: bytes, created_ms: int, lifetime_min: int,
               hop_limit: int, tag: bytes, nonce: bytes) -> bytes:
    """header (type 0x02, the ack's own ID) || nonce || XChaCha20-Poly1305(ack key, nonce,
    ad = the ack's own header without its hop limit, count || IDs). No padding."""
    plaintext = bytes([len(acked)]) + b"".join(acked)
    header, authenticated = routed_header(2, hop_limit, message_id, created_ms, lifetime_min, tag,
                                          24 + len(plaintext) + 16)
    return header + nonce + nb.crypto_aead_xchacha20poly1305_ietf_encrypt(plaintext, authenticated, nonce, key)


def open_ack(key: bytes, packet: bytes) -> List[bytes]:
    """The acknowledged IDs; raises AssertionError / nacl errors on any failure."""
    assert packet[0] == 1 and packet[1] == 2 and int.from_bytes(packet[35:37], "big") == len(packet) - 37
    payload = packet[37:]
    plaintext = nb.crypto_aead_xchacha20poly1305_ietf_decrypt(payload[24:], packet[:2] + packet[3:37],
                                                              payload[:24], key)
    count = plaintext[0]
    assert count >= 1 and len(plaintext) == 1 + 16 * count, "bad ack plaintext"
    return [plaintext[1 + 16 * i:17 + 16 * i] for i in range(count)]
