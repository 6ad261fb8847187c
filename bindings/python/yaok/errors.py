"""Exceptions raised by the binding, mapped from the C ABI's ``yaok_status`` codes.

Every failure the library reports becomes an instance of :class:`YaOKError` (or one of its
subclasses) carrying ``.status`` (the numeric ``yaok_status``) and ``.message`` (the text of
``yaok_last_error_message()``, which is what a person should read). The classes follow the
header's numeric ranges::

    YaOKError
    ├── UsageError      1xx  the caller's arguments
    ├── IdentityError   2xx  identity and contacts
    ├── MessageError    3xx  message crypto
    ├── StoreError      4xx  app lock and storage
    ├── ProtocolError   5xx  wire protocol
    └── LibraryError    9xx  the library itself

and :class:`HandleClosed` (a binding object used after ``close()``, no status) directly
below :class:`YaOKError`.

with one class per code below them. A code this module does not know yet (a newer library
within the same ABI) maps to its range's class, or to :class:`YaOKError` itself.

Loading problems are not statuses: :class:`LibraryNotFound` and :class:`AbiVersionMismatch`
are :class:`ImportError` subclasses, raised by the first call that needs the library (or by
:func:`yaok.load_library`) when it cannot be used; ``import yaok`` itself never loads it.

This module does not touch the library, so it can be imported (and its mapping tested)
on its own.
"""

from __future__ import annotations

import enum
from typing import Dict, Iterator, Optional, Type

__all__ = [
    "Status",
    "YaOKError",
    "UsageError", "NullArgument", "InvalidArgument", "InvalidUTF8", "BufferTooSmall",
    "IdentityError", "InvalidName", "InvalidCard", "ContactExists", "NotFound",
    "MessageError", "NotForMe", "Tampered", "UnknownSender", "SenderAuthFailed",
    "MessageTooLarge", "EmptyMessage", "MalformedEnvelope",
    "StoreError", "Locked", "WrongPIN", "LockedOut", "PINTooShort", "PINMismatch",
    "StorageError", "DiskFull", "CorruptStore", "ConfirmationRequired", "NotInitialized",
    "AlreadyInitialized", "NoPlatformKey", "WrongPlatformKey", "Closed", "Busy",
    "AlreadyUnlocked", "DeviceSecretRequired", "WrongDeviceSecret",
    "ProtocolError", "MalformedPacket", "UnsupportedVersion", "UnknownPacketType",
    "FrameTooLarge", "FragmentInvalid", "Expired", "LinkFailed", "NoRoute",
    "RelayError", "TLSFailed", "CertificateRejected", "RelayAuthFailed", "Revoked",
    "RateLimited", "MailboxFull", "RelayUnavailable",
    "LibraryError", "InternalError", "OutOfMemory", "CryptoInitError",
    "HandleClosed", "LibraryNotFound", "AbiVersionMismatch",
    "error_for_status",
]


class Status(enum.IntEnum):
    """The ``yaok_status`` values of include/yaok.h (``YAOK_E_<NAME>`` is ``Status.<NAME>``).

    Never renumbered; the test suite compares this enum with the header."""

    OK = 0

    NULL_ARGUMENT = 100
    INVALID_ARGUMENT = 101
    INVALID_UTF8 = 102
    BUFFER_TOO_SMALL = 103

    INVALID_NAME = 200
    INVALID_CARD = 201
    CONTACT_EXISTS = 202
    NOT_FOUND = 203

    NOT_FOR_ME = 300
    TAMPERED = 301
    UNKNOWN_SENDER = 302
    SENDER_AUTH_FAILED = 303
    MESSAGE_TOO_LARGE = 304
    EMPTY_MESSAGE = 305
    MALFORMED_ENVELOPE = 306

    LOCKED = 400
    WRONG_PIN = 401
    LOCKED_OUT = 402
    PIN_TOO_SHORT = 403
    PIN_MISMATCH = 404
    STORAGE = 405
    DISK_FULL = 406
    CORRUPT_STORE = 407
    CONFIRMATION_REQUIRED = 408
    NOT_INITIALIZED = 409
    ALREADY_INITIALIZED = 410
    NO_PLATFORM_KEY = 411
    WRONG_PLATFORM_KEY = 412
    CLOSED = 413
    BUSY = 414
    ALREADY_UNLOCKED = 415
    DEVICE_SECRET_REQUIRED = 416
    WRONG_DEVICE_SECRET = 417

    MALFORMED_PACKET = 500
    UNSUPPORTED_VERSION = 501
    UNKNOWN_PACKET_TYPE = 502
    FRAME_TOO_LARGE = 503
    FRAGMENT_INVALID = 504
    EXPIRED = 505
    LINK_FAILED = 506
    NO_ROUTE = 507

    TLS_FAILED = 600
    CERTIFICATE_REJECTED = 601
    RELAY_AUTH_FAILED = 602
    REVOKED = 603
    RATE_LIMITED = 604
    MAILBOX_FULL = 605
    RELAY_UNAVAILABLE = 606

    INTERNAL = 900
    OUT_OF_MEMORY = 901
    CRYPTO_INIT = 902


class YaOKError(Exception):
    """A failure reported by Ya OK core.

    Attributes:
        status: the numeric ``yaok_status`` code.
        message: the library's readable message (``yaok_last_error_message()``).
    """

    #: The code this class stands for; ``None`` for range and base classes.
    code: Optional[int] = None

    def __init__(self, message: str, status: Optional[int] = None) -> None:
        super().__init__(message)
        self.message = message
        self.status: int = int(status if status is not None else (self.code if self.code is not None else -1))

    @property
    def status_name(self) -> str:
        """``YAOK_E_<NAME>`` of the status, or ``"unknown"``."""
        try:
            return "YAOK_E_" + Status(self.status).name
        except ValueError:
            return "unknown"

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, message={self.message!r})"


# ---- 1xx: the caller's arguments
class UsageError(YaOKError):
    """1xx: the arguments of a call were refused."""


class NullArgument(UsageError):
    """A required pointer argument was NULL (the binding normally prevents this)."""
    code = Status.NULL_ARGUMENT


class InvalidArgument(UsageError, ValueError):
    """An argument has the wrong size, range or kind (e.g. a handle of the wrong type)."""
    code = Status.INVALID_ARGUMENT


class InvalidUTF8(UsageError, ValueError):
    """Text is not valid UTF-8 (the library refuses it rather than repairing it)."""
    code = Status.INVALID_UTF8


class BufferTooSmall(UsageError):
    code = Status.BUFFER_TOO_SMALL


# ---- 2xx: identity and contacts
class IdentityError(YaOKError):
    """2xx: identities and contacts."""


class InvalidName(IdentityError, ValueError):
    """"Name must be 2-50 characters"."""
    code = Status.INVALID_NAME


class InvalidCard(IdentityError, ValueError):
    """"Invalid Ya OK QR code": wrong format, corrupted, bad signature or another app's text."""
    code = Status.INVALID_CARD


class ContactExists(IdentityError):
    code = Status.CONTACT_EXISTS


class NotFound(IdentityError, LookupError):
    code = Status.NOT_FOUND


# ---- 3xx: message crypto
class MessageError(YaOKError):
    """3xx: sealing or opening a message envelope."""


class NotForMe(MessageError):
    """The envelope is addressed to someone else."""
    code = Status.NOT_FOR_ME


class Tampered(MessageError):
    """The authentication tag failed: altered, corrupted, or opened with another message ID
    or timestamp than it was sealed with."""
    code = Status.TAMPERED


class UnknownSender(MessageError):
    """Authentic, but the sender is none of the known contacts passed in."""
    code = Status.UNKNOWN_SENDER


class SenderAuthFailed(MessageError):
    """The sender's authenticator does not verify."""
    code = Status.SENDER_AUTH_FAILED


class MessageTooLarge(MessageError, ValueError):
    """"Message too large (max 10KB)"."""
    code = Status.MESSAGE_TOO_LARGE


class EmptyMessage(MessageError, ValueError):
    code = Status.EMPTY_MESSAGE


class MalformedEnvelope(MessageError):
    code = Status.MALFORMED_ENVELOPE


# ---- 4xx: app lock and storage
class StoreError(YaOKError):
    """4xx: the app lock and the local store."""


class Locked(StoreError):
    code = Status.LOCKED


class WrongPIN(StoreError):
    code = Status.WRONG_PIN


class LockedOut(StoreError):
    code = Status.LOCKED_OUT


class PINTooShort(StoreError, ValueError):
    code = Status.PIN_TOO_SHORT


class PINMismatch(StoreError, ValueError):
    code = Status.PIN_MISMATCH


class StorageError(StoreError):
    code = Status.STORAGE


class DiskFull(StoreError):
    code = Status.DISK_FULL


class CorruptStore(StoreError):
    code = Status.CORRUPT_STORE


class ConfirmationRequired(StoreError):
    code = Status.CONFIRMATION_REQUIRED


class NotInitialized(StoreError):
    code = Status.NOT_INITIALIZED


class AlreadyInitialized(StoreError):
    code = Status.ALREADY_INITIALIZED


class NoPlatformKey(StoreError):
    """"No platform key is registered"."""
    code = Status.NO_PLATFORM_KEY


class WrongPlatformKey(StoreError):
    """"Incorrect platform key"."""
    code = Status.WRONG_PLATFORM_KEY


class Closed(StoreError):
    """A link that either side closed, or a node closing (YAOK_E_CLOSED). Not to be confused with :class:`HandleClosed`,
    which the binding raises itself for a Python object used after ``close()``."""
    code = Status.CLOSED


class Busy(StoreError):
    """The data directory is open in another node (this or another process)."""
    code = Status.BUSY


class AlreadyUnlocked(StoreError):
    """An unlock on a node that is already unlocked: refused, not counted as a wrong PIN."""
    code = Status.ALREADY_UNLOCKED


class DeviceSecretRequired(StoreError):
    """The vault is bound to a device secret: call :meth:`~yaok.Node.set_device_secret`
    before unlocking. Not counted as a wrong PIN."""
    code = Status.DEVICE_SECRET_REQUIRED


class WrongDeviceSecret(StoreError):
    """The device secret set is not the one the vault is bound to. Not counted as a wrong
    PIN."""
    code = Status.WRONG_DEVICE_SECRET


# ---- 5xx: wire protocol
class ProtocolError(YaOKError):
    """5xx: packets and framing on the wire."""


class MalformedPacket(ProtocolError):
    code = Status.MALFORMED_PACKET


class UnsupportedVersion(ProtocolError):
    code = Status.UNSUPPORTED_VERSION


class UnknownPacketType(ProtocolError):
    code = Status.UNKNOWN_PACKET_TYPE


class FrameTooLarge(ProtocolError):
    code = Status.FRAME_TOO_LARGE


class FragmentInvalid(ProtocolError):
    code = Status.FRAGMENT_INVALID


class Expired(ProtocolError):
    code = Status.EXPIRED


class LinkFailed(ProtocolError):
    """Handshake or link protocol failure: the link closes."""
    code = Status.LINK_FAILED


class NoRoute(ProtocolError):
    """No transports enabled."""
    code = Status.NO_ROUTE


# ---- 6xx: relays
class RelayError(YaOKError):
    """6xx: a relay refused or could not be reached."""


class TLSFailed(RelayError):
    code = Status.TLS_FAILED


class CertificateRejected(RelayError):
    """The relay's certificate did not match the pin or CA: never falls back to plaintext."""
    code = Status.CERTIFICATE_REJECTED


class RelayAuthFailed(RelayError):
    code = Status.RELAY_AUTH_FAILED


class Revoked(RelayError):
    code = Status.REVOKED


class RateLimited(RelayError):
    code = Status.RATE_LIMITED


class MailboxFull(RelayError):
    code = Status.MAILBOX_FULL


class RelayUnavailable(RelayError):
    code = Status.RELAY_UNAVAILABLE


# ---- 9xx: the library itself
class LibraryError(YaOKError):
    """9xx: a fault inside the library."""


class InternalError(LibraryError):
    code = Status.INTERNAL


class OutOfMemory(LibraryError):
    code = Status.OUT_OF_MEMORY


class CryptoInitError(LibraryError):
    code = Status.CRYPTO_INIT


# ---- binding-level errors (no status code)
class HandleClosed(YaOKError, ValueError):
    """The object was used after ``close()`` (like I/O on a closed file). Raised by the
    binding itself, with no status (``status`` is -1), but a :class:`YaOKError` like every
    other failure, so ``except yaok.YaOKError`` catches it too."""


class LibraryNotFound(ImportError):
    """libyaok could not be found or loaded, or is not a Ya OK library."""


class AbiVersionMismatch(ImportError):
    """The loaded libyaok has another ABI version than this binding was written for.

    Attributes: ``expected`` (the binding's), ``found`` (the library's), ``path``."""

    def __init__(self, expected: int, found: int, path: str) -> None:
        super().__init__(
            f"{path} has C ABI version {found}, but this yaok binding was written for ABI "
            f"version {expected}; install a matching libyaok.so.{expected} or binding")
        self.expected = expected
        self.found = found
        self.path = path


_RANGES: Dict[int, Type[YaOKError]] = {
    1: UsageError, 2: IdentityError, 3: MessageError, 4: StoreError, 5: ProtocolError, 9: LibraryError,
}


def _leaf_classes(cls: Type[YaOKError]) -> Iterator[Type[YaOKError]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _leaf_classes(sub)


#: status code -> the exception class raised for it.
BY_STATUS: Dict[int, Type[YaOKError]] = {
    int(c.code): c for c in _leaf_classes(YaOKError) if c.code is not None
}


def error_for_status(status: int, message: Optional[str] = None) -> YaOKError:
    """The exception for a non-zero ``status``, with ``message`` (or a generic text)."""
    if status == Status.OK:
        raise ValueError("status 0 (YAOK_OK) is not an error")
    cls = BY_STATUS.get(status) or _RANGES.get(status // 100 if status > 0 else -1, YaOKError)
    return cls(message if message is not None else f"Ya OK error {status}", status)
