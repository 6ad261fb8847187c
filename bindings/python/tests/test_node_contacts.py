"""yaok.Node: contacts, messages, history pages, the security log."""

from __future__ import annotations

import json

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
    node.set_contact_connection(added.id, "Bluetooth")
    bobby = node.contact(added.id)
    assert bobby.name == "Bobby" and bobby.verified
    assert bobby.connection == yaok.Connection("online", transport="Bluetooth") and bobby.connection.online
    node.set_contact_connection(added.id, None)
    seen = node.contact(added.id).connection
    assert seen.state == "last_seen" and seen.last_seen_ms and seen.transport is None
    assert seen.state is yaok.ConnectionState.LAST_SEEN
    assert bobby.connection.state is yaok.ConnectionState.ONLINE
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
        with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code$"):
            node.preview_contact(text)
        with pytest.raises(yaok.InvalidCard):
            node.add_contact(text)
    with pytest.raises(TypeError):
        node.add_contact(b"yaok:1:")


def test_own_card_is_refused(node):
    with node.identity() as me:
        with pytest.raises(yaok.InvalidArgument):
            node.add_contact(me.card)


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
    node.store_outgoing(bob_id, "first")
    node.store_incoming(bob_id, "reply", incoming_id(1), 1_000)
    node.delete_contact(bob_id)
    assert node.contacts() == []
    with pytest.raises(yaok.NotFound):
        node.contact(bob_id)
    # The conversation stays readable under the same id; it can no longer receive new
    # outgoing messages.
    assert sorted(m.text for m in node.history(bob_id).messages) == ["first", "reply"]
    with pytest.raises(yaok.NotFound):
        node.store_outgoing(bob_id, "more")
    # Adding the person again gives back the same id and conversation.
    assert node.add_contact(bob.card).id == bob_id
    assert len(node.history(bob_id).messages) == 2


def test_delete_with_messages(node, bob, eve):
    bob_id = node.add_contact(bob.card).id
    eve_id = node.add_contact(eve.card).id
    node.store_outgoing(bob_id, "to bob")
    node.store_outgoing(eve_id, "to eve")
    node.delete_contact(bob_id, with_messages=True)
    with pytest.raises(yaok.NotFound):
        node.history(bob_id)
    assert [m.text for m in node.history(eve_id).messages] == ["to eve"]
    assert [c.name for c in node.contacts()] == ["Eve"]


# ---- messages

def test_store_outgoing_and_status(node, bob):
    bob_id = node.add_contact(bob.card).id
    message = node.store_outgoing(bob_id, "hello é")
    assert message.text == "hello é" and message.outgoing and message.direction == "outgoing"
    assert message.status == "pending" and message.conversation_id == bob_id
    assert message.status is yaok.MessageStatus.PENDING and message.direction is yaok.MessageDirection.OUTGOING
    assert len(message.message_id) == 16 and message.message_id_hex == message.message_id.hex()
    assert message.sent_ms is None and message.received_ms is None and message.unread is False

    chosen = bytes(range(16))
    assert node.store_outgoing(bob_id, b"raw utf-8 \xc3\xa9", message_id=chosen).message_id == chosen
    node.set_message_status(chosen, yaok.MessageStatus.SENDING)
    node.set_message_status(chosen.hex(), "sent")
    sent = [m for m in node.history(bob_id).messages if m.message_id == chosen][0]
    assert sent.status == "sent" and sent.sent_ms is not None and sent.text == "raw utf-8 é"
    with pytest.raises(yaok.InvalidArgument):
        node.set_message_status(chosen, 77)
    with pytest.raises(yaok.InvalidArgument):
        node.set_message_status(chosen, "lost")
    with pytest.raises(yaok.NotFound):
        node.set_message_status(bytes(16), yaok.MessageStatus.SENT)


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


def test_message_status_by_enum_name_or_code(node, bob):
    bob_id = node.add_contact(bob.card).id
    mid = node.store_outgoing(bob_id, "hi").message_id
    for status, expected in ((yaok.MessageStatus.SENDING, "sending"), ("SENT", "sent"), ("Failed", "failed"),
                             (3, "delivered")):
        node.set_message_status(mid, status)
        assert node.history(bob_id).messages[-1].status is yaok.MessageStatus(expected)
    for bad in (2.0, None, b"sent", True):
        with pytest.raises(TypeError):
            node.set_message_status(mid, bad)


def test_message_arguments(node, bob):
    bob_id = node.add_contact(bob.card).id
    with pytest.raises(yaok.EmptyMessage):
        node.store_outgoing(bob_id, "")
    with pytest.raises(yaok.MessageTooLarge):
        node.store_outgoing(bob_id, "x" * 10241)
    node.store_outgoing(bob_id, "x" * 10240)
    with pytest.raises(yaok.InvalidUTF8):
        node.store_outgoing(bob_id, b"\xff")
    with pytest.raises(yaok.InvalidUTF8):
        node.store_outgoing(bob_id, "lone \udcff")
    # The C functions read exactly 16 bytes of a message ID: other lengths never get there.
    for bad in (b"short", bytes(17), "abcd", "zz" * 16):
        with pytest.raises(yaok.InvalidArgument, match="message_id"):
            node.store_outgoing(bob_id, "hi", message_id=bad)
        with pytest.raises(yaok.InvalidArgument, match="message_id"):
            node.store_incoming(bob_id, "hi", bad, 1)
    with pytest.raises(TypeError):
        node.store_outgoing(bob_id, 42)
    with pytest.raises(yaok.NotFound):
        node.store_outgoing(9999, "nobody")
    with pytest.raises(yaok.NotFound):
        node.store_incoming(9999, "nobody", incoming_id(1), 1)


def test_store_incoming_duplicates_and_mark_read(node, bob):
    bob_id = node.add_contact(bob.card).id
    stored = node.store_incoming(bob_id, "in1", incoming_id(1), 1_000)
    message, duplicate = stored
    assert not duplicate and message.direction == "incoming" and message.unread
    assert message.status == "delivered" and message.received_ms is not None
    assert message.status is yaok.MessageStatus.DELIVERED and message.direction is yaok.MessageDirection.INCOMING
    assert message.sender_timestamp_ms == 1_000
    again = node.store_incoming(bob_id, "changed", incoming_id(1), 2_000)
    assert again.duplicate and again.message.text == "in1"
    node.store_incoming(bob_id, "in2", incoming_id(2), 2_000)
    assert node.mark_read(bob_id) == 2
    assert node.mark_read(bob_id) == 0
    assert not any(m.unread for m in node.history(bob_id).messages)


def test_history_pagination_order(node, bob):
    bob_id = node.add_contact(bob.card).id
    # Arriving out of order; ordered by the sender's timestamp.
    for i in (7, 3, 9, 1, 5, 10, 2, 8, 6, 4):
        node.store_incoming(bob_id, f"in{i}", incoming_id(i), 1_000 * i)
    newest = node.history(bob_id, limit=3)
    assert [m.text for m in newest.messages] == ["in8", "in9", "in10"]
    assert newest.has_older

    pages = [newest]
    while pages[-1].older_cursor is not None:
        pages.append(node.history(bob_id, before=pages[-1].older_cursor, limit=3))
        assert len(pages) < 10
    assert [len(p.messages) for p in pages] == [3, 3, 3, 1]
    assert not pages[-1].has_older
    everything = [m.text for p in reversed(pages) for m in p.messages]
    assert everything == [f"in{i}" for i in range(1, 11)]
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
        # And a reply from Bob, opened with the node's identity and stored.
        reply = envelope.seal(bob, my_card, "ça va".encode(), incoming_id(4), 6)
        body, _ = envelope.open(me, [bob_card], reply, incoming_id(4), 6)
    assert node.store_incoming(bob_id, body, incoming_id(4), 6).message.text == "ça va"
