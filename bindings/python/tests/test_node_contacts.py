"""yaok.Node: contacts, messages, history pages, the security log."""

from __future__ import annotations

import json
import time

import pytest

import yaok


def incoming_id(i: int) -> bytes:
    return bytes(15) + bytes([i])


# ---- contacts

def test_contacts_flow(node, bob, bob_card, eve):
    preview = node.preview_contact(bob.card)
    assert preview == yaok.ContactPreview(name="Bob", user_id=bob.user_id, fingerprint=bob.fingerprint,
                                          fingerprint_short=bob.fingerprint_short, existing_contact_id=None)
    assert node.contacts() == []  # a preview stores nothing

    added = node.add_contact(bob_card)  # a yaok.Card works as well as its text
    assert added.name == "Bob" and added.user_id == bob.user_id and added.fingerprint == bob.fingerprint
    assert added.id > 0 and added.conversation_id == added.id
    assert added.verified is False and added.added_ms > 0
    assert added.connection == yaok.Connection("never_connected") and not added.connection.online

    with pytest.raises(yaok.ContactExists, match="^Bob is already in your contacts$") as info:
        node.add_contact(bob.card)
    assert info.value.status == 202
    assert node.preview_contact(bob.card).existing_contact_id == added.id

    eve_contact = node.add_contact(eve.card)
    assert [c.name for c in node.contacts()] == ["Bob", "Eve"]
    assert node.contact(added.id) == added

    node.verify_contact(added.id)
    node.rename_contact(added.id, "Bobby")
    with pytest.raises(yaok.InvalidName, match="^Name must be 2-50 characters$"):
        node.rename_contact(added.id, "B")
    with pytest.raises(yaok.InvalidName, match="^Name must be 2-50 characters$"):
        node.rename_contact(added.id, "B" * 4097)  # over 4,096 bytes: refused at once (§1)
    bobby = node.contact(added.id)
    assert bobby.name == "Bobby" and bobby.verified
    assert bobby.connection.state is yaok.ConnectionState.NEVER_CONNECTED
    keys = node.contact_keys(added.id)
    assert keys["name"] == "Bobby" and len(keys["encryption_key"]) == 64 and len(keys["signing_key"]) == 64
    assert keys["card"] == bob.card  # the card itself, read back from the store
    assert added.connection.state is yaok.ConnectionState.NEVER_CONNECTED

    assert node.find_contact("BOBBY").id == added.id
    assert node.find_contact(bob.user_id).id == added.id
    assert node.find_contact(bob.fingerprint[:8]).id == added.id
    assert node.find_contact(added.id).id == added.id
    assert node.find_contact(str(eve_contact.id)).name == "Eve"
    with pytest.raises(yaok.NotFound):
        node.find_contact("Mallory")
    with pytest.raises(yaok.NotFound):
        node.contact(9999)
    assert any(e.kind == "contact_verified" for e in node.security_events())


def test_bad_cards(node):
    for text in ("not a card", "yaok:1:AAAA", "", "yaok:1:\0"):
        with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code"):
            node.preview_contact(text)
        with pytest.raises(yaok.InvalidCard):
            node.add_contact(text)
    with pytest.raises(TypeError):
        node.add_contact(b"yaok:1:")


def test_preview_flags_names_that_mix_scripts(node):
    with yaok.Identity.new("\u0410lice") as spoof, yaok.Identity.new("Alice") as plain:  # Cyrillic А
        assert node.preview_contact(spoof.card).mixed_scripts is True
        assert node.preview_contact(plain.card).mixed_scripts is False


@pytest.mark.parametrize("name", ["Bob\u202eevil", "Bo\u200bb", "\u2066Bob\u2069", "Bo\u3164b"])
def test_names_with_hidden_characters_are_refused(node, name):
    with pytest.raises(yaok.InvalidName):
        yaok.Identity.new(name)
    with yaok.Identity.new("Bob") as someone:
        bob = node.add_contact(someone.card)
    with pytest.raises(yaok.InvalidName):
        node.rename_contact(bob.id, name)


def test_names_are_stored_in_nfc(node):
    with yaok.Identity.new("Zoe\u0308") as zoe:
        assert zoe.name == "Zo\u00eb"
        assert node.add_contact(zoe.card).name == "Zo\u00eb"


def test_card_text_that_is_not_utf8_is_invalid_utf8(node):
    for call in (node.preview_contact, node.add_contact):
        with pytest.raises(yaok.InvalidUTF8):
            call("yaok:1:\udcff")


def test_a_huge_query_is_refused_at_once(node):
    huge = "a" * 10_000_000
    started = time.monotonic()
    with pytest.raises(yaok.InvalidArgument):
        node.find_contact(huge)
    with pytest.raises(yaok.InvalidCard):
        node.preview_contact(huge)
    assert time.monotonic() - started < 0.5  # scanning it took 1.7 s
    with pytest.raises(yaok.NotFound):
        node.find_contact("a" * 4096)


def test_own_card_is_refused(node):
    with node.identity() as me:
        with pytest.raises(yaok.InvalidArgument, match="^This is your own contact card$"):
            node.add_contact(me.card)
        with pytest.raises(yaok.InvalidArgument, match="^This is your own contact card$"):
            node.preview_contact(me.card)


def test_a_key_belongs_to_one_contact_at_most(node):
    x1, x2, e1, e2 = (bytes([i]) * 32 for i in (1, 2, 3, 4))
    with yaok.Identity.restore("Bob", x1 + e1) as bob, yaok.Identity.restore("Robert", x1 + e2) as same_x, \
            yaok.Identity.restore("Rob", x2 + e1) as same_ed:
        added = node.add_contact(bob.card)
        for other in (same_x, same_ed):
            assert node.preview_contact(other.card).existing_contact_id == added.id
            with pytest.raises(yaok.ContactExists, match="^This card shares a key with Bob, who is already in your contacts$"):
                node.add_contact(other.card)
    assert [c.name for c in node.contacts()] == ["Bob"]


def test_integer_arguments_are_checked_before_the_call(node):
    with pytest.raises(TypeError):
        node.contact("1")
    with pytest.raises(TypeError):
        node.contact(True)
    with pytest.raises(yaok.InvalidArgument):
        node.contact(1 << 64)  # ctypes would silently wrap it
    with pytest.raises(yaok.InvalidArgument):
        node.history(1, limit=-1)


def test_delete_keeping_messages(node, bob):
    bob_id = node.add_contact(bob.card).id
    node.send(bob_id, "first")
    node.send(bob_id, "second")
    node.delete_contact(bob_id)
    assert node.contacts() == []
    with pytest.raises(yaok.NotFound):
        node.contact(bob_id)
    # The conversation stays readable under the same id; it can no longer receive new
    # outgoing messages.
    assert sorted(m.text for m in node.history(bob_id).messages) == ["first", "second"]
    with pytest.raises(yaok.NotFound):
        node.send(bob_id, "more")
    # Adding the person again gives back the same id and conversation.
    assert node.add_contact(bob.card).id == bob_id
    assert len(node.history(bob_id).messages) == 2


def test_delete_with_messages(node, bob, eve):
    bob_id = node.add_contact(bob.card).id
    eve_id = node.add_contact(eve.card).id
    node.send(bob_id, "to bob")
    node.send(eve_id, "to eve")
    node.delete_contact(bob_id, with_messages=True)
    with pytest.raises(yaok.NotFound):
        node.history(bob_id)
    assert [m.text for m in node.history(eve_id).messages] == ["to eve"]
    assert [c.name for c in node.contacts()] == ["Eve"]


# ---- messages

def test_send_queues_a_pending_message(node, bob):
    bob_id = node.add_contact(bob.card).id
    message = node.send(bob_id, "hello é")
    assert message.text == "hello é" and message.outgoing and message.direction == "outgoing"
    assert message.status == "pending" and message.conversation_id == bob_id
    assert message.status is yaok.MessageStatus.PENDING and message.direction is yaok.MessageDirection.OUTGOING
    assert len(message.message_id) == 16 and message.message_id_hex == message.message_id.hex()
    assert message.sent_ms is None and message.received_ms is None and message.unread is False
    assert node.message(message.message_id) == message == node.message(message.message_id_hex)
    raw = node.send(bob_id, b"raw utf-8 \xc3\xa9")
    assert raw.text == "raw utf-8 é"
    outbox = node.outbox()
    assert [e.message_id for e in outbox] == [message.message_id, raw.message_id]
    assert outbox[0].note == "Will send when connected" and outbox[0].contact_id == bob_id
    assert node.retry(message.message_id).status is yaok.MessageStatus.PENDING
    with pytest.raises(yaok.NotFound):
        node.message(bytes(16))


def test_statuses_and_directions_are_enums_that_stay_readable_text():
    assert [s.value for s in yaok.MessageStatus] == ["pending", "sending", "sent", "delivered", "failed"]
    assert [d.value for d in yaok.MessageDirection] == ["outgoing", "incoming"]
    assert [c.value for c in yaok.ConnectionState] == ["online", "last_seen", "never_connected"]
    for enum_type in (yaok.MessageStatus, yaok.MessageDirection, yaok.ConnectionState):
        for member in enum_type:
            assert isinstance(member, str) and member == member.value
            assert str(member) == f"{member}" == member.value
            assert enum_type(member.value) is member
    assert json.dumps({"status": yaok.MessageStatus.SENT, "direction": yaok.MessageDirection.INCOMING,
                       "state": yaok.ConnectionState.ONLINE}) == \
        '{"status": "sent", "direction": "incoming", "state": "online"}'
    assert [s.code for s in yaok.MessageStatus] == [0, 1, 2, 3, 4]


def test_message_arguments(node, bob):
    bob_id = node.add_contact(bob.card).id
    with pytest.raises(yaok.EmptyMessage):
        node.send(bob_id, "")
    with pytest.raises(yaok.MessageTooLarge):
        node.send(bob_id, "x" * 10241)
    sent = node.send(bob_id, "x" * 10240)
    assert sent.repaired is False and node.message(sent.message_id).repaired is False
    with pytest.raises(yaok.InvalidUTF8):
        node.send(bob_id, b"\xff")
    with pytest.raises(yaok.InvalidUTF8):
        node.send(bob_id, "lone \udcff")
    # The C functions read exactly 16 bytes of a message ID: other lengths never get there.
    for bad in (b"short", bytes(17), "abcd", "zz" * 16):
        with pytest.raises(yaok.InvalidArgument, match="message_id"):
            node.message(bad)
        with pytest.raises(yaok.InvalidArgument, match="message_id"):
            node.retry(bad)
    with pytest.raises(TypeError):
        node.send(bob_id, 42)
    with pytest.raises(yaok.NotFound):
        node.send(9999, "nobody")


def test_history_pagination_order(node, bob):
    bob_id = node.add_contact(bob.card).id
    for i in range(1, 11):
        node.send(bob_id, f"out{i}")
    newest = node.history(bob_id, limit=3)
    assert [m.text for m in newest.messages] == ["out8", "out9", "out10"]
    assert newest.has_older

    pages = [newest]
    while pages[-1].older_cursor is not None:
        pages.append(node.history(bob_id, before=pages[-1].older_cursor, limit=3))
        assert len(pages) < 10
    assert [len(p.messages) for p in pages] == [3, 3, 3, 1]
    assert not pages[-1].has_older
    everything = [m.text for p in reversed(pages) for m in p.messages]
    assert everything == [f"out{i}" for i in range(1, 11)]
    for page in pages:
        stamps = [m.sender_timestamp_ms for m in page.messages]
        assert stamps == sorted(stamps)

    assert [m.text for m in node.history(bob_id, limit=1000).messages] == everything
    assert node.history(bob_id, limit=1000).older_cursor is None
    with pytest.raises(yaok.InvalidArgument):
        node.history(bob_id, before="bogus")
    for bad in (0, 1001):
        with pytest.raises(yaok.InvalidArgument):
            node.history(bob_id, limit=bad)


def test_empty_history(node, bob):
    bob_id = node.add_contact(bob.card).id
    page = node.history(bob_id)
    assert page == yaok.HistoryPage(messages=[], older_cursor=None)


# ---- security log

def test_security_events(node):
    node.lock()
    with pytest.raises(yaok.WrongPIN):
        node.unlock("000000")
    node.unlock("135790")
    log = node.security_events()
    kinds = [e.kind for e in log]
    assert kinds[0] == "pin_set_up"
    assert kinds[-3:] == ["locked", "wrong_pin", "unlocked"]
    wrong = log[-2]
    assert isinstance(wrong, yaok.SecurityEvent) and wrong.detail == "attempt 1 of 3" and wrong.time_ms > 0
    ids = [e.id for e in log]
    assert ids == sorted(ids)
    # Paging: the newest two, then the ones before them.
    last_two = node.security_events(limit=2)
    assert last_two == log[-2:]
    assert node.security_events(before_id=last_two[0].id, limit=1000) == log[:-2]
    with pytest.raises(yaok.InvalidArgument):
        node.security_events(limit=0)


def test_node_identity_works_with_envelopes(node, bob, bob_card):
    from yaok import envelope
    bob_id = node.add_contact(bob.card).id
    with node.identity() as me, yaok.Card.decode(me.card) as my_card:
        sealed = envelope.seal(me, bob_card, b"hi", incoming_id(3), 5)
        assert envelope.open(bob, [my_card], sealed, incoming_id(3), 5) == (b"hi", 0)
        # And a reply from Bob, opened with the node's identity.
        reply = envelope.seal(bob, my_card, "ça va".encode(), incoming_id(4), 6)
        body, _ = envelope.open(me, [bob_card], reply, incoming_id(4), 6)
    assert body == "ça va".encode()


def test_a_repaired_message_says_so():
    """"repaired" (docs/ABI.md, "message"): a received text that was not UTF-8, stored with
    U+FFFD, up to MAX_RECEIVED_TEXT_BYTES (3 x MAX_MESSAGE_BYTES: one U+FFFD per invalid byte)."""
    data = {"message_id": "00" * 16, "conversation_id": 1, "direction": "incoming", "status": "delivered",
            "text": "\ufffd" * 10240, "sender_timestamp_ms": 1, "created_ms": 2, "sent_ms": None,
            "received_ms": 2, "unread": True, "repaired": True}
    message = yaok.Message.from_json(data)
    assert message.repaired is True
    assert len(message.text.encode()) == yaok.envelope.MAX_RECEIVED_TEXT_BYTES == 3 * yaok.envelope.MAX_MESSAGE_BYTES
