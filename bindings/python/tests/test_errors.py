"""The exception hierarchy and its mapping from the header's status codes."""

from __future__ import annotations

import pytest

import yaok
from yaok import errors
from yaok.errors import Status, error_for_status

from conftest import header_status_codes


def test_status_enum_equals_header():
    header = header_status_codes()
    python = {("OK" if s is Status.OK else "E_" + s.name): int(s) for s in Status}
    assert python == header


def test_every_code_has_its_own_class():
    for status in Status:
        if status is Status.OK:
            continue
        cls = errors.BY_STATUS[int(status)]
        assert cls.code == status
        assert cls.__name__ in errors.__all__


@pytest.mark.parametrize("status,cls,base", [
    (100, errors.NullArgument, errors.UsageError),
    (101, errors.InvalidArgument, errors.UsageError),
    (102, errors.InvalidUTF8, errors.UsageError),
    (200, errors.InvalidName, errors.IdentityError),
    (201, errors.InvalidCard, errors.IdentityError),
    (300, errors.NotForMe, errors.MessageError),
    (301, errors.Tampered, errors.MessageError),
    (302, errors.UnknownSender, errors.MessageError),
    (303, errors.SenderAuthFailed, errors.MessageError),
    (304, errors.MessageTooLarge, errors.MessageError),
    (305, errors.EmptyMessage, errors.MessageError),
    (306, errors.MalformedEnvelope, errors.MessageError),
    (401, errors.WrongPIN, errors.StoreError),
    (405, errors.StorageError, errors.StoreError),
    (410, errors.AlreadyInitialized, errors.StoreError),
    (500, errors.MalformedPacket, errors.ProtocolError),
    (505, errors.Expired, errors.ProtocolError),
    (900, errors.InternalError, errors.LibraryError),
    (902, errors.CryptoInitError, errors.LibraryError),
])
def test_mapping(status, cls, base):
    e = error_for_status(status, "the message")
    assert type(e) is cls and isinstance(e, base) and isinstance(e, yaok.YaOKError)
    assert e.status == status and e.message == "the message" and str(e) == "the message"
    assert e.status_name == "YAOK_E_" + Status(status).name
    assert repr(e) == f"{cls.__name__}(status={status}, message='the message')"


def test_unknown_codes_map_to_their_range():
    assert type(error_for_status(299, "x")) is errors.IdentityError
    assert type(error_for_status(599, "x")) is errors.ProtocolError
    assert type(error_for_status(777, "x")) is yaok.YaOKError
    assert type(error_for_status(-5, "x")) is yaok.YaOKError
    e = error_for_status(299, "x")
    assert e.status == 299 and e.status_name == "unknown"


def test_ok_is_not_an_error():
    with pytest.raises(ValueError):
        error_for_status(0)


def test_value_errors_are_value_errors():
    """Bad input from the caller can be caught as ValueError, as Python code expects."""
    for cls in (errors.InvalidName, errors.InvalidCard, errors.MessageTooLarge, errors.InvalidArgument):
        assert issubclass(cls, ValueError)


# ---- messages come from the library

def test_invalid_name_message():
    for bad in ["A", "", "   ", "x" * 51, " B "]:
        with pytest.raises(yaok.InvalidName) as info:
            yaok.Identity.new(bad)
        assert info.value.message == "Name must be 2-50 characters"
        assert info.value.status == 200


def test_invalid_card_message():
    with pytest.raises(yaok.InvalidCard) as info:
        yaok.Card.decode("https://example.com/not-a-card")
    assert info.value.message == "Invalid Ya OK QR code: not a Ya OK card (Ya OK card text starts with yaok:1: or yaok:2:)"
    assert info.value.status == 201


def test_message_too_large_message(alice, bob_card):
    with pytest.raises(yaok.MessageTooLarge) as info:
        yaok.envelope.seal(alice, bob_card, bytes(10241), bytes(16), 1)
    assert info.value.message == "Message too large (max 10KB)"
    assert info.value.status == 304


def test_null_argument_message_names_the_argument():
    import ctypes
    from yaok import identity
    with pytest.raises(yaok.NullArgument, match="name must not be NULL") as info:
        identity._identity_new(None, ctypes.byref(identity.IdentityPointer()))
    assert info.value.status == 100
