"""seal/open through the binding: round trips, sizes, and each failure's own exception."""

from __future__ import annotations

import ctypes

import pytest

import yaok
from yaok import envelope
from yaok.envelope import MAX_MESSAGE_BYTES, Opened

from conftest import MESSAGE_ID, TIMESTAMP_MS

OVERHEAD = 32 + 8 + 32 + 16 + 16  # E || hint || (sender key || auth || padded body) || tag


def test_round_trip(alice, bob, alice_card, bob_card, eve_card):
    sealed = envelope.seal(alice, bob_card, b"Hello, Bob!", MESSAGE_ID, TIMESTAMP_MS)
    opened = envelope.open(bob, [eve_card, alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)
    assert isinstance(opened, Opened)
    body, index = opened
    assert body == b"Hello, Bob!" and index == 1
    assert opened.body == body and opened.sender_index == 1


@pytest.mark.parametrize("length,bucket", [
    (1, 64), (63, 64), (64, 128), (127, 128), (255, 256), (1000, 1024), (1024, 2048),
    (4095, 4096), (8191, 8192), (8192, 16384), (MAX_MESSAGE_BYTES, 16384),
])
def test_padding_buckets(alice, bob, alice_card, bob_card, length, bucket):
    body = bytes((i * 7) % 256 for i in range(length))
    sealed = envelope.seal(alice, bob_card, body, MESSAGE_ID, TIMESTAMP_MS)
    assert len(sealed) == OVERHEAD + bucket
    assert envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS) == (body, 0)


def test_fresh_ephemeral_key_per_message(alice, bob_card):
    a = envelope.seal(alice, bob_card, b"same", MESSAGE_ID, TIMESTAMP_MS)
    b = envelope.seal(alice, bob_card, b"same", MESSAGE_ID, TIMESTAMP_MS)
    assert a != b and a[:32] != b[:32]


def test_bytes_like_inputs(alice, bob, alice_card, bob_card):
    sealed = envelope.seal(alice, bob_card, bytearray(b"hi"), memoryview(MESSAGE_ID), TIMESTAMP_MS)
    assert envelope.open(bob, (alice_card,), bytearray(sealed), bytearray(MESSAGE_ID), TIMESTAMP_MS).body == b"hi"


def test_message_to_self(alice, alice_card):
    sealed = envelope.seal(alice, alice_card, b"note to self", MESSAGE_ID, 0)
    assert envelope.open(alice, [alice_card], sealed, MESSAGE_ID, 0) == (b"note to self", 0)


def test_duplicate_senders_give_the_first_index(alice, bob, alice_card, bob_card, eve_card):
    sealed = envelope.seal(alice, bob_card, b"x", MESSAGE_ID, 1)
    assert envelope.open(bob, [eve_card, alice_card, alice_card], sealed, MESSAGE_ID, 1).sender_index == 1


def test_two_identities_with_one_encryption_key_are_an_ambiguous_sender(bob, bob_card, eve_card):
    """Only the key's owner can make both cards, but which identity sent it is unknown."""
    x = bytes(range(1, 33))
    with yaok.Identity.restore("Twin", x + bytes(32)) as twin_a, \
            yaok.Identity.restore("Twin", x + bytes([7]) * 32) as twin_b, \
            yaok.Card.decode(twin_a.card) as card_a, yaok.Card.decode(twin_b.card) as card_b:
        sealed = envelope.seal(twin_a, bob_card, b"who?", MESSAGE_ID, 1)
        with pytest.raises(yaok.InvalidArgument, match="ambiguous"):
            envelope.open(bob, [eve_card, card_a, card_b], sealed, MESSAGE_ID, 1)
        assert envelope.open(bob, [card_a, card_a], sealed, MESSAGE_ID, 1).sender_index == 0


def test_extreme_timestamps(alice, bob, alice_card, bob_card):
    for ts in (0, 2**48 - 1):
        sealed = envelope.seal(alice, bob_card, b"t", MESSAGE_ID, ts)
        assert envelope.open(bob, [alice_card], sealed, MESSAGE_ID, ts).body == b"t"


# ---- each failure has its own exception

def test_not_for_me(alice, bob_card, eve, alice_card):
    sealed = envelope.seal(alice, bob_card, b"for Bob", MESSAGE_ID, TIMESTAMP_MS)
    with pytest.raises(yaok.NotForMe) as info:
        envelope.open(eve, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS)
    assert info.value.status == 300


def test_unknown_sender(alice, bob, bob_card, eve_card):
    sealed = envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, TIMESTAMP_MS)
    for senders in ([], [eve_card]):
        with pytest.raises(yaok.UnknownSender) as info:
            envelope.open(bob, senders, sealed, MESSAGE_ID, TIMESTAMP_MS)
        assert info.value.status == 302


def test_tampered(alice, bob, alice_card, bob_card):
    sealed = envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, TIMESTAMP_MS)
    other_id = bytes(16)
    with pytest.raises(yaok.Tampered):
        envelope.open(bob, [alice_card], sealed, MESSAGE_ID, TIMESTAMP_MS + 1)
    with pytest.raises(yaok.Tampered):
        envelope.open(bob, [alice_card], sealed, other_id, TIMESTAMP_MS)
    for position in (40, 41, len(sealed) // 2, len(sealed) - 1):  # ciphertext and tag
        altered = bytearray(sealed)
        altered[position] ^= 0x01
        with pytest.raises(yaok.Tampered) as info:
            envelope.open(bob, [alice_card], bytes(altered), MESSAGE_ID, TIMESTAMP_MS)
        assert info.value.status == 301


def test_altered_header_is_not_for_me(alice, bob, alice_card, bob_card):
    """E and the hint are checked together: changing either one fails the hint."""
    sealed = envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, TIMESTAMP_MS)
    for position in (0, 31, 32, 39):
        altered = bytearray(sealed)
        altered[position] ^= 0x80
        with pytest.raises((yaok.NotForMe, yaok.MalformedEnvelope)):
            envelope.open(bob, [alice_card], bytes(altered), MESSAGE_ID, TIMESTAMP_MS)


@pytest.mark.parametrize("length", [0, 1, 10, 103, 167])
def test_malformed_short_envelopes(bob, alice_card, length):
    with pytest.raises(yaok.MalformedEnvelope) as info:
        envelope.open(bob, [alice_card], bytes(length), MESSAGE_ID, TIMESTAMP_MS)
    assert info.value.status == 306


def test_empty_and_too_large(alice, bob_card):
    with pytest.raises(yaok.EmptyMessage):
        envelope.seal(alice, bob_card, b"", MESSAGE_ID, 1)
    with pytest.raises(yaok.MessageTooLarge, match=r"^Message too large \(max 10KB\)$"):
        envelope.seal(alice, bob_card, bytes(MAX_MESSAGE_BYTES + 1), MESSAGE_ID, 1)
    with pytest.raises(yaok.MessageTooLarge):
        envelope.seal(alice, bob_card, bytes(1 << 20), MESSAGE_ID, 1)


# ---- misuse at the Python level

@pytest.mark.parametrize("message_id", [b"", bytes(15), bytes(17)])
def test_message_id_must_be_16_bytes(alice, bob, alice_card, bob_card, message_id):
    with pytest.raises(yaok.InvalidArgument, match="16 bytes"):
        envelope.seal(alice, bob_card, b"hi", message_id, 1)
    with pytest.raises(yaok.InvalidArgument, match="16 bytes"):
        envelope.open(bob, [alice_card], bytes(200), message_id, 1)


def test_timestamp_range(alice, bob, alice_card, bob_card):
    # 0 to 2**48 - 1, a packet's `created` (PROTOCOL.md §3), refused beyond by the library
    # too (2**48 to 2**63 - 1 reach it), for sealing and opening alike.
    sealed = envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, 1)
    for bad in (-1, 2**48, 2**63 - 1, 2**63):
        with pytest.raises(yaok.InvalidArgument, match="0 to 2\\^48-1|0 to 2\\*\\*48 - 1"):
            envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, bad)
        with pytest.raises(yaok.InvalidArgument):
            envelope.open(bob, [alice_card], sealed, MESSAGE_ID, bad)
    with pytest.raises(TypeError):
        envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, 1.5)  # type: ignore[arg-type]


def test_wrong_types(alice, bob, alice_card, bob_card):
    with pytest.raises(TypeError):
        envelope.seal(alice, bob_card, "text", MESSAGE_ID, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        envelope.seal(alice, bob, b"hi", MESSAGE_ID, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        envelope.seal(alice_card, bob_card, b"hi", MESSAGE_ID, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        envelope.open(bob, [alice_card, None], bytes(200), MESSAGE_ID, 1)  # type: ignore[list-item]
    with pytest.raises(TypeError):
        envelope.open(bob, [alice_card], "sealed", MESSAGE_ID, 1)  # type: ignore[arg-type]


def test_closed_objects(alice, bob, alice_card, bob_card):
    sealed = envelope.seal(alice, bob_card, b"hi", MESSAGE_ID, 1)
    card = yaok.Card.decode(alice_card.text)
    card.close()
    with pytest.raises(yaok.HandleClosed):
        envelope.open(bob, [card], sealed, MESSAGE_ID, 1)
    with pytest.raises(yaok.HandleClosed):
        envelope.seal(alice, card, b"hi", MESSAGE_ID, 1)


def test_null_senders_with_a_count_is_refused_by_the_library(bob):
    with bob._borrow() as me:
        out, out_len, index = ctypes.c_void_p(), ctypes.c_size_t(), ctypes.c_size_t()
        with pytest.raises(yaok.NullArgument, match="senders must not be NULL"):
            envelope._open(me, None, 2, bytes(200), 200, MESSAGE_ID, 1,
                           ctypes.byref(out), ctypes.byref(out_len), ctypes.byref(index))
        assert out.value is None


def test_null_body_with_nonzero_length_is_refused_by_the_library(alice, bob_card):
    with alice._borrow() as me, bob_card._borrow() as them:
        out, out_len = ctypes.c_void_p(), ctypes.c_size_t()
        with pytest.raises(yaok.NullArgument, match="body must not be NULL"):
            envelope._seal(me, them, None, 5, MESSAGE_ID, 1, ctypes.byref(out), ctypes.byref(out_len))
        with pytest.raises(yaok.NullArgument, match="message_id must not be NULL"):
            envelope._seal(me, them, b"hello", 5, None, 1, ctypes.byref(out), ctypes.byref(out_len))
