"""Node events (include/yaok.h, "events" and ``yaok_node_set_event_callback``).

>>> def on_event(kind, data):
...     if kind == EventKind.LOCKED:
...         print("locked:", data["reason"])
>>> node.set_event_callback(on_event)

**Callbacks arrive on another thread**: the node's own event thread, one at a time, in
the order the events happened, never inside a call your code made. Guard shared state with
a lock, and hand work to your UI thread as your toolkit requires. A callback may call back
into the node (``node.status()``, ``node.history(...)``, …). It may also call
``node.close()``: the node is then closed at once for every thread, and freed on a helper
thread as soon as the callback returns.

An exception raised by a callback never reaches the library: it is caught and logged on
the ``yaok.events`` logger, and the next event is delivered as usual.

``kind`` is an :class:`EventKind` (an ``int``), or a plain ``int`` for a kind this binding
does not know yet (newer library); ``data`` is the event's JSON object as a ``dict``
(docs/ABI.md, "events").

How the C side is kept safe: the two C function pointers handed to the library are
module-level ctypes objects that live as long as the module (so they can never be
collected while the library may call them); ``user_data`` is a token naming the
registration in a module registry, which is dropped only when the library calls
``free_user_data`` for it.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import json
import logging
import threading
from typing import Any, Callable, Dict, Optional, Union

from ._lib import STATUS, declare
from ._node_base import NodeBase, NodeHandle, NodePointer

__all__ = ["EventKind", "EventCallback", "Registration", "EVENT_CALLBACK", "FREE_CALLBACK"]

log = logging.getLogger("yaok.events")


class EventKind(enum.IntEnum):
    """``YAOK_EVENT_*``: the kinds of ``yaok_event.kind``."""

    LOCKED = 1                  #: {"reason": "manual" | "auto_lock" | "reset"}
    UNLOCKED = 2                #: {"method": "pin" | "platform_key" | "setup"}
    SECURITY = 3                #: a security event object
    MESSAGE_STORED = 4          #: a message object
    MESSAGE_STATUS_CHANGED = 5  #: a message object with the new status
    CONTACTS_CHANGED = 6        #: {"contact_id": n}
    MESSAGE_RECEIVED = 7        #: {"contact_id": n, "message_id": hex}: never the content
    TRANSPORT_CHANGED = 8       #: {"name", "display_name", "state", "error"}
    TRANSPORT_NOTICE = 9        #: {"transport", "message", "retry_after_ms"}
    CARRY_ACTIVITY = 10         #: the carry figures (docs/ABI.md, "carry"): see :class:`~yaok.CarryStatus`
    LINK_OPENED = 11            #: {"link_id", "transport"}: a link opened; its handshake runs
    LINK_AUTHENTICATED = 12     #: {"link_id", "transport", "peer": "contact" | "stranger", "contact_id"}
    LINK_CLOSED = 13            #: {"link_id", "transport", "reason"}
    TRANSPORT_CONNECTION = 14   #: {"name", "state", "reason", "detail", "next_retry_ms"}: see :class:`~yaok.TransportConnection`
    INTERNET_CHANGED = 15       #: {"available", "line", "default_route", "relay", "why"}: see :class:`~yaok.Internet`


class yaok_event(ctypes.Structure):
    """``struct yaok_event { uint32_t kind; const char *json; }``."""

    _fields_ = [("kind", ctypes.c_uint32), ("json", ctypes.c_char_p)]


#: ``typedef void (*yaok_event_callback)(void *user_data, const yaok_event *event)``
EVENT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.POINTER(yaok_event))
#: ``typedef void (*yaok_free_callback)(void *user_data)``
FREE_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

_set_event_callback = declare("yaok_node_set_event_callback", STATUS,
                              NodePointer, EVENT_CALLBACK, ctypes.c_void_p, FREE_CALLBACK)

EventCallback = Callable[[Union[EventKind, int], Dict[str, Any]], Any]


class Registration:
    """One callback registration with a node, alive from ``set_event_callback`` until the
    library calls ``free_user_data`` for it (replaced, removed, or the node freed)."""

    def __init__(self, token: int, callback: EventCallback, handle: NodeHandle) -> None:
        self.token = token
        self.callback = callback
        self._handle = handle
        #: Set when the library has called ``free_user_data`` for this registration.
        self.freed = threading.Event()
        #: Events delivered to it (whether or not the callback raised).
        self.delivered = 0

    def __repr__(self) -> str:
        return f"<yaok.events.Registration {self.token} delivered={self.delivered} freed={self.freed.is_set()}>"


_registry: Dict[int, Registration] = {}
_registry_lock = threading.Lock()
_tokens = itertools.count(1)  # never 0: user_data NULL is not a token


def _kind(raw: int) -> Union[EventKind, int]:
    try:
        return EventKind(raw)
    except ValueError:
        return int(raw)


def _on_event(user_data: Optional[int], event: Any) -> None:
    # Runs on the node's event thread. Nothing may escape into C.
    try:
        registration = _registry.get(user_data or 0)
        if registration is None or not event:
            return
        registration._handle.event_thread = threading.get_ident()
        registration.delivered += 1
        kind = _kind(event.contents.kind)
        raw = event.contents.json
        data = json.loads(raw.decode("utf-8")) if raw else {}
        registration.callback(kind, data)
    except BaseException:  # noqa: B036  (SystemExit/KeyboardInterrupt must not cross into C either)
        try:
            log.exception("yaok event callback raised; the exception was ignored")
        except BaseException:
            pass


def _on_free(user_data: Optional[int]) -> None:
    try:
        with _registry_lock:
            registration = _registry.pop(user_data or 0, None)
        if registration is not None:
            registration.freed.set()
    except BaseException:  # noqa: B036
        pass


# The C function pointers: created once, referenced by the module for its whole life.
_EVENT_TRAMPOLINE = EVENT_CALLBACK(_on_event)
_FREE_TRAMPOLINE = FREE_CALLBACK(_on_free)


class EventsMixin(NodeBase):
    _registration: Optional[Registration] = None

    def set_event_callback(self, callback: Optional[EventCallback]) -> Optional[Registration]:
        """Registers ``callback(kind, data)`` for this node's events, replacing an earlier
        one; ``None`` removes it (``yaok_node_set_event_callback``).

        The callback runs **on the node's event thread**, not the caller's (see the module
        documentation). Returns the new :class:`Registration` (``None`` when removing);
        its ``freed`` event is set once the library has released it.
        """
        if callback is not None and not callable(callback):
            raise TypeError(f"callback must be callable or None, not {type(callback).__name__}")
        with self._borrow() as pointer:
            if callback is None:
                _set_event_callback(pointer, EVENT_CALLBACK(), None, FREE_CALLBACK())
                self._registration = None
                return None
            assert self._handle is not None
            registration = Registration(next(_tokens), callback, self._handle)
            with _registry_lock:
                _registry[registration.token] = registration
            try:
                _set_event_callback(pointer, _EVENT_TRAMPOLINE, registration.token, _FREE_TRAMPOLINE)
            except BaseException:
                with _registry_lock:
                    _registry.pop(registration.token, None)
                raise
            self._registration = registration
            return registration

    @property
    def event_registration(self) -> Optional[Registration]:
        """The current registration (``None`` if none was made or it was removed)."""
        return self._registration
