"""Identity and Card: accessors, names, card decoding, handle ownership and misuse."""

from __future__ import annotations

import ctypes
import gc
import re

import pytest

import yaok
from yaok import identity as identity_module

from conftest import ALICE_SECRETS


def test_new_identity_accessors():
    with yaok.Identity.new("  Alice 🔒  ") as alice:
        assert alice.name == "Alice 🔒"
        assert re.fullmatch(r"[0-9a-f]{32}", alice.user_id)
        assert re.fullmatch(r"[0-9A-F]{64}", alice.fingerprint)
        grouped = alice.fingerprint_grouped
        assert re.fullmatch(r"([0-9A-F]{4} ){15}[0-9A-F]{4}", grouped)
        assert grouped.replace(" ", "") == alice.fingerprint
        assert alice.fingerprint_short == alice.fingerprint[:6]
        assert alice.card.startswith("yaok:1:")
        assert repr(alice) == f"<yaok.Identity 'Alice 🔒' {alice.fingerprint_short}>"


def test_two_new_identities_differ():
    with yaok.Identity.new("Alice") as a, yaok.Identity.new("Alice") as b:
        assert a.fingerprint != b.fingerprint and a.user_id != b.user_id


def test_restore_is_deterministic():
    with yaok.Identity.restore("Alice", ALICE_SECRETS) as a, \
            yaok.Identity.restore("Alice", bytearray(ALICE_SECRETS)) as b, \
            yaok.Identity.restore("Other name", memoryview(ALICE_SECRETS)) as c:
        assert a.fingerprint == b.fingerprint == c.fingerprint
        assert a.user_id == c.user_id
        assert a.card == b.card  # Ed25519 signatures are deterministic
        assert a.card != c.card


@pytest.mark.parametrize("length", [0, 32, 63, 65])
def test_restore_needs_64_bytes(length):
    with pytest.raises(yaok.InvalidArgument, match="64 bytes"):
        yaok.Identity.restore("Alice", bytes(length))


@pytest.mark.parametrize("name", ["Al", "x" * 50, "👩‍👩‍👧‍👦👍", "🙂" * 50, "Zoë", "山田太郎"])
def test_valid_names(name):
    with yaok.Identity.new(name) as identity:
        assert identity.name == name


@pytest.mark.parametrize("name", ["A", "🙂", "x" * 51, "🙂" * 51, "", "  "])
def test_invalid_names(name):
    with pytest.raises(yaok.InvalidName, match="^Name must be 2-50 characters$"):
        yaok.Identity.new(name)


@pytest.mark.parametrize("name, code", [("ab\x07c", "U+0007"), ("Bob\u202eevil", "U+202E"),
                                        ("Bo\u200bb", "U+200B")])
def test_names_with_hidden_characters_say_which(name, code):
    with pytest.raises(yaok.InvalidName, match=re.escape(f"invisible, format or control characters ({code})") + "$"):
        yaok.Identity.new(name)


def test_card_preview_matches_identity(alice, alice_card):
    assert alice_card.name == alice.name == "Alice"
    assert alice_card.user_id == alice.user_id
    assert alice_card.fingerprint == alice.fingerprint
    assert alice_card.fingerprint_grouped == alice.fingerprint_grouped
    assert alice_card.fingerprint_short == alice.fingerprint_short
    assert alice_card.text == alice_card.card == alice.card
    keys = alice_card.public_keys
    assert isinstance(keys, yaok.PublicKeys)
    assert len(keys.encryption) == len(keys.signing) == 32 and keys.encryption != keys.signing
    assert repr(alice_card).startswith("<yaok.Card 'Alice' ")


def test_card_decode_trims_white_space(alice):
    with yaok.Card.decode("  " + alice.card + "\n") as card:
        assert card.text == alice.card


@pytest.mark.parametrize("text", [
    "", "hello", "https://example.com/not-a-card", "yaok:1:", "yaok:1:!!!!", "yaok:3:AAAA", "yaok:2:AAAA",
    "WIFI:S:network;T:WPA;P:secret;;", "yaok:1:" + "A" * 200,
])
def test_invalid_cards(text):
    with pytest.raises(yaok.InvalidCard) as info:
        yaok.Card.decode(text)
    # The status is the same for every defect; the message says which (issue 21 §4).
    assert info.value.message.startswith("Invalid Ya OK QR code: ")
    expected = ("unsupported card version 3" if text.startswith("yaok:3:")
                else "damaged" if text.startswith(("yaok:1:", "yaok:2:")) else "not a Ya OK card")
    assert expected in info.value.message


def test_corrupted_card_is_refused(alice):
    text = alice.card
    for position in (8, len(text) // 2, len(text) - 3):
        flipped = "B" if text[position] == "A" else "A"
        with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
            yaok.Card.decode(text[:position] + flipped + text[position + 1:])


def test_card_with_other_version_prefix_is_refused(alice):
    with pytest.raises(yaok.InvalidCard):
        yaok.Card.decode(alice.card.replace("yaok:1:", "yaok:2:", 1))


# ---- misuse at the Python level

def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError):
        yaok.Identity.new(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        yaok.Identity.new(b"Alice")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        yaok.Identity.restore("Alice", "secret" * 11)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        yaok.Card.decode(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        yaok.Identity()
    with pytest.raises(TypeError):
        yaok.Card()


def test_embedded_nul_is_refused_not_truncated():
    # A NUL is a control character, which no name may hold (PROTOCOL.md §1): InvalidName,
    # never a name cut at the NUL.
    with pytest.raises(yaok.InvalidName, match="U\\+0000"):
        yaok.Identity.new("Alice\0Mallory")
    with pytest.raises(yaok.InvalidName):
        yaok.Identity.restore("Alice\0Mallory", bytes(64))


def test_card_text_with_nul_is_an_invalid_card(alice):
    with pytest.raises(yaok.InvalidCard):
        yaok.Card.decode(alice.card + "\0garbage")


def test_invalid_utf8_is_refused_by_the_library():
    with pytest.raises(yaok.InvalidUTF8) as info:
        yaok.Identity.new("Al\udcffice")  # a lone surrogate: not encodable as valid UTF-8
    assert info.value.status == 102
    with pytest.raises(yaok.InvalidUTF8):  # the header's convention, for card text too
        yaok.Card.decode("yaok:1:\udcff")


def test_text_over_the_bound_is_refused():
    with pytest.raises(yaok.InvalidCard):
        yaok.Card.decode(" " * 4097)  # YAOK_MAX_TEXT_BYTES + 1
    # A name over 4,096 bytes is refused at once, as every defect of a name is
    # (PROTOCOL.md §1): InvalidName, not the generic text bound's InvalidArgument.
    with pytest.raises(yaok.InvalidName):
        yaok.Identity.new("A" * 4097)
    with pytest.raises(yaok.InvalidName):
        yaok.Identity.restore("A" * 4097, bytes(64))


def test_close_twice_and_use_after_close():
    alice = yaok.Identity.new("Alice")
    card = yaok.Card.decode(alice.card)
    assert not alice.closed
    alice.close()
    alice.close()
    card.close()
    card.close()
    assert alice.closed and card.closed
    with pytest.raises(yaok.HandleClosed, match="Identity is closed"):
        _ = alice.name
    with pytest.raises(yaok.HandleClosed, match="Card is closed"):
        _ = card.public_keys
    assert repr(alice) == "<yaok.Identity closed>"
    assert repr(card) == "<yaok.Card closed>"
    del alice, card  # __del__ after close is harmless


def test_context_manager_closes_even_on_error():
    with pytest.raises(RuntimeError):
        with yaok.Identity.new("Alice") as alice:
            raise RuntimeError("boom")
    assert alice.closed
    alice.close()


def test_del_frees_a_forgotten_handle(monkeypatch):
    freed = []
    real_free = identity_module._identity_free

    def counting_free(pointer):
        freed.append(ctypes.addressof(pointer.contents))
        real_free(pointer)

    monkeypatch.setattr(identity_module, "_identity_free", counting_free)
    forgotten = yaok.Identity.new("Forgotten")
    del forgotten
    gc.collect()
    assert len(freed) == 1

    closed = yaok.Identity.new("Closed")
    closed.close()
    del closed
    gc.collect()
    assert len(freed) == 2  # freed once by close(), not again by __del__


def test_wrong_handle_kind_is_refused_by_the_library(alice_card):
    """A card handle passed where an identity is expected: YAOK_E_INVALID_ARGUMENT, no crash."""
    with alice_card._borrow() as card_pointer:
        as_identity = ctypes.cast(card_pointer, identity_module.IdentityPointer)
        out = ctypes.c_void_p()
        with pytest.raises(yaok.InvalidArgument, match="identity is a yaok_card, not a yaok_identity"):
            identity_module._identity_name(as_identity, ctypes.byref(out))
        assert out.value is None


def test_null_handles_are_refused_by_the_library():
    out = ctypes.c_void_p()
    with pytest.raises(yaok.NullArgument, match="identity must not be NULL"):
        identity_module._identity_name(None, ctypes.byref(out))
    with pytest.raises(yaok.NullArgument, match="card must not be NULL"):
        identity_module._card_text(None, ctypes.byref(out))
    with pytest.raises(yaok.NullArgument):
        identity_module._card_decode(None, ctypes.byref(identity_module.CardPointer()))


def test_null_out_pointer_is_refused(alice):
    with alice._borrow() as pointer:
        with pytest.raises(yaok.NullArgument, match="out must not be NULL"):
            identity_module._identity_card(pointer, None)


def test_unknown_fingerprint_format(alice):
    with alice._borrow() as pointer:
        with pytest.raises(yaok.InvalidArgument, match="Unknown fingerprint format 99"):
            identity_module._identity_fingerprint(pointer, 99, ctypes.byref(ctypes.c_void_p()))
