"""Loading libyaok and the shared plumbing every domain module uses.

The library is loaded lazily, on the first call that needs it (or by :func:`load_library`),
not at ``import yaok``: so the package, its documentation (``help(yaok)``) and its
exceptions are usable without it, and a missing library is one clear
:class:`~yaok.errors.LibraryNotFound` at first use. A failed load is not remembered: the
next call tries again.

Finding the library, in order:

1. ``$YAOK_LIBRARY``: a path to the .so. If it is set and cannot be loaded, that is an
   error (no silent fall-back to another copy).
2. The copy bundled in the package, ``yaok/libyaok.so.<ABI>``, present when the package
   was installed from the wheel ``scripts/build-wheel`` makes.
3. The repository's ``build/lib/libyaok.so.<ABI>`` (made by ``scripts/build-lib``) when the
   binding is used from a checkout (e.g. ``pip install -e bindings/python``).
4. The system loader: ``libyaok.so.<ABI>`` by its SONAME (``LD_LIBRARY_PATH``, ldconfig).

Then ``yaok_abi_version()`` must equal :data:`ABI_VERSION`, the ABI this binding was written
for; otherwise :class:`~yaok.errors.AbiVersionMismatch` is raised and nothing is used.

Domain modules (``identity.py``, ``envelope.py``, ``node.py`` …) declare the signatures of
their own functions with :func:`declare`, at import, without touching the library; so adding
a domain never means editing this file. Every declared function gets ``argtypes`` and
``restype`` when the library is loaded (ctypes would otherwise assume ``int`` and truncate
pointers); a function declared with ``restype=STATUS`` raises the mapped exception by
itself on failure.

Threads: ctypes releases the GIL around each call, so calls run in parallel. The
last-error message is per thread in the library, and it is read on the same thread right
after the failing call. The first use may come from several threads at once: the library
is loaded once.
"""

from __future__ import annotations

import ctypes
import enum
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, TypeVar

from .errors import AbiVersionMismatch, HandleClosed, InvalidArgument, LibraryNotFound, error_for_status

__all__ = [
    "ABI_VERSION", "STATUS", "lib", "library_path", "library", "load", "load_library",
    "declare", "declarations", "CFunction", "UNCHECKED", "check", "take_string", "take_bytes",
    "OwnedHandle", "abi_version", "version_string", "status_str", "last_error_message",
    "encode_text", "check_int", "TextEnum", "INT32_MIN", "INT32_MAX", "INT64_MIN", "INT64_MAX",
    "UINT32_MAX",
]

#: The C ABI version this binding was written for (``YAOK_ABI_VERSION`` in include/yaok.h).
ABI_VERSION = 1

#: ``typedef int32_t yaok_status``. Use it as ``restype`` to get automatic error checking.
STATUS = ctypes.c_int32

_REPO_ROOT = Path(__file__).resolve().parents[3]
_PACKAGE_DIR = Path(__file__).resolve().parent

INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
UINT32_MAX = (1 << 32) - 1


def _in_checkout() -> bool:
    """Whether this package is the one in a Ya OK checkout (bindings/python/yaok), so that
    the checkout's build/lib is ours. An installed package never looks there: three levels
    up from site-packages is a directory anyone may be able to write to."""
    return (_PACKAGE_DIR == _REPO_ROOT / "bindings" / "python" / "yaok"
            and (_REPO_ROOT / "include" / "yaok.h").is_file())


def _candidates(abi: int) -> Sequence[str]:
    found = [str(_PACKAGE_DIR / f"libyaok.so.{abi}")]
    if _in_checkout():
        found.append(str(_REPO_ROOT / "build" / "lib" / f"libyaok.so.{abi}"))
    found.append(f"libyaok.so.{abi}")
    return found


def _try_load(candidate: str) -> Tuple[Optional[ctypes.CDLL], str]:
    """(the library, "") or (None, why not), the reason without the file name that dlerror
    puts in front of it (the caller names the file once)."""
    if "/" in candidate and not os.path.exists(candidate):
        return None, "no such file"
    try:
        return ctypes.CDLL(candidate), ""
    except OSError as e:
        reason = str(e)
        if reason.startswith(candidate + ": "):
            reason = reason[len(candidate) + 2:]
        if "/" not in candidate and "cannot open shared object file" in reason:
            reason = "not found"
        return None, reason


def load(path: Optional[str] = None, expected_abi: Optional[int] = None) -> ctypes.CDLL:
    """Loads libyaok and checks its ABI version. Returns a new, raw ``CDLL`` (no function
    declared on it); the binding itself uses the shared one of :func:`library`.

    Args:
        path: an explicit path; default: ``$YAOK_LIBRARY``, then the search described in
            the module docs.
        expected_abi: the ABI version to insist on; default :data:`ABI_VERSION`.

    Raises:
        LibraryNotFound: nothing loadable was found, or it is not a Ya OK library.
        AbiVersionMismatch: the library's ``yaok_abi_version()`` differs.
    """
    expected = ABI_VERSION if expected_abi is None else expected_abi
    name = f"libyaok.so.{expected}"
    hint = (f"Build it with scripts/build-lib in the Ya OK core repository (it makes "
            f"build/lib/{name}), or set YAOK_LIBRARY to its path.")
    from_env = path is None and bool(os.environ.get("YAOK_LIBRARY"))
    explicit = path or os.environ.get("YAOK_LIBRARY")
    handle: Optional[ctypes.CDLL] = None
    if explicit:
        handle, reason = _try_load(explicit)
        if handle is None:
            where = f"YAOK_LIBRARY={explicit}" if from_env else explicit
            raise LibraryNotFound(f"Cannot load the Ya OK library from {where}: {reason}. {hint}")
        loaded_from = explicit
    else:
        tried: List[str] = []
        for candidate in _candidates(expected):
            handle, reason = _try_load(candidate)
            if handle is not None:
                loaded_from = candidate
                break
            place = candidate if "/" in candidate else f"{candidate} through the system loader"
            tried.append(f"{place} ({reason})")
        if handle is None:
            raise LibraryNotFound("Cannot find the Ya OK library. Looked for " + " and ".join(tried)
                                  + ". " + hint)
    try:
        abi = handle.yaok_abi_version
    except AttributeError:
        raise LibraryNotFound(f"{loaded_from} is not a Ya OK library (no yaok_abi_version)") from None
    abi.argtypes = []
    abi.restype = ctypes.c_uint32
    found = int(abi())
    if found != expected:
        raise AbiVersionMismatch(expected, found, loaded_from)
    setattr(handle, "_yaok_path", loaded_from)
    return handle


#: In the message of an error raised by :class:`CFunction`'s own last-resort checks: the
#: public method should have refused the value itself, with a clearer message.
UNCHECKED = "the binding did not check this argument before the C call"


def _int_range(t: Any) -> Optional[Tuple[int, int]]:
    """The values a ctypes integer type holds without wrapping, or None for other types."""
    code = getattr(t, "_type_", None)
    if not (isinstance(t, type) and issubclass(t, ctypes._SimpleCData) and isinstance(code, str)
            and code in "bBhHiIlLqQ"):
        return None
    bits = ctypes.sizeof(t) * 8
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if code.islower() else (0, (1 << bits) - 1)


class CFunction:
    """One C function of libyaok as the binding declared it (:func:`declare`): its name,
    ``restype`` and ``argtypes``. Calling it calls the C function, loading the library
    first if this is the first use.

    Public methods check their arguments before they get here; as a last resort, an integer
    out of its C type's range raises :class:`~yaok.errors.InvalidArgument` (ctypes would
    silently wrap it) and a value ctypes cannot convert raises ``TypeError`` (not
    ``ctypes.ArgumentError``), both saying :data:`UNCHECKED`."""

    __slots__ = ("name", "restype", "argtypes", "_ranges", "_fn")

    def __init__(self, name: str, restype: Any, argtypes: Sequence[Any]) -> None:
        self.name = name
        self.restype = restype
        self.argtypes: Tuple[Any, ...] = tuple(argtypes)
        ranges = []
        for index, t in enumerate(self.argtypes):
            bounds = _int_range(t)
            if bounds is not None:
                ranges.append((index, bounds[0], bounds[1]))
        self._ranges: Tuple[Tuple[int, int, int], ...] = tuple(ranges)
        self._fn: Any = None

    def _bind(self, handle: ctypes.CDLL) -> Any:
        try:
            fn = getattr(handle, self.name)
        except AttributeError:
            raise LibraryNotFound(
                f"{getattr(handle, '_yaok_path', 'libyaok')} has no function {self.name}, which this "
                "binding declares: the library and the binding come from different versions") from None
        fn.restype = self.restype
        fn.argtypes = list(self.argtypes)
        if self.restype is STATUS:
            fn.errcheck = _errcheck
        self._fn = fn
        return fn

    def __call__(self, *args: Any) -> Any:
        fn = self._fn
        if fn is None:
            handle = library()
            # Still None only if the library lacks the function: _bind says so.
            fn = self._fn if self._fn is not None else self._bind(handle)
        for index, low, high in self._ranges:
            value = args[index] if index < len(args) else None
            if isinstance(value, int) and not low <= value <= high:
                raise InvalidArgument(f"{self.name}: argument {index + 1} is out of range ({low} to "
                                      f"{high}); {UNCHECKED}")
        try:
            return fn(*args)
        except ctypes.ArgumentError as e:
            raise TypeError(f"{self.name}: {e}; {UNCHECKED}") from None

    def __repr__(self) -> str:
        return f"<yaok C function {self.name}>"


_declarations: Dict[str, CFunction] = {}
_load_lock = threading.Lock()
_library: Optional[ctypes.CDLL] = None


def declare(name: str, restype: Any, *argtypes: Any) -> CFunction:
    """Declares the C function ``name`` with its ``restype`` and ``argtypes`` and returns a
    callable for it. Nothing is loaded here: the types are set on the library's function
    when the library is loaded (at once if it already is).

    With ``restype=STATUS`` the function checks its own result: a non-zero status raises the
    mapped :class:`~yaok.errors.YaOKError` with the library's message, and success returns 0.
    Each name is declared once.
    """
    with _load_lock:
        if name in _declarations:
            raise ValueError(f"{name} is declared twice")
        fn = CFunction(name, restype, argtypes)
        _declarations[name] = fn
        if _library is not None:
            fn._bind(_library)
    return fn


def declarations() -> Dict[str, CFunction]:
    """Every C function the binding has declared, by name (a copy)."""
    with _load_lock:
        return dict(_declarations)


def library() -> ctypes.CDLL:
    """The shared library every declared function calls, loaded on first use (see the
    module docs) with every declared function's types set. Raises
    :class:`~yaok.errors.LibraryNotFound` or :class:`~yaok.errors.AbiVersionMismatch`."""
    global _library
    loaded = _library
    if loaded is not None:
        return loaded
    with _load_lock:
        if _library is None:
            handle = load()
            for fn in _declarations.values():
                try:
                    fn._bind(handle)
                except LibraryNotFound:
                    pass  # the rest stays usable; calling this one raises the error
            _library = handle
        return _library


def load_library() -> str:
    """Loads libyaok now, if it is not loaded yet, and returns the path it was loaded from.
    Call it at start-up to fail early: otherwise the first call that needs the library
    loads it. Raises :class:`~yaok.errors.LibraryNotFound` (the message says where it was
    looked for and how to build it) or :class:`~yaok.errors.AbiVersionMismatch`."""
    return str(getattr(library(), "_yaok_path"))


if TYPE_CHECKING:
    #: The loaded library (loaded when first read).
    lib: ctypes.CDLL
    #: Where :data:`lib` was loaded from (loads the library when first read).
    library_path: str
else:
    def __getattr__(name: str) -> Any:
        # lib and library_path load the library when read, not at import.
        if name == "lib":
            return library()
        if name == "library_path":
            return load_library()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _errcheck(result: int, func: Any, args: Any) -> int:
    check(result)
    return result


# ---- versions, status, last error, memory (the header's "library" part)

_abi_version = declare("yaok_abi_version", ctypes.c_uint32)
_version_string = declare("yaok_version_string", ctypes.c_char_p)
_status_str = declare("yaok_status_str", ctypes.c_char_p, STATUS)
_last_error_message = declare("yaok_last_error_message", ctypes.c_char_p)
_string_free = declare("yaok_string_free", None, ctypes.c_void_p)
_bytes_free = declare("yaok_bytes_free", None, ctypes.c_void_p, ctypes.c_size_t)


def abi_version() -> int:
    """``yaok_abi_version()``: the loaded library's ABI version."""
    return int(_abi_version())


def version_string() -> str:
    """``yaok_version_string()``: "MAJOR.MINOR.PATCH" of the loaded library."""
    raw: bytes = _version_string()
    return raw.decode("utf-8")


def status_str(status: int) -> str:
    """``yaok_status_str()``: a short English description of a status code (an ``int``
    that fits ``int32_t``; ``"Unknown status"`` for a code the library does not know)."""
    raw: bytes = _status_str(check_int(status, "status", INT32_MIN, INT32_MAX))
    return raw.decode("utf-8")


def last_error_message() -> Optional[str]:
    """``yaok_last_error_message()``: this thread's last failure message, or ``None``."""
    raw = _last_error_message()
    return None if raw is None else raw.decode("utf-8", errors="replace")


def check(status: int) -> None:
    """Raises the exception mapped from ``status`` (with this thread's last-error message)
    unless it is 0 (``YAOK_OK``). Call it on the thread that made the failing call."""
    if status != 0:
        message = last_error_message() or status_str(status)
        raise error_for_status(int(status), message)


def take_string(pointer: ctypes.c_void_p) -> str:
    """Copies a library-owned UTF-8 string (from a ``char **out``) into a ``str`` and frees
    it with ``yaok_string_free``."""
    if not pointer.value:
        raise error_for_status(900, "The library returned a NULL string")
    try:
        return ctypes.string_at(pointer.value).decode("utf-8")
    finally:
        _string_free(pointer)


def take_bytes(pointer: ctypes.c_void_p, length: ctypes.c_size_t) -> bytes:
    """Copies library-owned bytes (from ``uint8_t **out, size_t *out_len``) into ``bytes``
    and wipes and frees them with ``yaok_bytes_free``."""
    if not pointer.value:
        raise error_for_status(900, "The library returned NULL bytes")
    try:
        return ctypes.string_at(pointer.value, length.value)
    finally:
        _bytes_free(pointer, length)


def check_int(value: Any, what: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int:
    """An int in [low, high] (ctypes would silently wrap an out-of-range value)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what} must be int, not {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidArgument(f"{what} is out of range ({low} to {high})")
    return value


def encode_text(value: str, what: str) -> bytes:
    """UTF-8 bytes of ``value`` for a ``const char *`` argument.

    Raises TypeError for a non-``str``; :class:`~yaok.errors.InvalidArgument` for an embedded
    NUL (C would silently cut the text there). Lone surrogates are passed through
    (``surrogatepass``) so that the library refuses them as invalid UTF-8 itself."""
    if not isinstance(value, str):
        raise TypeError(f"{what} must be str, not {type(value).__name__}")
    if "\0" in value:
        raise error_for_status(101, f"{what} must not contain NUL characters")
    return value.encode("utf-8", errors="surrogatepass")


def encode_name(value: str, what: str = "name") -> bytes:
    """UTF-8 bytes of a display name (docs/PROTOCOL.md §1): as :func:`encode_text`, but an
    embedded NUL, a control character the name rules refuse anyway, is
    :class:`~yaok.errors.InvalidName`, as every defect of a name is (and as the library says
    of a name over 4,096 bytes)."""
    if isinstance(value, str) and "\0" in value:
        raise error_for_status(200, "Names cannot contain invisible, format or control characters (U+0000)")
    return encode_text(value, what)


class TextEnum(str, enum.Enum):
    """An enum whose members are the ABI's JSON strings: ``member == "sent"``,
    ``str(member) == f"{member}" == "sent"``, and ``json.dumps`` writes ``"sent"``."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class OwnedHandle:
    """One library handle owned by a Python object, freed exactly once.

    ``borrow()`` lends the pointer for the duration of one call; ``close()`` frees it, or,
    if calls on other threads are still using it, marks it closed and frees it when the
    last of them returns. So closing twice, or closing while another thread is using the
    object, is safe; using it after close raises :class:`~yaok.errors.HandleClosed`.
    """

    __slots__ = ("_pointer", "_free", "_kind", "_lock", "_borrowers", "_closed")

    def __init__(self, pointer: Any, free: Callable[[Any], None], kind: str) -> None:
        if not pointer:
            raise ValueError(f"NULL {kind} handle")
        self._pointer = pointer
        self._free = free
        self._kind = kind
        self._lock = threading.Lock()
        self._borrowers = 0
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @contextmanager
    def borrow(self) -> Iterator[Any]:
        with self._lock:
            if self._closed:
                raise HandleClosed(f"{self._kind} is closed")
            self._borrowers += 1
            pointer = self._pointer
        try:
            yield pointer
        finally:
            with self._lock:
                self._borrowers -= 1
                release = self._closed and self._borrowers == 0 and self._pointer is not None
                if release:
                    pointer, self._pointer = self._pointer, None
            if release:
                self._free(pointer)

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            if self._borrowers:
                return  # the last borrower frees it
            pointer, self._pointer = self._pointer, None
        if pointer is not None:
            self._free(pointer)


_Owner = TypeVar("_Owner", bound="HandleOwner")


class HandleOwner:
    """Lifetime of a Python object that owns one library handle (``self._handle``, an
    :class:`OwnedHandle` or a subclass): ``close()``, the context manager and a ``__del__``
    safety net."""

    _handle: Optional[Any] = None

    @property
    def closed(self) -> bool:
        """True once ``close()`` has been called."""
        return self._handle is None or self._handle.closed

    def close(self) -> None:
        """Frees the library handle. Safe to call more than once."""
        handle = self._handle
        if handle is not None:
            handle.close()

    def __enter__(self: _Owner) -> _Owner:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may already be gone
            pass
