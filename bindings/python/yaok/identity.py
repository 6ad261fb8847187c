"""Identities and contact cards (include/yaok.h, "identity" and "contact cards").

>>> with Identity.new("Alice") as alice, Card.decode(alice.card) as card:
...     assert card.fingerprint == alice.fingerprint

Both classes own a library handle. Use them as context managers or call ``close()``;
``__del__`` frees a forgotten handle as a safety net. Both are immutable and may be shared
between threads (the header allows concurrent use of one handle); ``close()`` while another
thread is in a call on the same object waits for that call before freeing.
"""

from __future__ import annotations

import ctypes
from typing import Any, ContextManager, NamedTuple, Optional, Union

from ._lib import STATUS, HandleOwner, OwnedHandle, declare, encode_name, take_string
from .errors import HandleClosed, InvalidCard

__all__ = [
    "Identity", "Card", "PublicKeys",
    "PUBLIC_KEY_BYTES", "IDENTITY_SECRET_BYTES",
    "FINGERPRINT_HEX", "FINGERPRINT_GROUPED", "FINGERPRINT_SHORT",
]

#: YAOK_PUBLIC_KEY_BYTES
PUBLIC_KEY_BYTES = 32
#: YAOK_IDENTITY_SECRET_BYTES: X25519 secret key (32) || Ed25519 seed (32).
IDENTITY_SECRET_BYTES = 64
#: YAOK_FINGERPRINT_HEX: 64 upper-case hex characters.
FINGERPRINT_HEX = 0
#: YAOK_FINGERPRINT_GROUPED: 16 groups of 4, separated by spaces.
FINGERPRINT_GROUPED = 1
#: YAOK_FINGERPRINT_SHORT: the first 6 hex characters.
FINGERPRINT_SHORT = 2


class yaok_identity(ctypes.Structure):
    """Opaque ``struct yaok_identity``."""


class yaok_card(ctypes.Structure):
    """Opaque ``struct yaok_card``."""


IdentityPointer = ctypes.POINTER(yaok_identity)
CardPointer = ctypes.POINTER(yaok_card)

_char_out = ctypes.POINTER(ctypes.c_void_p)  # char **out: kept as an address so it can be freed
_bytes_in = ctypes.c_char_p                  # const uint8_t *: a bytes object's buffer, no copy

# ---- identity
_identity_new = declare("yaok_identity_new", STATUS, ctypes.c_char_p, ctypes.POINTER(IdentityPointer))
_identity_restore = declare("yaok_identity_restore", STATUS, ctypes.c_char_p, _bytes_in, ctypes.c_size_t,
                            ctypes.POINTER(IdentityPointer))
_identity_free = declare("yaok_identity_free", None, IdentityPointer)
_identity_name = declare("yaok_identity_name", STATUS, IdentityPointer, _char_out)
_identity_user_id = declare("yaok_identity_user_id", STATUS, IdentityPointer, _char_out)
_identity_fingerprint = declare("yaok_identity_fingerprint", STATUS, IdentityPointer, ctypes.c_uint32, _char_out)
_identity_card = declare("yaok_identity_card", STATUS, IdentityPointer, _char_out)

# ---- contact cards
_card_decode = declare("yaok_card_decode", STATUS, ctypes.c_char_p, ctypes.POINTER(CardPointer))
_card_free = declare("yaok_card_free", None, CardPointer)
_card_name = declare("yaok_card_name", STATUS, CardPointer, _char_out)
_card_user_id = declare("yaok_card_user_id", STATUS, CardPointer, _char_out)
_card_fingerprint = declare("yaok_card_fingerprint", STATUS, CardPointer, ctypes.c_uint32, _char_out)
_card_text = declare("yaok_card_text", STATUS, CardPointer, _char_out)
_card_public_keys = declare("yaok_card_public_keys", STATUS, CardPointer,
                            ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_uint8))


class PublicKeys(NamedTuple):
    """A person's two public keys, 32 bytes each."""

    encryption: bytes
    """X25519: messages are sealed to it."""
    signing: bytes
    """Ed25519: it verifies the owner's contact card."""


class _Owner(HandleOwner):
    """Common handle ownership: close(), context manager, __del__ safety net."""

    _kind = "handle"
    _handle: Optional[OwnedHandle] = None

    def _adopt(self, pointer: Any, free: Any) -> None:
        self._handle = OwnedHandle(pointer, free, self._kind)

    def _borrow(self) -> ContextManager[Any]:
        handle = self._handle
        if handle is None:
            raise HandleClosed(f"{self._kind} is closed")
        return handle.borrow()

    def _string(self, fn: Any, *args: Any) -> str:
        out = ctypes.c_void_p()
        with self._borrow() as pointer:
            fn(pointer, *args, ctypes.byref(out))
        return take_string(out)

    def close(self) -> None:
        """Frees the library handle (wiping secret keys). Safe to call more than once."""
        super().close()


class Identity(_Owner):
    """A person's own identity: X25519 and Ed25519 key pairs and a display name.

    Create one with :meth:`new` or :meth:`restore`, not with the constructor. The secret
    keys stay in the library's locked, guarded memory; :meth:`close` wipes them.
    """

    _kind = "Identity"

    def __init__(self, _pointer: Any = None) -> None:
        if not isinstance(_pointer, IdentityPointer):
            raise TypeError("use Identity.new(name) or Identity.restore(name, secrets)")
        self._adopt(_pointer, _identity_free)

    @classmethod
    def new(cls, name: str) -> "Identity":
        """A fresh identity (``yaok_identity_new``).

        ``name`` is 2 to 50 characters as a person counts them (an emoji is one); white
        space around it is removed. Raises :class:`~yaok.errors.InvalidName`
        ("Name must be 2-50 characters")."""
        out = IdentityPointer()
        _identity_new(encode_name(name), ctypes.byref(out))
        return cls(out)

    @classmethod
    def restore(cls, name: str, secrets: Union[bytes, bytearray, memoryview]) -> "Identity":
        """Rebuilds an identity from its 64 secret bytes: the X25519 secret key (32) followed
        by the Ed25519 seed (32) (``yaok_identity_restore``). Wipe your copy afterwards
        where you can (a ``bytearray`` can be zeroed; ``bytes`` cannot).

        Raises :class:`~yaok.errors.InvalidArgument` when ``secrets`` is not 64 bytes."""
        if not isinstance(secrets, (bytes, bytearray, memoryview)):
            raise TypeError(f"secrets must be bytes-like, not {type(secrets).__name__}")
        raw = bytes(secrets)
        out = IdentityPointer()
        _identity_restore(encode_name(name), raw, len(raw), ctypes.byref(out))
        return cls(out)

    @property
    def name(self) -> str:
        """The display name."""
        return self._string(_identity_name)

    @property
    def user_id(self) -> str:
        """The user ID: 32 lower-case hex characters derived from the public keys."""
        return self._string(_identity_user_id)

    @property
    def fingerprint(self) -> str:
        """SHA-256 fingerprint of the public keys: 64 upper-case hex characters."""
        return self._string(_identity_fingerprint, FINGERPRINT_HEX)

    @property
    def fingerprint_grouped(self) -> str:
        """The fingerprint as 16 groups of 4 characters, for reading aloud."""
        return self._string(_identity_fingerprint, FINGERPRINT_GROUPED)

    @property
    def fingerprint_short(self) -> str:
        """The first 6 hex characters of the fingerprint, shown next to a name."""
        return self._string(_identity_fingerprint, FINGERPRINT_SHORT)

    @property
    def card(self) -> str:
        """The signed contact card text (``yaok:1:…``), the payload of the QR code."""
        return self._string(_identity_card)

    def __repr__(self) -> str:
        if self.closed:
            return "<yaok.Identity closed>"
        return f"<yaok.Identity {self.name!r} {self.fingerprint_short}>"


class Card(_Owner):
    """A decoded, signature-checked contact card: a preview of a person (name, fingerprint,
    keys) before anything is stored. Create one with :meth:`decode`."""

    _kind = "Card"

    def __init__(self, _pointer: Any = None) -> None:
        if not isinstance(_pointer, CardPointer):
            raise TypeError("use Card.decode(text)")
        self._adopt(_pointer, _card_free)

    @classmethod
    def decode(cls, text: str) -> "Card":
        """Decodes and verifies card text (``yaok_card_decode``).

        Another app's QR text, an unknown version, corrupted data or a bad signature raise
        :class:`~yaok.errors.InvalidCard` ("Invalid Ya OK QR code")."""
        if not isinstance(text, str):
            raise TypeError(f"text must be str, not {type(text).__name__}")
        if "\0" in text:  # C would read only up to the NUL; it is not a card either way
            raise InvalidCard("Invalid Ya OK QR code")
        out = CardPointer()
        _card_decode(text.encode("utf-8", errors="surrogatepass"), ctypes.byref(out))
        return cls(out)

    @property
    def name(self) -> str:
        """The card owner's display name."""
        return self._string(_card_name)

    @property
    def user_id(self) -> str:
        """The card owner's user ID (32 lower-case hex characters)."""
        return self._string(_card_user_id)

    @property
    def fingerprint(self) -> str:
        """The owner's fingerprint: 64 upper-case hex characters."""
        return self._string(_card_fingerprint, FINGERPRINT_HEX)

    @property
    def fingerprint_grouped(self) -> str:
        """The owner's fingerprint as 16 groups of 4 characters."""
        return self._string(_card_fingerprint, FINGERPRINT_GROUPED)

    @property
    def fingerprint_short(self) -> str:
        """The first 6 hex characters of the owner's fingerprint."""
        return self._string(_card_fingerprint, FINGERPRINT_SHORT)

    @property
    def text(self) -> str:
        """The card's canonical text (``yaok:1:…``)."""
        return self._string(_card_text)

    @property
    def card(self) -> str:
        """Same as :attr:`text`, named like :attr:`Identity.card`."""
        return self.text

    @property
    def public_keys(self) -> PublicKeys:
        """The owner's X25519 (encryption) and Ed25519 (signing) public keys."""
        encryption = (ctypes.c_uint8 * PUBLIC_KEY_BYTES)()
        signing = (ctypes.c_uint8 * PUBLIC_KEY_BYTES)()
        with self._borrow() as pointer:
            _card_public_keys(pointer, encryption, signing)
        return PublicKeys(bytes(encryption), bytes(signing))

    def __repr__(self) -> str:
        if self.closed:
            return "<yaok.Card closed>"
        return f"<yaok.Card {self.name!r} {self.fingerprint_short}>"
