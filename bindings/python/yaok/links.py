"""Links (include/yaok.h, "links"): bring-your-own transport, and transports/diagnostics.

>>> link = node.open_link("radio", LinkRole.INITIATOR, 200, send=my_radio.write)
>>> my_radio.on_receive = link.receive      # every unit that arrives
>>> link.close()                            # the connection ended

A unit is one whole message of the connection (a radio packet of at most ``mtu`` bytes):
the node never splits or joins units. Over a byte stream (a socket, a serial line) open
the link with ``stream=True`` instead (``yaok_link_open_stream``): the library frames what
it sends and :meth:`Link.receive` takes the bytes exactly as read, any split.

``send(unit: bytes)`` runs **only on the node's event thread**, with a link's units in
order; ``closed(reason: str)`` runs on the event thread, or inside :meth:`Link.close` and
:meth:`Node.close`. Neither runs while the node's lock is held; they may call
:meth:`Link.receive` on any link. Exceptions they raise are logged on the ``yaok.links``
logger and never reach the library.

How the C side is kept safe: the three C function pointers are module-level ctypes objects;
``user_data`` is a token naming the link in a module registry, dropped only when the
library calls ``free_user_data`` for it.
"""

from __future__ import annotations

import ctypes
import enum
import itertools
import logging
import threading
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ._lib import STATUS, OwnedHandle, declare
from ._node_base import CHAR_OUT, UINT32_MAX, NodeBase, NodePointer, check_int
from .events import FREE_CALLBACK
from .errors import InvalidArgument

__all__ = ["Link", "LinkRole", "LinkInfo", "LinkPeer", "LINK_MIN_MTU"]

log = logging.getLogger("yaok.links")

#: YAOK_LINK_MIN_MTU
LINK_MIN_MTU = 20


class LinkRole(enum.IntEnum):
    """``YAOK_LINK_*``: the side that speaks first is the initiator."""

    INITIATOR = 0
    RESPONDER = 1


class yaok_link(ctypes.Structure):
    """The opaque ``yaok_link``."""


LinkPointer = ctypes.POINTER(yaok_link)
#: ``typedef yaok_status (*yaok_link_send_callback)(void *, const uint8_t *, size_t)``
SEND_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t)
#: ``typedef void (*yaok_link_closed_callback)(void *, const char *)``
CLOSED_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_char_p)

_open = declare("yaok_link_open", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_uint32, ctypes.c_uint32,
                SEND_CALLBACK, CLOSED_CALLBACK, ctypes.c_void_p, FREE_CALLBACK, ctypes.POINTER(LinkPointer))
_open_stream = declare("yaok_link_open_stream", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_uint32,
                       SEND_CALLBACK, CLOSED_CALLBACK, ctypes.c_void_p, FREE_CALLBACK, ctypes.POINTER(LinkPointer))
_link_id = declare("yaok_link_id", STATUS, LinkPointer, ctypes.POINTER(ctypes.c_uint64))
_receive = declare("yaok_link_receive", STATUS, LinkPointer, ctypes.c_char_p, ctypes.c_size_t)
_close = declare("yaok_link_close", None, LinkPointer)
_peer = declare("yaok_link_peer", STATUS, LinkPointer, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_uint32))
_set_enabled = declare("yaok_transport_set_enabled", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_int32)
_diagnostics = declare("yaok_node_diagnostics", STATUS, NodePointer, CHAR_OUT)
_lan_add = declare("yaok_transport_lan_add", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_uint16, ctypes.c_uint32,
                   ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t)
_relay_add = declare("yaok_transport_relay_add", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p)
_ble_add = declare("yaok_transport_ble_add", STATUS, NodePointer, ctypes.c_char_p)
LAN_NO_DISCOVERY = 1


class LinkPeer(enum.IntEnum):
    """``YAOK_LINK_PEER_*``: who a link's peer is."""

    UNKNOWN = 0   #: handshake or recognition not done yet
    CONTACT = 1   #: the peer proved it is a contact (docs/PROTOCOL.md §5.9)
    STRANGER = 2  #: handshake done, no contact: it carries packets, nothing routed


def _peer_kind(raw: int) -> "Union[LinkPeer, int]":
    """A peer code as :class:`LinkPeer`, or the plain number for one a later library added
    (as events' kinds are): reading the list must not fail on it."""
    try:
        return LinkPeer(raw)
    except ValueError:
        return int(raw)


class yaok_link_list(ctypes.Structure):
    """The opaque ``yaok_link_list``."""


class yaok_link_info(ctypes.Structure):
    """``struct yaok_link_info`` (include/yaok.h)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("authenticated", ctypes.c_int32), ("link_id", ctypes.c_uint64),
                ("transport", ctypes.c_char_p), ("peer", ctypes.c_uint32), ("has_contact", ctypes.c_int32),
                ("contact_id", ctypes.c_int64), ("opened_ms", ctypes.c_int64), ("last_received_ms", ctypes.c_int64)]


LinkListPointer = ctypes.POINTER(yaok_link_list)
_list_new = declare("yaok_link_list_new", STATUS, NodePointer, ctypes.POINTER(LinkListPointer))
_list_free = declare("yaok_link_list_free", None, LinkListPointer)
_list_count = declare("yaok_link_list_count", STATUS, LinkListPointer, ctypes.POINTER(ctypes.c_size_t))
_list_get = declare("yaok_link_list_get", STATUS, LinkListPointer, ctypes.c_size_t, ctypes.POINTER(yaok_link_info))


@dataclass(frozen=True)
class LinkInfo:
    """One open link (``yaok_link_list_get``; diagnostics' ``links``)."""

    link_id: int
    """:attr:`Link.id`, and the ``link_id`` of the link events."""
    transport: str
    authenticated: bool
    peer: "Union[LinkPeer, int]"
    """A :class:`LinkPeer`, or the number of a kind a later library added."""
    contact_id: Optional[int]
    """The contact at the other end; None for a stranger (or not matched yet while locked)."""
    opened_ms: int
    last_received_ms: int


class _Callbacks:
    def __init__(self, send: Callable[[bytes], Any], closed: Optional[Callable[[str], Any]]) -> None:
        self.send = send
        self.closed = closed
        self.freed = threading.Event()


_registry: Dict[int, _Callbacks] = {}
_registry_lock = threading.Lock()
_tokens = itertools.count(1)


def _on_send(user_data: Optional[int], unit: Any, length: int) -> int:
    try:
        callbacks = _registry.get(user_data or 0)
        if callbacks is not None:
            callbacks.send(ctypes.string_at(unit, length) if length else b"")
    except BaseException:  # noqa: B036  (nothing may escape into C)
        try:
            log.exception("yaok link send callback raised; the exception was ignored")
        except BaseException:
            pass
    return 0


def _on_closed(user_data: Optional[int], reason: Optional[bytes]) -> None:
    try:
        callbacks = _registry.get(user_data or 0)
        if callbacks is not None and callbacks.closed is not None:
            callbacks.closed((reason or b"").decode("utf-8", "replace"))
    except BaseException:  # noqa: B036
        try:
            log.exception("yaok link closed callback raised; the exception was ignored")
        except BaseException:
            pass


def _on_free(user_data: Optional[int]) -> None:
    try:
        with _registry_lock:
            callbacks = _registry.pop(user_data or 0, None)
        if callbacks is not None:
            callbacks.freed.set()
    except BaseException:  # noqa: B036
        pass


_SEND_TRAMPOLINE = SEND_CALLBACK(_on_send)
_CLOSED_TRAMPOLINE = CLOSED_CALLBACK(_on_closed)
_FREE_TRAMPOLINE = FREE_CALLBACK(_on_free)


class Link:
    """One link opened with :meth:`Node.open_link`. ``close()`` (or ``with``) closes it and
    frees the handle; safe twice."""

    def __init__(self, pointer: Any, callbacks: _Callbacks) -> None:
        self._handle = OwnedHandle(pointer, _close, "Link")
        self._callbacks = callbacks

    @property
    def freed(self) -> threading.Event:
        """Set once the library has released the callbacks (closed by either side)."""
        return self._callbacks.freed

    @property
    def closed(self) -> bool:
        return self._handle.closed

    @property
    def id(self) -> int:
        """The link's id (``yaok_link_id``): the ``link_id`` of the link events and of
        :meth:`Node.open_links`."""
        out = ctypes.c_uint64()
        with self._handle.borrow() as pointer:
            _link_id(pointer, ctypes.byref(out))
        return int(out.value)

    def receive(self, unit: Union[bytes, bytearray, memoryview]) -> None:
        """One unit as the connection received it (on a stream link: any bytes of the stream),
        copied and processed on the event thread. A link either side closed:
        :class:`~yaok.Closed`; a broken stream: :class:`~yaok.FrameTooLarge` (the link closes)."""
        if not isinstance(unit, (bytes, bytearray, memoryview)):
            raise TypeError(f"unit must be bytes, not {type(unit).__name__}")
        raw = bytes(unit)
        with self._handle.borrow() as pointer:
            _receive(pointer, raw, len(raw))

    def peer(self) -> Tuple[bool, Optional[bool]]:
        """``(authenticated, is_contact)`` (``yaok_link_peer``): whether the handshake is
        complete, and whether the authenticated peer is a contact (None: not known yet).
        Anyone can complete a handshake, so a radio with few slots closes strangers first."""
        authenticated, peer = ctypes.c_int32(), ctypes.c_uint32()
        with self._handle.borrow() as pointer:
            _peer(pointer, ctypes.byref(authenticated), ctypes.byref(peer))
        return bool(authenticated.value), {1: True, 2: False}.get(peer.value)

    def close(self) -> None:
        """Closes the link (``yaok_link_close``); messages in flight are retried later."""
        self._handle.close()

    def __enter__(self) -> "Link":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class LinksMixin(NodeBase):
    def open_link(self, transport: str, role: Union[LinkRole, int], mtu: int,
                  send: Callable[[bytes], Any], closed: Optional[Callable[[str], Any]] = None,
                  stream: bool = False) -> Link:
        """Opens a link over a connection the application carries itself
        (``yaok_link_open``). ``send(unit)`` transmits one unit of at most ``mtu`` bytes and
        must not block; ``closed(reason)`` is called when the node ends the link.
        ``stream=True`` (``yaok_link_open_stream``): the connection is a byte stream; ``mtu``
        is ignored, ``send`` gets whole frames to write as they are, and :meth:`Link.receive`
        takes the bytes as read."""
        if not isinstance(stream, bool):
            raise TypeError(f"stream must be a bool, not {type(stream).__name__}")
        name = self._text(transport, "transport")
        if isinstance(role, bool) or not isinstance(role, int):
            raise TypeError(f"role must be a LinkRole, not {type(role).__name__}")
        if role not in (LinkRole.INITIATOR, LinkRole.RESPONDER):
            raise InvalidArgument(f"Unknown role {role}")
        size = check_int(mtu, "mtu", 0, UINT32_MAX)
        if not callable(send):
            raise TypeError(f"send must be callable, not {type(send).__name__}")
        if closed is not None and not callable(closed):
            raise TypeError(f"closed must be callable or None, not {type(closed).__name__}")
        callbacks = _Callbacks(send, closed)
        token = next(_tokens)
        with _registry_lock:
            _registry[token] = callbacks
        out = LinkPointer()
        try:
            with self._borrow() as pointer:
                if stream:
                    _open_stream(pointer, name, int(role), _SEND_TRAMPOLINE, _CLOSED_TRAMPOLINE, token,
                                 _FREE_TRAMPOLINE, ctypes.byref(out))
                else:
                    _open(pointer, name, int(role), size, _SEND_TRAMPOLINE, _CLOSED_TRAMPOLINE, token,
                          _FREE_TRAMPOLINE, ctypes.byref(out))
        except BaseException:
            with _registry_lock:
                _registry.pop(token, None)
            raise
        return Link(out, callbacks)

    def set_transport_enabled(self, name: str, enabled: bool) -> None:
        """Starts or stops a registered transport (``yaok_transport_set_enabled``);
        starting one that is running changes nothing. None with that name:
        :class:`~yaok.NotFound`."""
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool, not {type(enabled).__name__}")
        self._call(_set_enabled, self._text(name, "name"), 1 if enabled else 0)

    def add_lan(self, listen: Optional[str] = None, port: int = 0, discovery: bool = True,
                peers: Sequence[str] = ()) -> None:
        """Registers the LAN transport, disabled (``yaok_transport_lan_add``); start it with
        ``set_transport_enabled("lan", True)``. ``listen``: the TCP address (None: all);
        ``port``: 0 for any free one; ``discovery``: multicast beacons; ``peers``: static
        "host:port" peers to connect to."""
        if not isinstance(discovery, bool):
            raise TypeError(f"discovery must be a bool, not {type(discovery).__name__}")
        if isinstance(peers, (str, bytes)) or not all(isinstance(p, str) for p in peers):
            raise TypeError("peers must be a sequence of str")
        if len(peers) > 64:
            raise ValueError("at most 64 static peers")
        encoded = [self._text(p, "peers") for p in peers]
        array = (ctypes.c_char_p * max(len(encoded), 1))(*encoded)
        self._call(_lan_add, None if listen is None else self._text(listen, "listen"),
                   check_int(port, "port", 0, 65535), 0 if discovery else LAN_NO_DISCOVERY,
                   array, len(encoded))

    def add_relay(self, address: str, pin_hex: Optional[str] = None, ca_file: Optional[str] = None) -> None:
        """Registers the relay transport, disabled (``yaok_transport_relay_add``); start it with
        ``set_transport_enabled("relay", True)``. ``address``: "host:port"; exactly one of
        ``pin_hex`` (the 64 hex digits ``yaok-relay`` prints) or ``ca_file`` (PEM CA certificates).
        The certificate is always checked; a mismatch never falls back to plaintext."""
        if (pin_hex is None) == (ca_file is None):
            raise ValueError("give exactly one of pin_hex and ca_file")
        self._call(_relay_add, self._text(address, "address"),
                   None if pin_hex is None else self._text(pin_hex, "pin_hex"),
                   None if ca_file is None else self._text(ca_file, "ca_file"))

    def add_ble(self, adapter: Optional[str] = None) -> None:
        """Registers the Bluetooth LE transport, disabled (``yaok_transport_ble_add``); start it
        with ``set_transport_enabled("ble", True)``. ``adapter``: "hci0", … (None: the first
        powered LE adapter). Where Bluetooth cannot be used the start raises
        :class:`~yaok.LinkFailed` with "Bluetooth unavailable: …" and what to do; the other
        transports carry on."""
        self._call(_ble_add, None if adapter is None else self._text(adapter, "adapter"))

    def open_links(self) -> List[LinkInfo]:
        """The links open now, oldest first (``yaok_link_list_*``): every transport's, with
        handshakes still running. Works while locked."""
        handle = LinkListPointer()
        self._call(_list_new, ctypes.byref(handle))
        try:
            count = ctypes.c_size_t()
            _list_count(handle, ctypes.byref(count))
            links = []
            for i in range(count.value):
                info = yaok_link_info()
                info.struct_size = ctypes.sizeof(yaok_link_info)
                _list_get(handle, i, ctypes.byref(info))
                links.append(LinkInfo(link_id=int(info.link_id), transport=(info.transport or b"").decode("utf-8"),
                                      authenticated=bool(info.authenticated), peer=_peer_kind(info.peer),
                                      contact_id=int(info.contact_id) if info.has_contact else None,
                                      opened_ms=int(info.opened_ms), last_received_ms=int(info.last_received_ms)))
            return links
        finally:
            _list_free(handle)

    def diagnostics(self) -> Dict[str, Any]:
        """Diagnostics as a dict (docs/ABI.md, "diagnostics"); works while locked."""
        data: Dict[str, Any] = self._call_json(_diagnostics)
        return data

