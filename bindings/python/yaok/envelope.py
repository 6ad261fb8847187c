"""The end-to-end message envelope (include/yaok.h, "message envelope"; docs/PROTOCOL.md).

>>> sealed = seal(alice, bob_card, b"Hello, Bob!", message_id, timestamp_ms)
>>> body, index = open(bob, [eve_card, alice_card], sealed, message_id, timestamp_ms)

``message_id`` (16 bytes) and ``timestamp_ms`` travel in the packet header and are bound
into the envelope: opening with other values fails as :class:`~yaok.errors.Tampered`.
Both functions may be called from several threads at once, also with the same objects.

(``open`` shadows the builtin inside this module only; use it as ``envelope.open``.)
"""

from __future__ import annotations

import contextlib
import ctypes
from typing import NamedTuple, Sequence, Union

from ._lib import STATUS, declare, take_bytes
from .errors import InvalidArgument
from .identity import Card, CardPointer, Identity, IdentityPointer

__all__ = ["seal", "open", "Opened", "MESSAGE_ID_BYTES", "MAX_MESSAGE_BYTES",
           "MAX_RECEIVED_TEXT_BYTES"]

#: YAOK_MESSAGE_ID_BYTES
MESSAGE_ID_BYTES = 16
#: YAOK_MAX_MESSAGE_BYTES: the largest body ("Message too large (max 10KB)").
MAX_MESSAGE_BYTES = 10240
#: YAOK_MAX_RECEIVED_TEXT_BYTES: the longest received text. A body that was not UTF-8 is
#: stored with U+FFFD (3 bytes) per invalid sequence (PROTOCOL.md §3.2), so up to 3 × 10240.
MAX_RECEIVED_TEXT_BYTES = 30720

_bytes_out = ctypes.POINTER(ctypes.c_void_p)
_size_out = ctypes.POINTER(ctypes.c_size_t)

_seal = declare("yaok_envelope_seal", STATUS,
                IdentityPointer, CardPointer,
                ctypes.c_char_p, ctypes.c_size_t,
                ctypes.c_char_p, ctypes.c_int64,
                _bytes_out, _size_out)
_open = declare("yaok_envelope_open", STATUS,
                IdentityPointer,
                ctypes.POINTER(CardPointer), ctypes.c_size_t,
                ctypes.c_char_p, ctypes.c_size_t,
                ctypes.c_char_p, ctypes.c_int64,
                _bytes_out, _size_out, _size_out)

BytesLike = Union[bytes, bytearray, memoryview]


class Opened(NamedTuple):
    """What :func:`open` returns; unpacks as ``body, sender_index``."""

    body: bytes
    """The plaintext."""
    sender_index: int
    """The sender's index in the ``senders`` list passed to :func:`open`."""


def _as_bytes(value: BytesLike, what: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes-like, not {type(value).__name__}")
    return bytes(value)


def _message_id(value: BytesLike) -> bytes:
    raw = _as_bytes(value, "message_id")
    # The C side reads exactly 16 bytes: a shorter buffer would be read past its end.
    if len(raw) != MESSAGE_ID_BYTES:
        raise InvalidArgument(f"message_id must be {MESSAGE_ID_BYTES} bytes, not {len(raw)}")
    return raw


def _timestamp(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"timestamp_ms must be int, not {type(value).__name__}")
    # What int64_t cannot carry is refused here; the library refuses the rest of what is
    # outside 0 to 2**48 - 1 (a packet's u48 `created`, PROTOCOL.md §3) with the same error.
    if not 0 <= value < 1 << 63:
        raise InvalidArgument("timestamp_ms is milliseconds since 1970: 0 to 2**48 - 1")
    return value


def _require(value: object, cls: type, what: str) -> None:
    if not isinstance(value, cls):
        raise TypeError(f"{what} must be a yaok.{cls.__name__}, not {type(value).__name__}")


def seal(sender: Identity, recipient_card: Card, body: BytesLike, message_id: BytesLike,
         timestamp_ms: int) -> bytes:
    """Seals ``body`` (1 to 10240 bytes) from ``sender`` to the owner of ``recipient_card``
    (``yaok_envelope_seal``). Returns the sealed envelope.

    Raises :class:`~yaok.errors.EmptyMessage`, :class:`~yaok.errors.MessageTooLarge`
    ("Message too large (max 10KB)"), :class:`~yaok.errors.InvalidArgument` for a
    message ID that is not 16 bytes."""
    _require(sender, Identity, "sender")
    _require(recipient_card, Card, "recipient_card")
    data = _as_bytes(body, "body")
    mid = _message_id(message_id)
    ts = _timestamp(timestamp_ms)
    out = ctypes.c_void_p()
    out_len = ctypes.c_size_t()
    with sender._borrow() as me, recipient_card._borrow() as them:
        _seal(me, them, data, len(data), mid, ts, ctypes.byref(out), ctypes.byref(out_len))
    return take_bytes(out, out_len)


def open(recipient: Identity, senders: Sequence[Card], sealed: BytesLike, message_id: BytesLike,
         timestamp_ms: int) -> Opened:
    """Opens an envelope addressed to ``recipient`` (``yaok_envelope_open``).

    ``senders`` are the known contacts; the result says which of them sent it. Each
    failure has its own exception: :class:`~yaok.errors.NotForMe`,
    :class:`~yaok.errors.Tampered` (also: wrong message ID or timestamp),
    :class:`~yaok.errors.SenderAuthFailed`, :class:`~yaok.errors.UnknownSender`
    (authentic, but from none of ``senders``), :class:`~yaok.errors.MalformedEnvelope`.
    Two different cards in ``senders`` with the sender's encryption key make the sender
    ambiguous: :class:`~yaok.errors.InvalidArgument`.

    The returned body is a Python copy; the library's buffer is wiped when freed."""
    _require(recipient, Identity, "recipient")
    cards = list(senders)
    for i, card in enumerate(cards):
        _require(card, Card, f"senders[{i}]")
    data = _as_bytes(sealed, "sealed")
    mid = _message_id(message_id)
    ts = _timestamp(timestamp_ms)
    out = ctypes.c_void_p()
    out_len = ctypes.c_size_t()
    index = ctypes.c_size_t()
    with contextlib.ExitStack() as stack:
        me = stack.enter_context(recipient._borrow())
        pointers = [stack.enter_context(card._borrow()) for card in cards]
        array = (CardPointer * len(pointers))(*pointers) if pointers else None
        _open(me, array, len(pointers), data, len(data), mid, ts,
              ctypes.byref(out), ctypes.byref(out_len), ctypes.byref(index))
    return Opened(take_bytes(out, out_len), int(index.value))

