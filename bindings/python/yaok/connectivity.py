"""Transport connections and the internet status (include/yaok.h, "transport connection and
internet"; docs/ABI.md, "diagnostics"): what an app shows for "Relay: disconnected (pin
mismatch), retrying at 12:03:05" and "Internet: Available". Both work while locked.

Changes arrive as events too: :attr:`~yaok.EventKind.TRANSPORT_CONNECTION` and
:attr:`~yaok.EventKind.INTERNET_CHANGED`, whose ``data`` is the same JSON as the
``connection`` and ``internet`` objects of :meth:`~yaok.Node.diagnostics`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, List, Optional

from ._lib import STATUS, TextEnum, declare
from ._node_base import NodeBase
from .typed import (_BORROWED, DiagnosticsPointer, _diagnostics_free, _diagnostics_new, _diagnostics_transport,
                    _diagnostics_transport_count, _EventPointer)

__all__ = ["Connectivity", "DisconnectReason", "TransportConnection", "Internet"]

_transport_connection = declare("yaok_diagnostics_transport_connection", STATUS, DiagnosticsPointer, ctypes.c_size_t,
                                ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                                ctypes.POINTER(ctypes.c_int64), _BORROWED)
# The typed getters of the two events, for code that reads an event without its JSON (the
# callback's ``data`` already holds the same fields).
_event_connection = declare("yaok_event_connection", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_uint32),
                            ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_int64))
_event_internet = declare("yaok_event_internet", STATUS, _EventPointer, ctypes.POINTER(ctypes.c_int32))
_internet = declare("yaok_diagnostics_internet", STATUS, DiagnosticsPointer, ctypes.POINTER(ctypes.c_int32),
                    ctypes.POINTER(ctypes.c_int32), _BORROWED)


class Connectivity(TextEnum):
    """``YAOK_CONNECTIVITY_*`` (the JSON's ``state``), in the order of their numbers."""

    DISCONNECTED = "disconnected"
    CONNECTING = "connecting"
    CONNECTED = "connected"


class DisconnectReason(TextEnum):
    """``YAOK_DISCONNECT_*`` from 1 (the JSON's ``reason``), in the order of their numbers."""

    DISABLED = "disabled"
    FAILED = "failed"
    PIN_MISMATCH = "pin_mismatch"
    CERTIFICATE = "certificate"
    TLS = "tls"
    REFUSED = "refused"
    TIMED_OUT = "timed_out"
    DNS = "dns"
    UNREACHABLE = "unreachable"
    CLOSED = "closed"
    PROTOCOL = "protocol"
    REVOKED = "revoked"
    LOCKED = "locked"
    IDLE = "idle"
    OTHER = "other"
    RADIO_OFF = "radio_off"
    NO_NETWORK = "no_network"


@dataclass(frozen=True)
class TransportConnection:
    """One transport's connection: ``state`` (a state a later library adds reads as
    DISCONNECTED); while disconnected the ``reason`` (None for a number a later library adds:
    read ``reason_code``), ``detail`` for a person and
    ``next_retry_ms`` (ms since 1970, None when no retry is scheduled)."""

    name: str
    state: Connectivity
    reason: Optional[DisconnectReason]
    reason_code: int
    detail: Optional[str]
    next_retry_ms: Optional[int]


@dataclass(frozen=True)
class Internet:
    """"Internet: Available/Unavailable" (AC-060-01): ``line`` is what to show."""

    available: bool
    default_route: bool
    line: str


def _state(code: int) -> Connectivity:
    """YAOK_CONNECTIVITY_* by number. A number a later library adds is shown as disconnected,
    never as connected: an app must not claim a connection it cannot name."""
    states = list(Connectivity)
    return states[code] if 0 <= code < len(states) else Connectivity.DISCONNECTED


class ConnectivityMixin(NodeBase):
    def _snapshot(self) -> Any:
        handle = DiagnosticsPointer()
        self._call(_diagnostics_new, ctypes.byref(handle))
        return handle

    def transport_connections(self) -> List[TransportConnection]:
        """Every registered transport's connection, in the order of diagnostics' transports."""
        handle = self._snapshot()
        try:
            count = ctypes.c_size_t()
            _diagnostics_transport_count(handle, ctypes.byref(count))
            out: List[TransportConnection] = []
            for i in range(count.value):
                name, status = ctypes.c_char_p(), ctypes.c_char_p()
                transport_state, links = ctypes.c_uint32(), ctypes.c_uint32()
                _diagnostics_transport(handle, i, ctypes.byref(name), ctypes.byref(transport_state),
                                       ctypes.byref(links), ctypes.byref(status))
                state, reason, retry, detail = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_int64(), ctypes.c_char_p()
                _transport_connection(handle, i, ctypes.byref(state), ctypes.byref(reason), ctypes.byref(retry),
                                      ctypes.byref(detail))
                reasons = list(DisconnectReason)
                out.append(TransportConnection(
                    name=(name.value or b"").decode("utf-8"),
                    state=_state(state.value),
                    reason=reasons[reason.value - 1] if 1 <= reason.value <= len(reasons) else None,
                    reason_code=int(reason.value),
                    detail=detail.value.decode("utf-8") if detail.value else None,
                    next_retry_ms=int(retry.value) or None))
            return out
        finally:
            _diagnostics_free(handle)

    def internet(self) -> Internet:
        """Whether the node has a usable route to the internet now (a relay's answer, else
        a default route)."""
        handle = self._snapshot()
        try:
            available, route, line = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_char_p()
            _internet(handle, ctypes.byref(available), ctypes.byref(route), ctypes.byref(line))
            return Internet(available=bool(available.value), default_route=bool(route.value),
                            line=(line.value or b"").decode("utf-8"))
        finally:
            _diagnostics_free(handle)
