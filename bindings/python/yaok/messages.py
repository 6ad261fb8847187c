"""Stored messages of a node (include/yaok.h, "messages"; JSON in docs/ABI.md, "message"
and "history page").

Text to send is ``str`` (or UTF-8 ``bytes``), 1 to 10240 bytes of UTF-8. A received text can
be longer, up to 30720 bytes (:data:`yaok.envelope.MAX_RECEIVED_TEXT_BYTES`): a sender's body
that was not UTF-8 is stored with U+FFFD per invalid byte and marked
:attr:`Message.repaired` (PROTOCOL.md §3.2). Message IDs are 16 bytes;
they may also be given as 32 hex characters. Every call needs the node unlocked.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

from ._lib import STATUS, TextEnum, declare
from ._node_base import CHAR_OUT, UINT32_MAX, NodeBase, NodePointer, check_int, text_bytes
from .errors import InvalidArgument, NotFound

__all__ = ["Message", "MessageStatus", "MessageDirection", "HistoryPage", "OutboxEntry",
           "MESSAGE_ID_BYTES"]

#: YAOK_MESSAGE_ID_BYTES
MESSAGE_ID_BYTES = 16


class MessageStatus(TextEnum):
    """A message's status (docs/ABI.md, "message"). The value is the JSON text
    (``MessageStatus.SENT == "sent"``); :attr:`code` is the C value (``YAOK_MESSAGE_*``)."""

    PENDING = "pending"
    SENDING = "sending"
    SENT = "sent"
    DELIVERED = "delivered"
    """Also the status of every incoming message."""
    FAILED = "failed"

    @property
    def code(self) -> int:
        """``YAOK_MESSAGE_<NAME>``: 0 (pending) to 4 (failed)."""
        return _STATUS_CODES[self]


_STATUS_CODES = {status: code for code, status in enumerate(MessageStatus)}


class MessageDirection(TextEnum):
    """Whether a message was sent from this node or received by it."""

    OUTGOING = "outgoing"
    INCOMING = "incoming"


_send = declare("yaok_message_send", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p, ctypes.c_size_t,
                CHAR_OUT)
_retry = declare("yaok_message_retry", STATUS, NodePointer, ctypes.c_char_p, CHAR_OUT)
_get = declare("yaok_message_get", STATUS, NodePointer, ctypes.c_char_p, CHAR_OUT)
_outbox = declare("yaok_outbox", STATUS, NodePointer, CHAR_OUT)
_history = declare("yaok_message_history", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p,
                   ctypes.c_uint32, CHAR_OUT)
_mark_read = declare("yaok_message_mark_read", STATUS, NodePointer, ctypes.c_int64,
                     ctypes.POINTER(ctypes.c_uint64))

MessageID = Union[bytes, bytearray, memoryview, str]


def message_id_bytes(value: MessageID) -> bytes:
    """16 bytes from bytes-like or 32 hex characters. The C functions read exactly 16 bytes
    from the pointer, so the length is checked here."""
    if isinstance(value, str):
        try:
            raw = bytes.fromhex(value)
        except ValueError:
            raise InvalidArgument("message_id must be 16 bytes or 32 hex characters") from None
    elif isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
    else:
        raise TypeError(f"message_id must be bytes or hex str, not {type(value).__name__}")
    if len(raw) != MESSAGE_ID_BYTES:
        raise InvalidArgument(f"message_id must be {MESSAGE_ID_BYTES} bytes, not {len(raw)}")
    return raw


@dataclass(frozen=True)
class Message:
    """A stored message (docs/ABI.md, "message")."""

    message_id: bytes
    conversation_id: int
    direction: MessageDirection
    status: MessageStatus
    """Incoming messages are :attr:`MessageStatus.DELIVERED`."""
    text: str
    sender_timestamp_ms: int
    created_ms: int
    sent_ms: Optional[int]
    received_ms: Optional[int]
    unread: bool
    repaired: bool = False
    """Incoming: the sender's text was not UTF-8 and this is it with U+FFFD in place of each
    invalid sequence (PROTOCOL.md §3.2), so up to :data:`yaok.envelope.MAX_RECEIVED_TEXT_BYTES`
    bytes of UTF-8; an ``invalid_text`` security event says so too."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Message":
        return cls(message_id=bytes.fromhex(data["message_id"]),
                   conversation_id=int(data["conversation_id"]),
                   direction=MessageDirection(data["direction"]), status=MessageStatus(data["status"]),
                   text=data["text"],
                   sender_timestamp_ms=int(data["sender_timestamp_ms"]),
                   created_ms=int(data["created_ms"]), sent_ms=data.get("sent_ms"),
                   received_ms=data.get("received_ms"), unread=bool(data.get("unread", False)),
                   repaired=bool(data.get("repaired", False)))

    @property
    def message_id_hex(self) -> str:
        return self.message_id.hex()

    @property
    def outgoing(self) -> bool:
        return self.direction is MessageDirection.OUTGOING


@dataclass(frozen=True)
class HistoryPage:
    """A page of a conversation, oldest first (``yaok_message_history``)."""

    messages: List[Message]
    older_cursor: Optional[str]
    """Pass as ``before=`` for the page before this one; ``None`` when this page reaches the
    first message."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "HistoryPage":
        return cls(messages=[Message.from_json(m) for m in data.get("messages", [])],
                   older_cursor=data.get("older_cursor"))

    @property
    def has_older(self) -> bool:
        return self.older_cursor is not None


@dataclass(frozen=True)
class OutboxEntry:
    """A message still on its way (docs/ABI.md, "outbox entry")."""

    message_id: bytes
    contact_id: int
    status: MessageStatus
    attempts: int
    next_attempt_ms: int
    expires_ms: int
    note: Optional[str]
    """``"Will send when connected"`` when no link to the recipient is open."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "OutboxEntry":
        return cls(message_id=bytes.fromhex(data["message_id"]), contact_id=int(data["contact_id"]),
                   status=MessageStatus(data["status"]), attempts=int(data["attempts"]),
                   next_attempt_ms=int(data["next_attempt_ms"]), expires_ms=int(data["expires_ms"]),
                   note=data.get("note"))


class MessagesMixin(NodeBase):
    def send(self, contact_id: int, text: Union[str, bytes]) -> Message:
        """Sends ``text`` to ``contact_id`` (``yaok_message_send``): encrypted, stored and
        queued at once; returns the message, pending. It goes out over the first link to the
        contact; :attr:`EventKind.MESSAGE_STATUS_CHANGED` reports sent, delivered or failed.
        Empty: :class:`~yaok.EmptyMessage`; over 10240 bytes: :class:`~yaok.MessageTooLarge`;
        no such (or a deleted) contact: :class:`~yaok.NotFound`."""
        body = text_bytes(text, "text")
        return Message.from_json(self._call_json(_send, check_int(contact_id, "contact_id"), body, len(body)))

    def retry(self, message_id: MessageID) -> Message:
        """Tries a pending, failed or sent message again now (``yaok_message_retry``): it is
        pending again until a link or relay confirms it. Already delivered:
        :class:`~yaok.InvalidArgument`; no such outgoing message: :class:`~yaok.NotFound`."""
        return Message.from_json(self._call_json(_retry, message_id_bytes(message_id)))

    def message(self, message_id: MessageID, contact_id: Optional[int] = None) -> Message:
        """One stored message. Without ``contact_id``: one we sent, with its current status
        (``yaok_message_get``). With it: any message of that conversation, received ones
        included (``yaok_message_lookup``), e.g. the one a
        :attr:`~yaok.EventKind.MESSAGE_RECEIVED` event names. None: :class:`~yaok.NotFound`."""
        raw = message_id_bytes(message_id)
        if contact_id is None:
            try:
                return Message.from_json(self._call_json(_get, raw))
            except NotFound as e:
                raise NotFound(f"{e.message} (a received message needs its conversation: "
                               "message(message_id, contact_id=...))", e.status) from None
        from .typed import read_message  # the typed handle's getters (typed.py)
        with self._borrow() as pointer:
            return read_message(pointer, check_int(contact_id, "contact_id"), raw)

    def outbox(self) -> List[OutboxEntry]:
        """Messages still on their way, in sending order (``yaok_outbox``)."""
        return [OutboxEntry.from_json(e) for e in self._call_json(_outbox)]

    def history(self, conversation_id: int, before: Optional[str] = None, limit: int = 100) -> HistoryPage:
        """A page of up to ``limit`` (1 to 1000) messages of a conversation, oldest first.
        ``before``: ``None`` for the newest page, else the previous page's
        :attr:`HistoryPage.older_cursor`."""
        cursor = None if before is None else self._text(before, "before")
        return HistoryPage.from_json(self._call_json(_history, check_int(conversation_id, "conversation_id"),
                                                     cursor, check_int(limit, "limit", 0, UINT32_MAX)))

    def mark_read(self, conversation_id: int) -> int:
        """Marks every message of the conversation read; returns how many were unread."""
        count = ctypes.c_uint64(0)
        self._call(_mark_read, check_int(conversation_id, "conversation_id"), ctypes.byref(count))
        return int(count.value)
