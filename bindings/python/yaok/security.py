"""The persisted security log of a node (include/yaok.h, "security log"; JSON in
docs/ABI.md, "security event"). Entries hold time, kind and detail, never message content
or keys."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ._lib import STATUS, declare
from ._node_base import CHAR_OUT, UINT32_MAX, NodeBase, NodePointer, check_int

__all__ = ["SecurityEvent"]

_security_events = declare("yaok_security_events", STATUS, NodePointer, ctypes.c_int64, ctypes.c_uint32, CHAR_OUT)


@dataclass(frozen=True)
class SecurityEvent:
    """One security log entry. ``kind`` is e.g. ``"wrong_pin"``, ``"lockout"``,
    ``"unlocked"``, ``"auto_locked"``, ``"reset"`` (docs/ABI.md lists them; new kinds may
    appear: show unknown ones as they are)."""

    id: int
    time_ms: int
    kind: str
    detail: Optional[str]

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "SecurityEvent":
        return cls(id=int(data["id"]), time_ms=int(data["time_ms"]), kind=data["kind"],
                   detail=data.get("detail"))


class SecurityMixin(NodeBase):
    def security_events(self, before_id: Optional[int] = None, limit: int = 100) -> List[SecurityEvent]:
        """The newest ``limit`` (1 to 1000) security events with an id below ``before_id``
        (``None``: the newest), oldest first. Needs the node unlocked."""
        before = 0 if before_id is None else check_int(before_id, "before_id")
        events = self._call_json(_security_events, before, check_int(limit, "limit", 0, UINT32_MAX))
        return [SecurityEvent.from_json(e) for e in events]
