"""Carrying for others (include/yaok.h, "carrying for others"; docs/PROTOCOL.md §12): the
mode and caps of a node's carry store, and what it carries. Works while locked."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, Optional, Union

from ._lib import STATUS, TextEnum, declare
from ._node_base import UINT32_MAX, NodeBase, NodePointer, check_int
from .errors import InvalidArgument

__all__ = ["CarryMode", "CarryStatus"]

#: The largest byte cap the library accepts (64 GiB).
MAX_CARRY_BYTES = 64 << 30


class CarryMode(TextEnum):
    """Whose packets a node carries (``YAOK_CARRY_*``)."""

    ANYONE = "anyone"
    """On every link, strangers' included (the default)."""
    CONTACTS = "contacts"
    """Only on links with contacts; strangers may still bring this node its own mail."""
    OFF = "off"
    """Not at all; switching to it deletes everything carried."""


_MODE_NUMBERS = {CarryMode.ANYONE: 0, CarryMode.CONTACTS: 1, CarryMode.OFF: 2}
_MODES_BY_NUMBER = {number: mode for mode, number in _MODE_NUMBERS.items()}


class yaok_carry_status(ctypes.Structure):
    """``struct yaok_carry_status`` (include/yaok.h)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("mode", ctypes.c_uint32), ("max_packets", ctypes.c_uint32),
                ("reserved", ctypes.c_uint32), ("max_bytes", ctypes.c_uint64),
                ("packets_held", ctypes.c_uint64), ("bytes_held", ctypes.c_uint64),
                ("packets_taken", ctypes.c_uint64), ("packets_handed_on", ctypes.c_uint64),
                ("messages_delivered_through_carriers", ctypes.c_uint64),
                ("acks_through_carriers", ctypes.c_uint64), ("packets_purged", ctypes.c_uint64),
                ("packets_refused", ctypes.c_uint64)]


_set_carry = declare("yaok_node_set_carry", STATUS, NodePointer, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint64)
_carry_status = declare("yaok_node_carry_status", STATUS, NodePointer, ctypes.POINTER(yaok_carry_status))


@dataclass(frozen=True)
class CarryStatus:
    """What a node carries (``yaok_node_carry_status``; docs/ABI.md, "carry"). Held figures
    survive restarts; the counters count since the node was opened."""

    mode: CarryMode
    max_packets: int
    max_bytes: int
    packets_held: int
    bytes_held: int
    packets_taken: int
    packets_handed_on: int
    messages_delivered_through_carriers: int
    acks_through_carriers: int
    packets_purged: int
    packets_refused: int

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "CarryStatus":
        """From the JSON of :attr:`~yaok.EventKind.CARRY_ACTIVITY` or diagnostics' ``"carry"``."""
        return cls(mode=CarryMode(data["mode"]), **{f: int(data[f]) for f in _FIGURES})


_FIGURES = ("max_packets", "max_bytes", "packets_held", "bytes_held", "packets_taken", "packets_handed_on",
            "messages_delivered_through_carriers", "acks_through_carriers", "packets_purged", "packets_refused")


class CarryMixin(NodeBase):
    def set_carry(self, mode: Union[CarryMode, str] = CarryMode.ANYONE, *, max_packets: Optional[int] = None,
                  max_bytes: Optional[int] = None) -> None:
        """Sets whose packets this node carries (``"anyone"``, ``"contacts"``, ``"off"``) and
        the carry store's caps (``None``: the defaults, 2,000 packets and 32 MiB). Kept across
        restarts. ``"off"`` deletes everything carried; a lower cap evicts down to it.

        Raises :class:`~yaok.InvalidArgument` for an unknown mode or a cap out of range."""
        try:
            mode = CarryMode(mode)
        except ValueError:
            raise InvalidArgument(f"carry mode must be one of 'anyone', 'contacts', 'off', not {mode!r}") from None
        packets = 0 if max_packets is None else check_int(max_packets, "max_packets", 1, UINT32_MAX)
        size = 0 if max_bytes is None else check_int(max_bytes, "max_bytes", 1, MAX_CARRY_BYTES)
        self._call(_set_carry, _MODE_NUMBERS[mode], packets, size)

    def carry_status(self) -> CarryStatus:
        """What this node carries now and has carried since it was opened; works while locked."""
        out = yaok_carry_status()
        out.struct_size = ctypes.sizeof(yaok_carry_status)
        self._call(_carry_status, ctypes.byref(out))
        return CarryStatus(mode=_MODES_BY_NUMBER.get(out.mode, CarryMode.ANYONE),
                           **{f: int(getattr(out, f)) for f in _FIGURES})

