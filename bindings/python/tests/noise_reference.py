"""An independent implementation of Ya OK's link layer (docs/PROTOCOL.md §5): the
Noise_XX_25519_ChaChaPoly_BLAKE2b handshake written from the Noise Protocol Framework
specification (revision 34), the link certificate, and link transport packets with their
explicit counters. PyNaCl supplies X25519, Ed25519 and ChaCha20-Poly1305; hashlib and hmac
supply BLAKE2b and HMAC. Nothing here imports yaok, so the vectors it recomputes check the
document, and through the document the core, from the outside.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import List, NamedTuple, Optional, Tuple

from nacl import bindings as nb
from nacl.exceptions import BadSignatureError, CryptoError

PROTOCOL_NAME = b"Noise_XX_25519_ChaChaPoly_BLAKE2b"
PROLOGUE = b"YaOK-link-v1"
CERT_CONTEXT = b"YaOK-link-cert-v1"
HASHLEN = 64
DHLEN = 32
TAGLEN = 16
CERT_LEN = 128
MAX_NONCE = 2**64 - 1

WIRE_VERSION = 0x01
TYPE_HANDSHAKE = 0x03
TYPE_LINK = 0x05
MAX_PACKET = 17408
LINK_HEADER_LEN = 12  # version, type, length (u16), counter (u64)

KIND_PACKET = 0x01
KIND_RECEIPT = 0x02
KIND_KEEPALIVE = 0x03


class LinkError(Exception):
    """A refusal, named by the status the document gives it (MALFORMED_PACKET, TAMPERED,
    SENDER_AUTH_FAILED, EXPIRED, UNKNOWN_PACKET_TYPE, CLOSED)."""

    def __init__(self, status: str, detail: str):
        super().__init__(f"{status}: {detail}")
        self.status = status


# ---- Noise primitives (spec §4)

def hash_(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=HASHLEN).digest()


def hmac_hash(key: bytes, data: bytes) -> bytes:
    """HMAC (RFC 2104) with BLAKE2b-512, block length 128, as Noise §4.3 requires."""
    return hmac.new(key, data, lambda: hashlib.blake2b(digest_size=HASHLEN)).digest()


def hkdf(chaining_key: bytes, input_key_material: bytes, outputs: int) -> Tuple[bytes, ...]:
    temp_key = hmac_hash(chaining_key, input_key_material)
    out1 = hmac_hash(temp_key, b"\x01")
    out2 = hmac_hash(temp_key, out1 + b"\x02")
    if outputs == 2:
        return out1, out2
    return out1, out2, hmac_hash(temp_key, out2 + b"\x03")


def dh(secret: bytes, public: bytes) -> bytes:
    """X25519; an all-zero result (a low-order public key) is refused."""
    try:
        shared = nb.crypto_scalarmult(secret, public)
    except (CryptoError, RuntimeError) as error:
        raise LinkError("MALFORMED_PACKET", "X25519 gave an all-zero output") from error
    if shared == bytes(DHLEN):
        raise LinkError("MALFORMED_PACKET", "X25519 gave an all-zero output")
    return shared


def public_key(secret: bytes) -> bytes:
    return nb.crypto_scalarmult_base(secret)


def noise_nonce(n: int) -> bytes:
    """ChaChaPoly's 96-bit nonce: 32 zero bits, then the 64-bit counter little-endian."""
    return bytes(4) + n.to_bytes(8, "little")


def encrypt(key: bytes, n: int, ad: bytes, plaintext: bytes) -> bytes:
    return nb.crypto_aead_chacha20poly1305_ietf_encrypt(plaintext, ad, noise_nonce(n), key)


def decrypt(key: bytes, n: int, ad: bytes, ciphertext: bytes) -> bytes:
    try:
        return nb.crypto_aead_chacha20poly1305_ietf_decrypt(ciphertext, ad, noise_nonce(n), key)
    except CryptoError as error:
        raise LinkError("TAMPERED", "authentication tag does not verify") from error


# ---- Noise state objects (spec §5)

class CipherState:
    def __init__(self) -> None:
        self.k: Optional[bytes] = None
        self.n = 0

    def initialize_key(self, key: Optional[bytes]) -> None:
        self.k, self.n = key, 0

    def encrypt_with_ad(self, ad: bytes, plaintext: bytes) -> bytes:
        if self.k is None:
            return plaintext
        assert self.n < MAX_NONCE
        ciphertext = encrypt(self.k, self.n, ad, plaintext)
        self.n += 1
        return ciphertext

    def decrypt_with_ad(self, ad: bytes, ciphertext: bytes) -> bytes:
        if self.k is None:
            return ciphertext
        assert self.n < MAX_NONCE
        plaintext = decrypt(self.k, self.n, ad, ciphertext)
        self.n += 1
        return plaintext


class SymmetricState:
    def __init__(self, protocol_name: bytes) -> None:
        if len(protocol_name) <= HASHLEN:
            self.h = protocol_name + bytes(HASHLEN - len(protocol_name))
        else:
            self.h = hash_(protocol_name)
        self.ck = self.h
        self.cipher = CipherState()

    def mix_key(self, input_key_material: bytes) -> None:
        self.ck, temp_k = hkdf(self.ck, input_key_material, 2)
        self.cipher.initialize_key(temp_k[:32])  # HASHLEN 64: truncate to the cipher's key size

    def mix_hash(self, data: bytes) -> None:
        self.h = hash_(self.h + data)

    def encrypt_and_hash(self, plaintext: bytes) -> bytes:
        ciphertext = self.cipher.encrypt_with_ad(self.h, plaintext)
        self.mix_hash(ciphertext)
        return ciphertext

    def decrypt_and_hash(self, ciphertext: bytes) -> bytes:
        plaintext = self.cipher.decrypt_with_ad(self.h, ciphertext)
        self.mix_hash(ciphertext)
        return plaintext

    def split(self) -> Tuple[bytes, bytes]:
        temp_k1, temp_k2 = hkdf(self.ck, b"", 2)
        return temp_k1[:32], temp_k2[:32]


# ---- link certificate (§5.2)

class Identity(NamedTuple):
    x25519_public: bytes
    ed25519_public: bytes
    ed25519_secret: bytes  # libsodium layout: seed || public


def identity_from_secrets(secrets: bytes) -> Identity:
    """§1: X25519 secret (32) || Ed25519 seed (32)."""
    assert len(secrets) == 64
    ed_public, ed_secret = nb.crypto_sign_seed_keypair(secrets[32:])
    return Identity(nb.crypto_scalarmult_base(secrets[:32]), ed_public, ed_secret)


def certificate(identity: Identity, link_static_public: bytes) -> bytes:
    signed = CERT_CONTEXT + link_static_public + identity.x25519_public
    signature = nb.crypto_sign(signed, identity.ed25519_secret)[:64]  # detached: the first 64 bytes
    return identity.x25519_public + identity.ed25519_public + signature


class Certificate(NamedTuple):
    identity_x25519_public: bytes
    identity_ed25519_public: bytes
    signature: bytes


def verify_certificate(cert: bytes, remote_static: bytes) -> Certificate:
    """Refuses (SENDER_AUTH_FAILED) a certificate whose signature does not verify or that
    certifies another link key than the one the handshake authenticated."""
    if len(cert) != CERT_LEN:
        raise LinkError("MALFORMED_PACKET", f"certificate of {len(cert)} bytes")
    parsed = Certificate(cert[:32], cert[32:64], cert[64:])
    try:
        nb.crypto_sign_open(parsed.signature + CERT_CONTEXT + remote_static + parsed.identity_x25519_public,
                            parsed.identity_ed25519_public)
    except (BadSignatureError, CryptoError, ValueError) as error:
        raise LinkError("SENDER_AUTH_FAILED", "certificate does not certify this link key") from error
    return parsed


# ---- the XX handshake (§5.3)

def handshake_packet(step: int, message: bytes) -> bytes:
    payload = bytes([step]) + message
    return bytes([WIRE_VERSION, TYPE_HANDSHAKE]) + len(payload).to_bytes(2, "big") + payload


M1_LEN, M2_LEN, M3_LEN = 32, 32 + 48 + CERT_LEN + TAGLEN, 48 + CERT_LEN + TAGLEN


def handshake_message(packet: bytes, step: int) -> bytes:
    """The Noise message inside a handshake packet for `step`, sizes checked."""
    expected = {1: M1_LEN, 2: M2_LEN, 3: M3_LEN}[step]
    if (len(packet) < 5 or packet[0] != WIRE_VERSION or packet[1] != TYPE_HANDSHAKE
            or int.from_bytes(packet[2:4], "big") != len(packet) - 4):
        raise LinkError("MALFORMED_PACKET", "not a handshake packet")
    if packet[4] != step or len(packet) - 5 != expected:
        raise LinkError("MALFORMED_PACKET", f"expected step {step} of {expected} bytes")
    return packet[5:]


class Session(NamedTuple):
    """What a completed handshake leaves: the handshake hash, the sending and receiving
    keys of this side, and the remote certificate."""
    handshake_hash: bytes
    send_key: bytes
    receive_key: bytes
    remote: Certificate


class Handshake:
    """One side of Noise XX: -> e; <- e, ee, s, es; -> s, se."""

    def __init__(self, initiator: bool, static_secret: bytes, certificate_bytes: bytes,
                 ephemeral_secret: bytes) -> None:
        self.initiator = initiator
        self.s = static_secret
        self.s_public = public_key(static_secret)
        self.cert = certificate_bytes
        self.e = ephemeral_secret  # fixed for vectors; random in real use
        self.e_public = public_key(ephemeral_secret)
        self.re: Optional[bytes] = None
        self.rs: Optional[bytes] = None
        self.state = SymmetricState(PROTOCOL_NAME)
        self.state.mix_hash(PROLOGUE)

    def _finish(self, remote: Certificate) -> Session:
        k1, k2 = self.state.split()
        send, receive = (k1, k2) if self.initiator else (k2, k1)
        return Session(self.state.h, send, receive, remote)

    # initiator
    def write_m1(self) -> bytes:
        assert self.initiator
        self.state.mix_hash(self.e_public)
        return handshake_packet(1, self.e_public + self.state.encrypt_and_hash(b""))

    def read_m2_write_m3(self, packet: bytes) -> Tuple[bytes, Session]:
        assert self.initiator
        message = handshake_message(packet, 2)
        self.re = message[:32]
        self.state.mix_hash(self.re)
        self.state.mix_key(dh(self.e, self.re))                             # ee
        self.rs = self.state.decrypt_and_hash(message[32:80])               # s
        self.state.mix_key(dh(self.e, self.rs))                             # es
        remote = verify_certificate(self.state.decrypt_and_hash(message[80:]), self.rs)
        m3 = self.state.encrypt_and_hash(self.s_public)                     # s
        self.state.mix_key(dh(self.s, self.re))                             # se
        m3 += self.state.encrypt_and_hash(self.cert)
        return handshake_packet(3, m3), self._finish(remote)

    # responder
    def read_m1_write_m2(self, packet: bytes) -> bytes:
        assert not self.initiator
        message = handshake_message(packet, 1)
        self.re = message[:32]
        self.state.mix_hash(self.re)
        self.state.decrypt_and_hash(b"")
        self.state.mix_hash(self.e_public)                                  # e
        self.state.mix_key(dh(self.e, self.re))                             # ee
        m2 = self.e_public + self.state.encrypt_and_hash(self.s_public)     # s
        self.state.mix_key(dh(self.s, self.re))                             # es
        m2 += self.state.encrypt_and_hash(self.cert)
        return handshake_packet(2, m2)

    def read_m3(self, packet: bytes) -> Session:
        assert not self.initiator
        message = handshake_message(packet, 3)
        self.rs = self.state.decrypt_and_hash(message[:48])                 # s
        self.state.mix_key(dh(self.e, self.rs))                             # se
        remote = verify_certificate(self.state.decrypt_and_hash(message[48:]), self.rs)
        return self._finish(remote)


# ---- link transport packets (§5.4, §5.5)

def link_header(counter: int, ciphertext_length: int) -> bytes:
    return (bytes([WIRE_VERSION, TYPE_LINK]) + (8 + ciphertext_length).to_bytes(2, "big")
            + counter.to_bytes(8, "big"))


def seal(key: bytes, counter: int, kind: int, body: bytes) -> bytes:
    """version || 0x05 || length || counter || ChaChaPoly(key, counter, header[0..12], kind || body)."""
    if counter >= MAX_NONCE:
        raise LinkError("CLOSED", "counter exhausted")
    plaintext = bytes([kind]) + body
    header = link_header(counter, len(plaintext) + TAGLEN)
    if len(header) + len(plaintext) + TAGLEN > MAX_PACKET:
        raise LinkError("MALFORMED_PACKET", "link packet over 17408 bytes")
    return header + encrypt(key, counter, header, plaintext)


class Receiver:
    """The receiving half of a link: accepts only counters above the last accepted one."""

    def __init__(self, key: bytes) -> None:
        self.key = key
        self.last: Optional[int] = None

    def open(self, packet: bytes) -> Tuple[int, bytes]:
        if (len(packet) < LINK_HEADER_LEN + 1 + TAGLEN or len(packet) > MAX_PACKET
                or packet[0] != WIRE_VERSION or packet[1] != TYPE_LINK
                or int.from_bytes(packet[2:4], "big") != len(packet) - 4):
            raise LinkError("MALFORMED_PACKET", "not a link packet")
        counter = int.from_bytes(packet[4:12], "big")
        if counter == MAX_NONCE:
            raise LinkError("MALFORMED_PACKET", "counter 2^64-1 is never used")
        if self.last is not None and counter <= self.last:
            raise LinkError("EXPIRED", f"counter {counter} is not above {self.last}")
        plaintext = decrypt(self.key, counter, packet[:LINK_HEADER_LEN], packet[LINK_HEADER_LEN:])
        self.last = counter  # authentic: its counter is spent whatever its contents
        kind, body = plaintext[0], plaintext[1:]
        check_body(kind, body)
        return kind, body


def check_body(kind: int, body: bytes) -> None:
    if kind == KIND_PACKET:
        if not body:
            raise LinkError("MALFORMED_PACKET", "empty carried packet")
    elif kind == KIND_RECEIPT:
        if not body or body[0] == 0 or len(body) != 1 + 16 * body[0]:
            raise LinkError("MALFORMED_PACKET", "receipt length does not match its count")
    elif kind == KIND_KEEPALIVE:
        if body:
            raise LinkError("MALFORMED_PACKET", "keepalive with a body")
    else:
        raise LinkError("UNKNOWN_PACKET_TYPE", f"link payload kind {kind:#04x}")


def receipt_body(message_ids: List[bytes]) -> bytes:
    assert 1 <= len(message_ids) <= 255 and all(len(i) == 16 for i in message_ids)
    return bytes([len(message_ids)]) + b"".join(message_ids)
