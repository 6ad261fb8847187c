"""Forward secrecy per contact (include/yaok.h, "forward secrecy"; docs/PROTOCOL.md §13).

Messages and their carried copies go to a short-lived receiver key the contact announced,
so a recorded copy stops opening once the contact has erased that key. Until a contact has
announced one, the first messages go to the prekey of its version 2 card while that is at
most 7 days old (PREKEY: exposed until a stated time, §13.4); otherwise (a version 1 card,
a stale prekey, an older implementation) to its long-term key: never silently,
:meth:`Node.forward_secrecy` says so and counts them.
Needs the node unlocked (:class:`~yaok.Locked`).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

from ._lib import STATUS, TextEnum, declare
from ._node_base import NodeBase, NodePointer, check_int

__all__ = ["ForwardSecrecy", "ForwardSecrecyState"]


class ForwardSecrecyState(TextEnum):
    """``YAOK_FORWARD_SECRECY_*``."""

    OFF = "off"
    """The node's option is off: every message goes to the long-term key."""
    NOT_YET = "not_yet"
    """No receiver key from this contact yet: messages go to its long-term key."""
    ON = "on"
    """Messages to this contact go to its newest receiver key."""
    PREKEY = "prekey"
    """No receiver key from this contact yet: messages go to its card's prekey, exposed until
    :attr:`ForwardSecrecy.prekey_exposure_until_ms`."""


_STATES = {0: ForwardSecrecyState.OFF, 1: ForwardSecrecyState.NOT_YET, 2: ForwardSecrecyState.ON,
           3: ForwardSecrecyState.PREKEY}

_forward_secrecy = declare("yaok_contact_forward_secrecy", STATUS, NodePointer, ctypes.c_int64,
                           ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64),
                           ctypes.POINTER(ctypes.c_uint32))
_prekey_exposure = declare("yaok_contact_prekey_exposure", STATUS, NodePointer, ctypes.c_int64,
                           ctypes.POINTER(ctypes.c_int64))


@dataclass(frozen=True)
class ForwardSecrecy:
    """Forward secrecy with one contact (``yaok_contact_forward_secrecy``)."""

    state: ForwardSecrecyState
    long_term_seals: int
    """Messages sealed to the contact's long-term key since it was added (kept across restarts)."""
    receiver_keys: int
    """This node's receiver keys held for the contact (at most 32)."""
    prekey_exposure_until_ms: int = 0
    """In the PREKEY state: the Unix time (ms, exclusive) until which messages sealed to the
    prekey open with the contact's seized device (it erases the prekey then); else 0."""


class ForwardSecrecyMixin(NodeBase):
    def forward_secrecy(self, contact_id: int) -> ForwardSecrecy:
        """Whether messages to ``contact_id`` are forward-secret, and how many went to its
        long-term key. Raises :class:`~yaok.NotFound` for no such contact."""
        state, seals, keys = ctypes.c_uint32(), ctypes.c_uint64(), ctypes.c_uint32()
        self._call(_forward_secrecy, check_int(contact_id, "contact_id"), ctypes.byref(state), ctypes.byref(seals),
                   ctypes.byref(keys))
        # A state a later library adds reads as not yet (the safe reading: not forward-secret).
        known = _STATES.get(state.value, ForwardSecrecyState.NOT_YET)
        until = ctypes.c_int64()
        if known is ForwardSecrecyState.PREKEY:
            self._call(_prekey_exposure, contact_id, ctypes.byref(until))
        return ForwardSecrecy(known, int(seals.value), int(keys.value), int(until.value))
