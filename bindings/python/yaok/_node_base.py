"""The ``yaok_node *`` handle as the node, contact, message, security-log and event modules
share it. Internal: use :class:`yaok.Node`.

A node differs from an identity or card handle in one way that matters here: it owns an
event thread that runs Python callbacks, and ``yaok_node_free`` must never run on that
thread (it joins it). :class:`NodeHandle` therefore knows the node's event thread and, when
the last use of a closed node ends there (``close()`` or ``__del__`` from inside a
callback), hands the actual free to a short-lived helper thread.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import threading
import weakref
from contextlib import contextmanager
from typing import Any, Callable, ContextManager, Iterator, Optional, Union

from ._lib import INT64_MAX, INT64_MIN, UINT32_MAX, HandleOwner, check_int, encode_text, take_string
from .errors import HandleClosed

__all__ = ["yaok_node", "NodePointer", "NodeHandle", "NodeBase", "CHAR_OUT",
           "check_int", "text_bytes", "INT64_MIN", "INT64_MAX", "UINT32_MAX"]


class yaok_node(ctypes.Structure):
    """Opaque ``struct yaok_node``."""


NodePointer = ctypes.POINTER(yaok_node)

#: ``char **out_json``: kept as an address so that it can be freed with yaok_string_free.
CHAR_OUT = ctypes.POINTER(ctypes.c_void_p)



class NodeHandle:
    """Owns one ``yaok_node *``: lends it to calls, frees it exactly once.

    ``close()`` marks the handle closed (new calls raise :class:`HandleClosed`), waits for
    calls in progress on other threads, then calls ``yaok_node_free`` (which stops the event
    thread, waiting for a running callback, and runs the callback registration's
    ``free_user_data``). Called on the node's own event thread it cannot wait for that
    thread, so it returns at once and a helper thread does the rest.
    """

    def __init__(self, pointer: Any, free: Callable[[Any], None]) -> None:
        if not pointer:
            raise ValueError("NULL node handle")
        self._pointer = pointer
        self._free = free
        self._cond = threading.Condition(threading.Lock())
        self._borrowers = 0
        self._closed = False
        self._freed = threading.Event()
        #: ``threading.get_ident()`` of the node's event thread, once a callback ran there.
        self.event_thread: Optional[int] = None
        _open_handles.add(self)

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def freed(self) -> bool:
        """True once ``yaok_node_free`` has returned."""
        return self._freed.is_set()

    def on_event_thread(self) -> bool:
        return self.event_thread is not None and threading.get_ident() == self.event_thread

    @contextmanager
    def borrow(self) -> Iterator[Any]:
        with self._cond:
            if self._closed:
                raise HandleClosed("Node is closed")
            self._borrowers += 1
            pointer = self._pointer
        try:
            yield pointer
        finally:
            with self._cond:
                self._borrowers -= 1
                if self._borrowers == 0:
                    self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            first = not self._closed
            self._closed = True
        if self.on_event_thread():
            if first:
                threading.Thread(target=self._release, name="yaok-node-close", daemon=False).start()
            return
        if first:
            self._release()
        else:
            self._freed.wait()  # another thread is closing it: return once it is gone

    def _release(self) -> None:
        with self._cond:
            while self._borrowers:
                self._cond.wait()
            pointer, self._pointer = self._pointer, None
        try:
            if pointer is not None:
                self._free(pointer)
        finally:
            self._freed.set()
            _open_handles.discard(self)


# Nodes still open when the interpreter exits are closed by atexit, while threads can still
# take the GIL: a callback arriving during interpreter finalisation would otherwise be run
# on a half-torn-down interpreter (or have its thread ended under the library's feet).
_open_handles: "weakref.WeakSet[NodeHandle]" = weakref.WeakSet()


@atexit.register
def _close_all_nodes() -> None:
    for handle in list(_open_handles):
        try:
            handle.close()
        except Exception:
            pass


def text_bytes(value: Union[str, bytes, bytearray, memoryview], what: str) -> bytes:
    """Message text as UTF-8 bytes: ``str`` is encoded (lone surrogates passed through so
    that the library refuses them); bytes-like is passed as it is."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogatepass")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be str or bytes, not {type(value).__name__}")


class NodeBase(HandleOwner):
    """What every part of :class:`yaok.Node` uses: the handle and the JSON-returning call."""

    _handle: Optional[NodeHandle] = None

    def _borrow(self) -> ContextManager[Any]:
        handle = self._handle
        if handle is None:
            raise HandleClosed("Node is closed")
        return handle.borrow()

    def _call(self, fn: Any, *args: Any) -> None:
        with self._borrow() as pointer:
            fn(pointer, *args)

    def _call_json(self, fn: Any, *args: Any) -> Any:
        """``fn(node, *args, &out_json)``; returns the parsed JSON."""
        out = ctypes.c_void_p()
        with self._borrow() as pointer:
            fn(pointer, *args, ctypes.byref(out))
        return json.loads(take_string(out))

    @staticmethod
    def _text(value: str, what: str) -> bytes:
        return encode_text(value, what)
