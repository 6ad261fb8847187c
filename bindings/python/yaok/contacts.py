"""Contacts of a node (include/yaok.h, "contacts"; JSON in docs/ABI.md, "contact").

Contacts are named by their id (an int, stable within a node), which is also the id of the
conversation with that person. Every call needs the node unlocked (:class:`~yaok.Locked`).
Cards may be given as their text (``yaok:1:…``) or as a :class:`~yaok.Card`.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Union

from ._lib import STATUS, TextEnum, declare, encode_name
from ._node_base import CHAR_OUT, NodeBase, NodePointer, check_int
from .identity import Card

__all__ = ["Contact", "ContactPreview", "Connection", "ConnectionState",
           "CONTACT_DELETE_KEEP_MESSAGES", "CONTACT_DELETE_MESSAGES"]

#: YAOK_CONTACT_DELETE_KEEP_MESSAGES
CONTACT_DELETE_KEEP_MESSAGES = 0
#: YAOK_CONTACT_DELETE_MESSAGES
CONTACT_DELETE_MESSAGES = 1

_preview = declare("yaok_contact_preview", STATUS, NodePointer, ctypes.c_char_p, CHAR_OUT)
_add = declare("yaok_contact_add", STATUS, NodePointer, ctypes.c_char_p, CHAR_OUT)
_list = declare("yaok_contact_list", STATUS, NodePointer, CHAR_OUT)
_show = declare("yaok_contact_show", STATUS, NodePointer, ctypes.c_int64, CHAR_OUT)
_find = declare("yaok_contact_find", STATUS, NodePointer, ctypes.c_char_p, CHAR_OUT)
_verify = declare("yaok_contact_verify", STATUS, NodePointer, ctypes.c_int64)
_rename = declare("yaok_contact_rename", STATUS, NodePointer, ctypes.c_int64, ctypes.c_char_p)
_delete = declare("yaok_contact_delete", STATUS, NodePointer, ctypes.c_int64, ctypes.c_uint32)
_keys = declare("yaok_contact_keys", STATUS, NodePointer, ctypes.c_int64, CHAR_OUT)


class ConnectionState(TextEnum):
    """A contact's connection state (docs/ABI.md, "contact"); the value is the JSON text."""

    ONLINE = "online"
    """Connected now; :attr:`Connection.transport` says over what."""
    LAST_SEEN = "last_seen"
    """Not connected; :attr:`Connection.last_seen_ms` says since when."""
    NEVER_CONNECTED = "never_connected"


@dataclass(frozen=True)
class Connection:
    """How a contact is reachable: ``state`` is :attr:`ConnectionState.ONLINE` (with
    ``transport``), :attr:`~ConnectionState.LAST_SEEN` (with ``last_seen_ms``) or
    :attr:`~ConnectionState.NEVER_CONNECTED`."""

    state: ConnectionState
    transport: Optional[str] = None
    last_seen_ms: Optional[int] = None

    def __post_init__(self) -> None:
        # Connection("online") stays valid: the text becomes the enum member.
        object.__setattr__(self, "state", ConnectionState(self.state))

    @classmethod
    def from_json(cls, data: Optional[Dict[str, Any]]) -> "Connection":
        data = data or {"state": "never_connected"}
        return cls(state=ConnectionState(data.get("state", "never_connected")), transport=data.get("transport"),
                   last_seen_ms=data.get("last_seen_ms"))

    @property
    def online(self) -> bool:
        return self.state is ConnectionState.ONLINE


@dataclass(frozen=True)
class Contact:
    """A stored contact (``yaok_contact_add`` / ``_show`` / ``_find`` / ``_list``)."""

    id: int
    name: str
    user_id: str
    fingerprint: str
    fingerprint_short: str
    verified: bool
    added_ms: int
    connection: Connection

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Contact":
        return cls(id=int(data["id"]), name=data["name"], user_id=data["user_id"],
                   fingerprint=data["fingerprint"], fingerprint_short=data["fingerprint_short"],
                   verified=bool(data["verified"]), added_ms=int(data["added_ms"]),
                   connection=Connection.from_json(data.get("connection")))

    @property
    def conversation_id(self) -> int:
        """The id of the conversation with this contact (the same number as :attr:`id`)."""
        return self.id


@dataclass(frozen=True)
class ContactPreview:
    """A checked card before it is stored (``yaok_contact_preview``)."""

    name: str
    user_id: str
    fingerprint: str
    fingerprint_short: str
    existing_contact_id: Optional[int]
    """The id of the contact with the same keys, or ``None`` if adding would add a new one."""
    mixed_scripts: bool = False
    """The name's letters come from more than one script (``"Аlice"`` with a Cyrillic ``А``):
    warn before the name is trusted; the fingerprint says who holds the keys."""

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "ContactPreview":
        existing = data.get("existing_contact_id")
        return cls(name=data["name"], user_id=data["user_id"], fingerprint=data["fingerprint"],
                   fingerprint_short=data["fingerprint_short"],
                   existing_contact_id=None if existing is None else int(existing),
                   mixed_scripts=bool(data.get("mixed_scripts", False)))


def _card_text(card: Union[str, Card]) -> bytes:
    if isinstance(card, Card):
        card = card.text
    if not isinstance(card, str):
        raise TypeError(f"card must be card text (str) or a yaok.Card, not {type(card).__name__}")
    if "\0" in card:
        from .errors import InvalidCard
        raise InvalidCard("Invalid Ya OK QR code")
    return card.encode("utf-8", errors="surrogatepass")


class ContactsMixin(NodeBase):
    def preview_contact(self, card: Union[str, Card]) -> ContactPreview:
        """Decodes and checks a card without storing anything. A bad card raises
        :class:`~yaok.InvalidCard` ("Invalid Ya OK QR code")."""
        return ContactPreview.from_json(self._call_json(_preview, _card_text(card)))

    def add_contact(self, card: Union[str, Card]) -> Contact:
        """Adds the person on the card. Already a contact: :class:`~yaok.ContactExists`
        ("<name> is already in your contacts"); one's own card:
        :class:`~yaok.InvalidArgument`."""
        return Contact.from_json(self._call_json(_add, _card_text(card)))

    def contacts(self) -> List[Contact]:
        """Every contact, sorted by name."""
        return [Contact.from_json(c) for c in self._call_json(_list)]

    def contact(self, contact_id: int) -> Contact:
        """One contact; :class:`~yaok.NotFound` if there is none with that id."""
        return Contact.from_json(self._call_json(_show, check_int(contact_id, "contact_id")))

    def find_contact(self, query: Union[str, int]) -> Contact:
        """The one contact that ``query`` names: its id, user ID, a fingerprint prefix of at
        least 4 hex digits, or its name (case-insensitive). None: :class:`~yaok.NotFound`;
        several: :class:`~yaok.InvalidArgument`."""
        if isinstance(query, bool):
            raise TypeError("query must be str or int, not bool")
        if isinstance(query, int):
            query = str(query)
        return Contact.from_json(self._call_json(_find, self._text(query, "query")))

    def verify_contact(self, contact_id: int) -> None:
        """Marks a contact verified after comparing fingerprints out of band."""
        self._call(_verify, check_int(contact_id, "contact_id"))

    def rename_contact(self, contact_id: int, name: str) -> None:
        """Renames a contact (2 to 50 characters, else :class:`~yaok.InvalidName`)."""
        self._call(_rename, check_int(contact_id, "contact_id"), encode_name(name))

    def delete_contact(self, contact_id: int, with_messages: bool = False) -> None:
        """Deletes a contact and its keys. By default the conversation stays readable under
        the same id (and can no longer receive new outgoing messages); with
        ``with_messages=True`` its messages are deleted too."""
        flags = CONTACT_DELETE_MESSAGES if with_messages else CONTACT_DELETE_KEEP_MESSAGES
        self._call(_delete, check_int(contact_id, "contact_id"), flags)

    def contact_keys(self, contact_id: int) -> Dict[str, Any]:
        """The contact's name, public keys and card as stored (``yaok_contact_keys``):
        ``{"name", "encryption_key", "signing_key", "card"}`` with the keys as hex and
        ``card`` the signed card text it was added with."""
        data: Dict[str, Any] = self._call_json(_keys, check_int(contact_id, "contact_id"))
        return data
