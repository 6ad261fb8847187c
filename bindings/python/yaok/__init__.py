"""Ya OK core for Python: a ctypes binding over the C ABI in include/yaok.h.

>>> import yaok
>>> with yaok.Identity.new("Alice") as alice, yaok.Identity.new("Bob") as bob, \\
...         yaok.Card.decode(alice.card) as alice_card, yaok.Card.decode(bob.card) as bob_card:
...     sealed = yaok.envelope.seal(alice, bob_card, b"Hi", bytes(16), 1700000000000)
...     body, index = yaok.envelope.open(bob, [alice_card], sealed, bytes(16), 1700000000000)

The first call that needs libyaok loads it (``$YAOK_LIBRARY``, the repository's
``build/lib/libyaok.so.1``, or the system loader); importing the package does not, so this
documentation and the exception classes are available without it. A missing library raises
:class:`LibraryNotFound` (saying where it looked and how to build it), one whose ABI version
differs from :data:`ABI_VERSION` :class:`AbiVersionMismatch`. Call :func:`load_library` at
start-up to fail early; ``library_path`` says where it was loaded from (reading it loads it).

Failures raise subclasses of :class:`YaOKError` (see :mod:`yaok.errors`) carrying
``.status`` and the library's message.

A :class:`Node` is one stored profile (identity, contacts, messages, security log) with an
app lock; its events arrive through :meth:`Node.set_event_callback` on the node's own event
thread (see :mod:`yaok.events`).

One module per header section: :mod:`yaok.identity`, :mod:`yaok.envelope`, :mod:`yaok.node`,
:mod:`yaok.contacts`, :mod:`yaok.messages`, :mod:`yaok.security`, :mod:`yaok.events`,
:mod:`yaok.wire`, :mod:`yaok.typed` (the C-only typed getters, declared, not wrapped); each
declares its own C signatures with :func:`yaok._lib.declare`.
"""

from typing import TYPE_CHECKING, Any

from . import carry, connectivity, contacts, envelope, errors, events, forward_secrecy, links, messages, node, security, typed, wire
from ._lib import ABI_VERSION, abi_version, load_library, status_str, version_string
from .errors import *  # noqa: F401,F403  (the exception classes and Status; listed below)
from .carry import CarryMode, CarryStatus
from .connectivity import Connectivity, DisconnectReason, Internet, TransportConnection
from .contacts import Connection, ConnectionState, Contact, ContactPreview
from .events import EventKind, Registration
from .forward_secrecy import ForwardSecrecy, ForwardSecrecyState
from .identity import Card, Identity, PublicKeys
from .links import Link, LinkInfo, LinkPeer, LinkRole
from .messages import HistoryPage, Message, MessageDirection, MessageStatus, OutboxEntry
from .node import Node, NodeState, NodeStatus, NodeWarning, Profile, SecretStrength, SetupResult, Strength, VaultStatus, check_secret
from .security import SecurityEvent

__version__ = "0.1.0"

if TYPE_CHECKING:
    #: Where libyaok was loaded from. Reading it loads the library (see :func:`load_library`).
    library_path: str
else:
    def __getattr__(name: str) -> Any:
        if name == "library_path":  # read lazily: importing yaok never loads the library
            return load_library()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

# library_path is not listed: a star import must not load the library.
__all__ = [
    "ABI_VERSION", "abi_version", "version_string", "status_str", "load_library",
    "Identity", "Card", "PublicKeys", "envelope", "errors",
    "Node", "NodeState", "NodeStatus", "NodeWarning", "Profile", "SetupResult", "SecretStrength", "Strength",
    "VaultStatus", "check_secret",
    "CarryMode", "CarryStatus", "ForwardSecrecy", "ForwardSecrecyState",
    "Connectivity", "DisconnectReason", "Internet", "TransportConnection",
    "Contact", "ContactPreview", "Connection", "ConnectionState",
    "Message", "MessageStatus", "MessageDirection", "HistoryPage", "OutboxEntry", "Link", "LinkRole", "LinkInfo", "LinkPeer",
    "SecurityEvent", "EventKind", "Registration",
    "node", "connectivity", "contacts", "messages", "security", "events", "links", "typed", "wire", "forward_secrecy",
    # yaok.errors.__all__, written out: mypy reads only a literal __all__, and names it
    # cannot see there are not exported to an application's type checker.
    "Status", "YaOKError", "UsageError", "NullArgument", "InvalidArgument", "InvalidUTF8",
    "BufferTooSmall", "IdentityError", "InvalidName", "InvalidCard", "ContactExists",
    "NotFound", "MessageError", "NotForMe", "Tampered", "UnknownSender", "SenderAuthFailed",
    "MessageTooLarge", "EmptyMessage", "MalformedEnvelope", "StoreError", "Locked",
    "WrongPIN", "LockedOut", "PINTooShort", "PINMismatch", "StorageError", "DiskFull",
    "CorruptStore", "ConfirmationRequired", "NotInitialized", "AlreadyInitialized",
    "NoPlatformKey", "WrongPlatformKey", "Closed", "Busy", "AlreadyUnlocked",
    "DeviceSecretRequired", "WrongDeviceSecret", "ProtocolError", "MalformedPacket",
    "UnsupportedVersion", "UnknownPacketType", "FrameTooLarge", "FragmentInvalid",
    "Expired", "LinkFailed", "NoRoute", "RelayError", "TLSFailed", "CertificateRejected",
    "RelayAuthFailed", "Revoked", "RateLimited", "MailboxFull", "RelayUnavailable", "LibraryError", "InternalError", "OutOfMemory", "CryptoInitError",
    "HandleClosed", "LibraryNotFound", "AbiVersionMismatch", "error_for_status",
]
