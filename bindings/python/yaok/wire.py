"""The wire format, for interoperability tests (include/yaok.h, "wire (interoperability)";
docs/PROTOCOL.md §4).

>>> fields = decode_packet(packet)          # {"version": 1, "type": "message", ...}
>>> frame(packet)                           # b"\\x00\\x29" + packet
>>> split(packet, mtu=20, first_group=0x1234)   # [fragment_0, fragment_1, ...]

Stateless and thread-safe; nothing is sent. They run the library's own encoder and strict
decoder, so a second implementation can check the packets, frames and fragments it makes.
"""

from __future__ import annotations

import ctypes
import json
from typing import Any, Dict, List, Union

from ._lib import STATUS, check_int, declare, take_bytes, take_string

__all__ = ["decode_packet", "frame", "split", "MAX_PACKET_BYTES", "MIN_MTU"]

#: The largest packet (PROTOCOL.md §4.1, ``Wire.maxPacketLength``).
MAX_PACKET_BYTES = 17408
#: YAOK_LINK_MIN_MTU: the smallest link unit a sender fragments for.
MIN_MTU = 20

_decode = declare("yaok_packet_decode", STATUS,
                  ctypes.c_char_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p))
_frame = declare("yaok_frame_encode", STATUS,
                 ctypes.c_char_p, ctypes.c_size_t,
                 ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_size_t))
_split = declare("yaok_fragment_split", STATUS,
                 ctypes.c_char_p, ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint16,
                 ctypes.POINTER(ctypes.c_void_p))

BytesLike = Union[bytes, bytearray, memoryview]


def _as_bytes(value: BytesLike, what: str) -> bytes:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{what} must be bytes-like, not {type(value).__name__}")
    return bytes(value)


def decode_packet(packet: BytesLike) -> Dict[str, Any]:
    """Decodes one packet strictly (``yaok_packet_decode``) into docs/ABI.md's "packet"
    object: ``version``, ``type`` (``"message"``, ``"ack"``, ``"handshake"``,
    ``"fragment"``, ``"link"``) and that type's fields, bytes as lower-case hex.

    Raises :class:`~yaok.errors.UnsupportedVersion`, :class:`~yaok.errors.UnknownPacketType`
    or :class:`~yaok.errors.MalformedPacket` (the message names the field), as a receiver
    would refuse the packet."""
    data = _as_bytes(packet, "packet")
    out = ctypes.c_void_p()
    _decode(data, len(data), ctypes.byref(out))
    result: Dict[str, Any] = json.loads(take_string(out))
    return result


def frame(packet: BytesLike) -> bytes:
    """The stream frame of ``packet`` (``yaok_frame_encode``): its u16 big-endian length,
    then the packet. Raises :class:`~yaok.errors.InvalidArgument` for an empty packet,
    :class:`~yaok.errors.FrameTooLarge` above :data:`MAX_PACKET_BYTES`."""
    data = _as_bytes(packet, "packet")
    out = ctypes.c_void_p()
    out_len = ctypes.c_size_t()
    _frame(data, len(data), ctypes.byref(out), ctypes.byref(out_len))
    return take_bytes(out, out_len)


def split(packet: BytesLike, mtu: int, first_group: int) -> List[bytes]:
    """The link units a sender with this ``mtu`` sends for ``packet``
    (``yaok_fragment_split``): ``[packet]`` when it fits, else its fragments in order, of
    group ``first_group`` (0 to 65535). Raises :class:`~yaok.errors.InvalidArgument` for an
    ``mtu`` below :data:`MIN_MTU` or a packet outside 1 to :data:`MAX_PACKET_BYTES` bytes."""
    data = _as_bytes(packet, "packet")
    unit = check_int(mtu, "mtu", 0, 0xFFFFFFFF)
    group = check_int(first_group, "first_group", 0, 0xFFFF)
    out = ctypes.c_void_p()
    _split(data, len(data), unit, group, ctypes.byref(out))
    units: List[str] = json.loads(take_string(out))
    return [bytes.fromhex(u) for u in units]
