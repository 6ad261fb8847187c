"""A node: one profile (identity, contacts, messages, security log) in one data directory
(include/yaok.h, "node").

>>> with Node.open("/path/to/profile") as node:
...     if not node.status().initialized:
...         me = node.setup("Alice", "135790", "135790")
...     else:
...         node.unlock("135790")
...     bob = node.add_contact(bob_card_text)
...     node.send(bob.id, "Hello, Bob!")
...     page = node.history(bob.id)

After :meth:`Node.open` the node is locked; :meth:`Node.setup` (first time) or
:meth:`Node.unlock` loads the keys. Calls that need them raise :class:`~yaok.Locked` while
locked. A node may be used from several threads at once (the library serialises calls).

Events (auto-lock, messages stored, …) arrive through :meth:`Node.set_event_callback` **on
the node's own event thread** (see :mod:`yaok.events`).

Close the node with ``with`` or :meth:`Node.close` (idempotent; waits for calls in progress
on other threads and for a running callback; ends the callback registration). ``__del__``
and an ``atexit`` hook close forgotten nodes as a safety net.

Contacts, messages and the security log are in :mod:`yaok.contacts`,
:mod:`yaok.messages` and :mod:`yaok.security`; their methods are part of :class:`Node`.
"""

from __future__ import annotations

import ctypes
import enum
import os
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple, Union

from ._lib import STATUS, TextEnum, declare, encode_name, encode_text
from ._node_base import CHAR_OUT, NodeHandle, NodePointer
from .carry import CarryMixin
from .connectivity import ConnectivityMixin
from .contacts import ContactsMixin
from .errors import InvalidArgument
from .events import EventsMixin
from .forward_secrecy import ForwardSecrecyMixin
from .identity import Card, CardPointer, Identity, IdentityPointer
from .links import LinksMixin
from .messages import MessagesMixin
from .security import SecurityMixin

__all__ = [
    "Node", "NodeStatus", "NodeState", "VaultStatus", "SetupResult", "NodeWarning", "SecretStrength", "Strength",
    "check_secret",
    "NODE_OPEN_DEFAULT", "NODE_OPEN_TEST_FAST_KDF", "AUTO_LOCK_NEVER", "RESET_CONFIRM",
    "PLATFORM_KEY_BYTES", "DEVICE_SECRET_BYTES", "MAX_AUTO_LOCK_MS", "TEST_INSECURE_KDF_VARIABLE",
]

#: YAOK_NODE_OPEN_DEFAULT
NODE_OPEN_DEFAULT = 0
#: YAOK_NODE_OPEN_TEST_FAST_KDF (tests only: minimal Argon2id costs; needs
#: ``YAOK_TEST_INSECURE_KDF=1`` in the environment)
NODE_OPEN_TEST_FAST_KDF = 1
#: The environment variable through which a test process opts in to test-only Argon2id
#: costs: the library reads it once, so set it before the first node is opened. Never in
#: production.
TEST_INSECURE_KDF_VARIABLE = "YAOK_TEST_INSECURE_KDF"
#: YAOK_AUTO_LOCK_NEVER (the C value; in Python, pass ``timeout_ms=None``)
AUTO_LOCK_NEVER = -1
#: YAOK_RESET_CONFIRM ("RSET")
RESET_CONFIRM = 0x52534554
#: YAOK_PLATFORM_KEY_BYTES
PLATFORM_KEY_BYTES = 32
#: YAOK_DEVICE_SECRET_BYTES
DEVICE_SECRET_BYTES = 32


class Strength(TextEnum):
    """How strong a PIN or passphrase looks (``YAOK_STRENGTH_*``; ``.code`` is the C value):
    weak below 40 estimated bits (every PIN of up to 12 digits), fair below 60, strong from
    60."""

    WEAK = "weak"
    FAIR = "fair"
    STRONG = "strong"

    @property
    def code(self) -> int:
        return {"weak": 1, "fair": 2, "strong": 3}[self.value]

    @classmethod
    def from_code(cls, code: int) -> "Strength":
        return {1: cls.WEAK, 2: cls.FAIR, 3: cls.STRONG}[code]


@dataclass(frozen=True)
class SecretStrength:
    """A PIN or passphrase's strength class and the rough estimate of bits of guessing work
    it comes from (a guide for a meter, not a guarantee; never stored)."""

    strength: Strength
    estimated_bits: int


class NodeWarning(enum.IntFlag):
    """``YAOK_WARNING_*``: conditions the app must show the user. Falsy when empty."""

    NONE = 0
    ALL_ZERO_PIN = 1
    """The PIN is all zeros: accepted, but weak."""
    AUTO_LOCK_DISABLED = 2
    """"App will not auto-lock. Anyone with access to your phone can read your messages.\""""



_open = declare("yaok_node_open", STATUS, ctypes.c_char_p, ctypes.c_uint32, ctypes.POINTER(NodePointer))
_free = declare("yaok_node_free", None, NodePointer)
_setup = declare("yaok_node_setup", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                 ctypes.POINTER(ctypes.c_uint32))
_setup_v2 = declare("yaok_node_setup_v2", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                    ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32))
_secret_check = declare("yaok_secret_check", STATUS, ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint32),
                        ctypes.POINTER(ctypes.c_uint32))
_set_device_secret = declare("yaok_node_set_device_secret", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_size_t)
_unlock = declare("yaok_node_unlock", STATUS, NodePointer, ctypes.c_char_p)
_unlock_platform_key = declare("yaok_node_unlock_platform_key", STATUS, NodePointer, ctypes.c_char_p, ctypes.c_size_t)
_register_platform_key = declare("yaok_node_register_platform_key", STATUS, NodePointer, ctypes.c_char_p,
                                 ctypes.c_size_t)
_remove_platform_key = declare("yaok_node_remove_platform_key", STATUS, NodePointer)
_lock = declare("yaok_node_lock", STATUS, NodePointer)
_set_auto_lock = declare("yaok_node_set_auto_lock", STATUS, NodePointer, ctypes.c_int64,
                         ctypes.POINTER(ctypes.c_uint32))
_status = declare("yaok_node_status", STATUS, NodePointer, CHAR_OUT)
_identity = declare("yaok_node_identity", STATUS, NodePointer, ctypes.POINTER(IdentityPointer))
_profile = declare("yaok_node_profile", STATUS, NodePointer, CHAR_OUT)
_reset = declare("yaok_node_reset", STATUS, NodePointer, ctypes.c_uint32)

#: The longest auto-lock time: 30 days, in milliseconds.
MAX_AUTO_LOCK_MS = 30 * 24 * 3600 * 1000


@dataclass(frozen=True)
class VaultStatus:
    """How the PIN vault is sealed (the status's ``"vault"``): the Argon2id costs, whether
    they meet the production minimum, and whether the vault is bound to a device secret."""

    ops_limit: int
    mem_limit: int
    """Bytes of memory per evaluation."""
    meets_production_minimum: bool
    device_bound: bool
    kdf: str = "argon2id13"

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "VaultStatus":
        return cls(ops_limit=int(data["ops_limit"]), mem_limit=int(data["mem_limit"]),
                   meets_production_minimum=bool(data["meets_production_minimum"]),
                   device_bound=bool(data["device_bound"]), kdf=str(data.get("kdf", "argon2id13")))


@dataclass(frozen=True)
class NodeStatus:
    """The lock state (``yaok_node_status``; docs/ABI.md, "status")."""

    initialized: bool
    locked: bool
    lockout_seconds: int
    failed_attempts: int
    auto_lock_ms: Optional[int]
    """Idle time before auto-lock in milliseconds (as :meth:`Node.set_auto_lock` takes it);
    ``None`` means never."""
    platform_key_registered: bool
    vault: Optional[VaultStatus] = None
    """The PIN vault's costs and binding; ``None`` before setup."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "NodeStatus":
        vault = data.get("vault")
        return cls(initialized=bool(data["initialized"]), locked=bool(data["locked"]),
                   lockout_seconds=int(data.get("lockout_seconds") or 0),
                   failed_attempts=int(data.get("failed_attempts") or 0),
                   auto_lock_ms=data.get("auto_lock_ms"),
                   platform_key_registered=bool(data.get("platform_key_registered", False)),
                   vault=VaultStatus.from_json(vault) if vault else None)


class yaok_node_state(ctypes.Structure):
    """``struct yaok_node_state`` (include/yaok.h)."""

    _fields_ = [("struct_size", ctypes.c_uint32), ("initialized", ctypes.c_int32), ("locked", ctypes.c_int32),
                ("lockout_seconds", ctypes.c_uint32), ("failed_attempts", ctypes.c_uint32),
                ("transports", ctypes.c_uint32), ("transports_running", ctypes.c_uint32),
                ("transports_failed", ctypes.c_uint32), ("links_open", ctypes.c_uint32),
                ("held_packets", ctypes.c_uint32), ("counts_known", ctypes.c_int32), ("contacts", ctypes.c_uint32),
                ("contacts_online", ctypes.c_uint32), ("messages_waiting", ctypes.c_uint32)]


_get_state = declare("yaok_node_get_state", STATUS, NodePointer, ctypes.POINTER(yaok_node_state))
_node_card = declare("yaok_node_card", STATUS, NodePointer, ctypes.POINTER(CardPointer))


@dataclass(frozen=True)
class NodeState:
    """What a status line shows, in one call (``yaok_node_get_state``); works while locked
    and does not count as activity for auto-lock. ``initialized`` False is a first run:
    call :meth:`Node.setup`, no unlock attempt needed to find out. ``contacts``,
    ``contacts_online`` and ``messages_waiting`` are None while locked (unknown)."""

    initialized: bool
    locked: bool
    lockout_seconds: int
    failed_attempts: int
    transports: int
    transports_running: int
    transports_failed: int
    links_open: int
    held_packets: int
    contacts: Optional[int]
    contacts_online: Optional[int]
    messages_waiting: Optional[int]


@dataclass(frozen=True)
class Profile:
    """The node's own public identity (``yaok_node_profile``): nothing secret."""

    name: str
    user_id: str
    fingerprint: str
    fingerprint_short: str
    card: str
    """The signed contact card text (the QR code payload)."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Profile":
        return cls(name=data["name"], user_id=data["user_id"], fingerprint=data["fingerprint"],
                   fingerprint_short=data["fingerprint_short"], card=data["card"])


@dataclass(frozen=True)
class SetupResult:
    """What :meth:`Node.setup` returns: the new identity's public facts and the warnings."""

    name: str
    user_id: str
    fingerprint: str
    fingerprint_short: str
    card: str
    """The signed contact card text (the QR code payload)."""
    warnings: NodeWarning
    strength: SecretStrength
    """How strong the chosen PIN or passphrase looks (show it; it is not stored)."""


def check_secret(secret: str) -> SecretStrength:
    """Whether ``secret`` is an acceptable PIN or passphrase, and how strong it looks
    (``yaok_secret_check``), for a meter while the person types. Raises what setup would:
    :class:`~yaok.PINTooShort` ("PIN must be at least 6 digits" for digits only, else
    "Passphrase must be at least 6 characters"), :class:`~yaok.InvalidArgument` (more than
    256 bytes of UTF-8, or control characters)."""
    strength, bits = ctypes.c_uint32(0), ctypes.c_uint32(0)
    _secret_check(encode_text(secret, "secret"), ctypes.byref(strength), ctypes.byref(bits))
    return SecretStrength(strength=Strength.from_code(strength.value), estimated_bits=bits.value)


def _key_argument(key: Union[bytes, bytearray, memoryview], what: str = "key") -> Tuple[Any, int]:
    """A platform key or device secret for a ``const uint8_t *key, size_t key_len`` pair. A
    ``bytearray`` is lent without a copy, so the caller can wipe it afterwards; ``bytes`` is
    passed as it is. The library checks the length (32)."""
    if isinstance(key, bytearray):
        return ((ctypes.c_char * len(key)).from_buffer(key) if key else b""), len(key)
    if isinstance(key, memoryview):
        key = key.tobytes()
    if isinstance(key, bytes):
        return key, len(key)
    raise TypeError(f"{what} must be bytes-like, not {type(key).__name__}")


class Node(ContactsMixin, MessagesMixin, SecurityMixin, EventsMixin, LinksMixin, CarryMixin, ConnectivityMixin,
           ForwardSecrecyMixin):
    """One Ya OK profile over a ``yaok_node *``. Create it with :meth:`open`."""

    def __init__(self, _pointer: Any = None, _data_dir: str = "") -> None:
        if not isinstance(_pointer, NodePointer):
            raise TypeError("use Node.open(data_dir)")
        self._handle = NodeHandle(_pointer, _free)
        self.data_dir = _data_dir

    @classmethod
    def open(cls, data_dir: Union[str, "os.PathLike[str]"], *, test_fast_kdf: bool = False) -> "Node":
        """Opens (creating it, mode 0700, if needed) the node stored in ``data_dir``, locked
        (``yaok_node_open``). A store from a newer version or damaged:
        :class:`~yaok.CorruptStore`.

        ``test_fast_kdf``: TEST ONLY (``YAOK_NODE_OPEN_TEST_FAST_KDF``): new PINs are sealed
        with minimal Argon2id costs. It offers no protection to the PIN, and the library
        refuses it (:class:`~yaok.InvalidArgument`) unless the process has
        ``YAOK_TEST_INSECURE_KDF=1`` in its environment (set before the first node opens)."""
        path = os.fspath(data_dir)
        if isinstance(path, bytes):
            path = os.fsdecode(path)
        flags = NODE_OPEN_TEST_FAST_KDF if test_fast_kdf else NODE_OPEN_DEFAULT
        out = NodePointer()
        _open(encode_text(path, "data_dir"), flags, ctypes.byref(out))
        return cls(out, path)

    # ---- lifetime

    def close(self) -> None:
        """Locks the node, stops its event thread and closes the store
        (``yaok_node_free``); the callback registration ends (its ``freed`` is set). Safe to
        call more than once and from any thread; from the node's own event callback the node
        is closed at once and freed on a helper thread after the callback returns."""
        super().close()

    def __repr__(self) -> str:
        return f"<yaok.Node {self.data_dir!r}{' closed' if self.closed else ''}>"

    # ---- setup and the lock

    def setup(self, name: str, pin: str, confirmation: str) -> SetupResult:
        """First-time setup: creates the identity ``name``, seals it under ``pin`` (a PIN or a
        passphrase: at least 6 printable characters, at most 256 bytes) and leaves the node
        unlocked; with a device secret set (:meth:`set_device_secret`) the vault is bound to
        it. Errors, in this order: :class:`~yaok.InvalidName` ("Name must be 2-50
        characters"), :class:`~yaok.PINTooShort` ("PIN must be at least 6 digits", or
        "Passphrase must be at least 6 characters"), :class:`~yaok.InvalidArgument` (too
        long, control characters), :class:`~yaok.PINMismatch` ("PINs do not match"),
        :class:`~yaok.AlreadyInitialized`. ``warnings`` has
        :attr:`NodeWarning.ALL_ZERO_PIN` for "000000"; ``strength`` says how strong the
        secret looks (``yaok_node_setup_v2``)."""
        warnings, strength, bits = ctypes.c_uint32(0), ctypes.c_uint32(0), ctypes.c_uint32(0)
        self._call(_setup_v2, encode_name(name), self._text(pin, "pin"),
                   self._text(confirmation, "confirmation"), ctypes.byref(warnings), ctypes.byref(strength),
                   ctypes.byref(bits))
        me = self.profile()
        return SetupResult(name=me.name, user_id=me.user_id, fingerprint=me.fingerprint,
                           fingerprint_short=me.fingerprint_short, card=me.card,
                           warnings=NodeWarning(warnings.value),
                           strength=SecretStrength(strength=Strength.from_code(strength.value),
                                                   estimated_bits=bits.value))

    def set_device_secret(self, device_secret: Union[bytes, bytearray, memoryview, None]) -> None:
        """Sets the 32-byte device secret mixed into the PIN vault's key, or clears it with
        ``None`` (``yaok_node_set_device_secret``). A setup made while it is set binds the
        vault to it, so a copy of the data directory alone cannot be searched for the PIN; a
        bound vault then unlocks only after the same secret is set
        (:class:`~yaok.DeviceSecretRequired`, :class:`~yaok.WrongDeviceSecret`, neither
        counted as a wrong PIN). Derive it from a key the platform keeps in hardware
        (include/yaok.h says how); pass a ``bytearray`` to be able to wipe your copy."""
        if device_secret is None:
            self._call(_set_device_secret, None, 0)
            return
        self._call(_set_device_secret, *_key_argument(device_secret, "device_secret"))

    def unlock(self, pin: str) -> None:
        """Unlocks with the PIN or passphrase (about 0.1 s of Argon2id). Wrong:
        :class:`~yaok.WrongPIN` ("Incorrect PIN"); the third wrong PIN in a row and every try
        during the 30-second lockout: :class:`~yaok.LockedOut` ("Too many attempts. Try
        again in N seconds."). Each further lockout before a successful unlock lasts twice
        as long, up to an hour; the lockout runs on the boot clock, so neither a clock change
        nor a restart shortens it. Not set up: :class:`~yaok.NotInitialized`. Refused without
        counting a wrong attempt: input setup would refuse (:class:`~yaok.PINTooShort`,
        :class:`~yaok.InvalidArgument`), :class:`~yaok.AlreadyUnlocked`,
        :class:`~yaok.DeviceSecretRequired`, :class:`~yaok.WrongDeviceSecret`, and
        :class:`~yaok.CorruptStore` for a vault sealed below the production costs."""
        self._call(_unlock, self._text(pin, "pin"))

    def unlock_with_platform_key(self, key: Union[bytes, bytearray, memoryview]) -> None:
        """Unlocks with the 32-byte platform key registered earlier (not subject to the PIN
        lockout). :class:`~yaok.NoPlatformKey`, :class:`~yaok.WrongPlatformKey`. Pass a
        ``bytearray`` to be able to wipe your copy afterwards."""
        self._call(_unlock_platform_key, *_key_argument(key))

    def register_platform_key(self, key: Union[bytes, bytearray, memoryview]) -> None:
        """Registers a 32-byte platform key (from the OS keystore) as a second way to
        unlock, replacing an earlier one; the PIN keeps working. Needs the node unlocked."""
        self._call(_register_platform_key, *_key_argument(key))

    def remove_platform_key(self) -> None:
        """Removes the platform key (a no-op if there is none). Needs the node unlocked."""
        self._call(_remove_platform_key)

    def lock(self) -> None:
        """Locks now and wipes the keys from memory (a no-op if locked)."""
        self._call(_lock)

    def set_auto_lock(self, *, timeout_ms: Optional[int]) -> NodeWarning:
        """Sets the idle time after which the node locks itself, in milliseconds like
        :attr:`NodeStatus.auto_lock_ms` (stored; default 300 000, 5 minutes):
        ``timeout_ms`` from 1 to 30 days (2 592 000 000), or ``None`` for never, which
        returns :attr:`NodeWarning.AUTO_LOCK_DISABLED`. Keyword only:
        ``node.set_auto_lock(timeout_ms=60_000)``. Needs the node unlocked. When it fires,
        :attr:`~yaok.EventKind.LOCKED` arrives with reason ``"auto_lock"``.

        Raises TypeError for anything but an ``int`` or ``None``,
        :class:`~yaok.InvalidArgument` for a value out of range."""
        if timeout_ms is None:
            value = AUTO_LOCK_NEVER
        else:
            if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int):
                raise TypeError(f"timeout_ms must be an int (milliseconds) or None, not {type(timeout_ms).__name__}")
            if not 0 < timeout_ms <= MAX_AUTO_LOCK_MS:
                raise InvalidArgument(f"timeout_ms must be 1 to {MAX_AUTO_LOCK_MS} (30 days), or None for never")
            value = timeout_ms
        warnings = ctypes.c_uint32(0)
        self._call(_set_auto_lock, value, ctypes.byref(warnings))
        return NodeWarning(warnings.value)

    def status(self) -> NodeStatus:
        """The lock state; works while locked."""
        return NodeStatus.from_json(self._call_json(_status))

    def state(self) -> NodeState:
        """The node at a glance (``yaok_node_get_state``): lock state, first run, transports,
        links, contacts online and messages waiting; works while locked."""
        out = yaok_node_state()
        out.struct_size = ctypes.sizeof(yaok_node_state)
        self._call(_get_state, ctypes.byref(out))
        known = bool(out.counts_known)
        return NodeState(initialized=bool(out.initialized), locked=bool(out.locked),
                         lockout_seconds=int(out.lockout_seconds), failed_attempts=int(out.failed_attempts),
                         transports=int(out.transports), transports_running=int(out.transports_running),
                         transports_failed=int(out.transports_failed), links_open=int(out.links_open),
                         held_packets=int(out.held_packets),
                         contacts=int(out.contacts) if known else None,
                         contacts_online=int(out.contacts_online) if known else None,
                         messages_waiting=int(out.messages_waiting) if known else None)

    def card(self) -> Card:
        """The node's own contact card (``yaok_node_card``) as a :class:`~yaok.Card`: its
        ``text`` for the QR code, ``fingerprint``, ``name``. No secret key is copied (unlike
        :meth:`identity`). Needs the node unlocked."""
        out = CardPointer()
        self._call(_node_card, ctypes.byref(out))
        return Card(out)

    def profile(self) -> Profile:
        """The node's public profile (name, user ID, fingerprint, card text for the QR code);
        nothing secret, so prefer it to :meth:`identity` for display. Needs the node
        unlocked."""
        return Profile.from_json(self._call_json(_profile))

    def identity(self) -> Identity:
        """The node's identity as an :class:`~yaok.Identity` (for :mod:`yaok.envelope`).
        It holds its own copy of the secret keys until closed, even after the node locks:
        use it with ``with`` and close it promptly. Needs the node unlocked."""
        out = IdentityPointer()
        self._call(_identity, ctypes.byref(out))
        return Identity(out)

    def reset(self, *, confirm: bool = False) -> None:
        """Forgotten PIN: destroys the identity, contacts, messages and settings, leaving an
        empty node that needs :meth:`setup` again. Needs no PIN, but ``confirm=True``; else
        :class:`~yaok.ConfirmationRequired`."""
        self._call(_reset, RESET_CONFIRM if confirm is True else 0)
