"""The typed-access section of include/yaok.h ("typed access: events, messages, contacts,
diagnostics without JSON"): opaque ``yaok_message``, ``yaok_contact`` and
``yaok_diagnostics`` handles with getters, and getters on a live ``yaok_event``.

They exist for C apps, which should not need a JSON parser. Python reads the same data
through the JSON functions (:class:`yaok.Message`, :class:`yaok.Contact`, the ``data`` of an
event), so the binding does not wrap these; they are declared here, with the header's types,
so that the header check (tests/test_header_signatures.py) covers every function and
``yaok._lib.declarations()`` can call them for tests.

Constants (``YAOK_DIRECTION_*``, ``YAOK_TIME_*``, ``YAOK_TRANSPORT_*``,
``YAOK_CONNECTION_*``) are given below with the header's values.
"""

from __future__ import annotations

import ctypes
from typing import Any, List, Optional

from ._lib import STATUS, declare
from ._node_base import NodePointer
from .errors import NotFound
from .events import yaok_event
from .messages import Message, MessageDirection, MessageStatus

__all__ = ["yaok_message", "yaok_contact", "yaok_diagnostics", "MessagePointer", "ContactPointer",
           "DiagnosticsPointer", "DIRECTION_OUTGOING", "DIRECTION_INCOMING", "TIME_SENDER",
           "TIME_CREATED", "TIME_SENT", "TIME_RECEIVED", "TRANSPORT_DISABLED", "TRANSPORT_RUNNING",
           "TRANSPORT_FAILED", "CONNECTION_NEVER_CONNECTED", "CONNECTION_LAST_SEEN", "CONNECTION_ONLINE"]

DIRECTION_OUTGOING, DIRECTION_INCOMING = 0, 1
TIME_SENDER, TIME_CREATED, TIME_SENT, TIME_RECEIVED = 0, 1, 2, 3
TRANSPORT_DISABLED, TRANSPORT_RUNNING, TRANSPORT_FAILED = 0, 1, 2
CONNECTION_NEVER_CONNECTED, CONNECTION_LAST_SEEN, CONNECTION_ONLINE = 0, 1, 2


class yaok_message(ctypes.Structure):
    """Opaque ``struct yaok_message``."""


class yaok_contact(ctypes.Structure):
    """Opaque ``struct yaok_contact``."""


class yaok_diagnostics(ctypes.Structure):
    """Opaque ``struct yaok_diagnostics``."""


class yaok_history(ctypes.Structure):
    """Opaque ``struct yaok_history``."""


class yaok_outbox_list(ctypes.Structure):
    """Opaque ``struct yaok_outbox_list``."""


class yaok_outbox_entry(ctypes.Structure):
    """``struct yaok_outbox_entry`` (include/yaok.h)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("status", ctypes.c_uint32), ("contact_id", ctypes.c_int64),
                ("message_id", ctypes.c_uint8 * 16), ("attempts", ctypes.c_uint32),
                ("waiting_for_transport", ctypes.c_int32), ("next_attempt_ms", ctypes.c_int64),
                ("expires_ms", ctypes.c_int64)]


MessagePointer = ctypes.POINTER(yaok_message)
HistoryPointer = ctypes.POINTER(yaok_history)
OutboxListPointer = ctypes.POINTER(yaok_outbox_list)
ContactPointer = ctypes.POINTER(yaok_contact)
DiagnosticsPointer = ctypes.POINTER(yaok_diagnostics)
_EventPointer = ctypes.POINTER(yaok_event)
_BORROWED = ctypes.POINTER(ctypes.c_char_p)  # const char **: a string the handle lends
_ID_OUT = ctypes.POINTER(ctypes.c_uint8)      # uint8_t[YAOK_MESSAGE_ID_BYTES], the caller's

# events
_event_contact_id = declare("yaok_event_contact_id", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_int64))
_event_message_id = declare("yaok_event_message_id", STATUS, _EventPointer, _ID_OUT)
_event_message_status = declare("yaok_event_message_status", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_uint32))
_event_message = declare("yaok_event_message", STATUS, _EventPointer, ctypes.POINTER(MessagePointer))
_event_transport_name = declare("yaok_event_transport_name", STATUS, _EventPointer, _BORROWED)
_event_transport_state = declare("yaok_event_transport_state", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_uint32))
_event_text = declare("yaok_event_text", STATUS, _EventPointer, _BORROWED)
_event_link_id = declare("yaok_event_link_id", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_uint64))
_event_link_peer = declare("yaok_event_link_peer", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_uint32))

# messages
_message_send_v2 = declare("yaok_message_send_v2", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p,
                           ctypes.c_size_t, ctypes.POINTER(MessagePointer))
_message_lookup = declare("yaok_message_lookup", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p,
                          ctypes.POINTER(MessagePointer))
_message_free = declare("yaok_message_free", None, MessagePointer)
_message_id = declare("yaok_message_id", STATUS, MessagePointer, _ID_OUT)
_message_contact_id = declare("yaok_message_contact_id", STATUS, MessagePointer, ctypes.POINTER(ctypes.c_int64))
_message_direction = declare("yaok_message_direction", STATUS, MessagePointer, ctypes.POINTER(ctypes.c_uint32))
_message_status = declare("yaok_message_status", STATUS, MessagePointer, ctypes.POINTER(ctypes.c_uint32))
_message_text = declare("yaok_message_text", STATUS, MessagePointer, _BORROWED, ctypes.POINTER(ctypes.c_size_t))
_message_time = declare("yaok_message_time", STATUS, MessagePointer, ctypes.c_uint32, ctypes.POINTER(ctypes.c_int64))
_message_repaired = declare("yaok_message_repaired", STATUS, MessagePointer, ctypes.POINTER(ctypes.c_int32))
_message_unread = declare("yaok_message_unread", STATUS, MessagePointer, ctypes.POINTER(ctypes.c_int32))

# a page of history and the outbox, as handles (Python reads them as JSON: Node.history,
# Node.outbox)
_history_new = declare("yaok_history_new", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p, ctypes.c_uint32,
                       ctypes.POINTER(HistoryPointer))
_history_free = declare("yaok_history_free", None, HistoryPointer)
_history_count = declare("yaok_history_count", STATUS, HistoryPointer, ctypes.POINTER(ctypes.c_size_t))
_history_message = declare("yaok_history_message", STATUS, HistoryPointer, ctypes.c_size_t,
                           ctypes.POINTER(MessagePointer))
_history_older_cursor = declare("yaok_history_older_cursor", STATUS, HistoryPointer, _BORROWED)
_outbox_list_new = declare("yaok_outbox_list_new", STATUS, NodePointer, ctypes.POINTER(OutboxListPointer))
_outbox_list_free = declare("yaok_outbox_list_free", None, OutboxListPointer)
_outbox_list_count = declare("yaok_outbox_list_count", STATUS, OutboxListPointer, ctypes.POINTER(ctypes.c_size_t))
_outbox_list_entry = declare("yaok_outbox_list_entry", STATUS, OutboxListPointer, ctypes.c_size_t,
                             ctypes.POINTER(yaok_outbox_entry))

# contacts
_contact_add_v2 = declare("yaok_contact_add_v2", STATUS, NodePointer, ctypes.c_char_p, ctypes.POINTER(ContactPointer))
_contact_get = declare("yaok_contact_get", STATUS, NodePointer, ctypes.c_int64, ctypes.POINTER(ContactPointer))
_contact_ids = declare("yaok_contact_ids", STATUS, NodePointer, ctypes.POINTER(ctypes.c_int64), ctypes.c_size_t,
                       ctypes.POINTER(ctypes.c_size_t))
_contact_free = declare("yaok_contact_free", None, ContactPointer)
_contact_id = declare("yaok_contact_id", STATUS, ContactPointer, ctypes.POINTER(ctypes.c_int64))
_contact_name = declare("yaok_contact_name", STATUS, ContactPointer, _BORROWED)
_contact_user_id = declare("yaok_contact_user_id", STATUS, ContactPointer, _BORROWED)
_contact_fingerprint = declare("yaok_contact_fingerprint", STATUS, ContactPointer, ctypes.c_uint32, _BORROWED)
_contact_verified = declare("yaok_contact_verified", STATUS, ContactPointer, ctypes.POINTER(ctypes.c_int32))
_contact_connection = declare("yaok_contact_connection", STATUS, ContactPointer, ctypes.POINTER(ctypes.c_uint32),
                              _BORROWED, ctypes.POINTER(ctypes.c_int64))

# diagnostics
_diagnostics_new = declare("yaok_diagnostics_new", STATUS, NodePointer, ctypes.POINTER(DiagnosticsPointer))
_diagnostics_free = declare("yaok_diagnostics_free", None, DiagnosticsPointer)
_diagnostics_transport_count = declare("yaok_diagnostics_transport_count", STATUS, DiagnosticsPointer,
                                       ctypes.POINTER(ctypes.c_size_t))
_diagnostics_transport = declare("yaok_diagnostics_transport", STATUS, DiagnosticsPointer, ctypes.c_size_t,
                                 _BORROWED, ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                                 _BORROWED)


def read_message(node: Any, contact_id: int, message_id: bytes) -> Message:
    """``yaok_message_lookup`` read through the handle's getters into a :class:`Message`."""
    handle = MessagePointer()
    _message_lookup(node, contact_id, message_id, ctypes.byref(handle))
    try:
        conversation, direction, status = ctypes.c_int64(), ctypes.c_uint32(), ctypes.c_uint32()
        _message_contact_id(handle, ctypes.byref(conversation))
        _message_direction(handle, ctypes.byref(direction))
        _message_status(handle, ctypes.byref(status))
        text, length = ctypes.c_char_p(), ctypes.c_size_t()
        _message_text(handle, ctypes.byref(text), ctypes.byref(length))
        body = ctypes.string_at(text, length.value).decode("utf-8") if length.value else ""
        times: List[Optional[int]] = []
        for which in (TIME_SENDER, TIME_CREATED, TIME_SENT, TIME_RECEIVED):
            ms = ctypes.c_int64()
            try:
                _message_time(handle, which, ctypes.byref(ms))
                times.append(int(ms.value))
            except NotFound:
                times.append(None)
        repaired, unread = ctypes.c_int32(), ctypes.c_int32()
        _message_repaired(handle, ctypes.byref(repaired))
        _message_unread(handle, ctypes.byref(unread))
        return Message(message_id=bytes(message_id), conversation_id=int(conversation.value),
                       direction=MessageDirection.INCOMING if direction.value == DIRECTION_INCOMING
                       else MessageDirection.OUTGOING,
                       status=list(MessageStatus)[status.value], text=body,
                       sender_timestamp_ms=times[0] or 0, created_ms=times[1] or 0, sent_ms=times[2],
                       received_ms=times[3], unread=bool(unread.value), repaired=bool(repaired.value))
    finally:
        _message_free(handle)
