"""The embedder's common path (issue 21): the node's state without an unlock attempt, one's
own card without the secret keys, a received message read by its ID, open links, stream
links over a real socketpair (raw chunks, any split), link events, and HandleClosed caught
as a YaOKError."""

import socket
import threading
import time

import pytest

import yaok
from yaok import EventKind, LinkPeer, LinkRole

from conftest import PIN


def wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_state_tells_a_first_run_without_an_unlock_attempt(tmp_path):
    with yaok.Node.open(tmp_path / "n", test_fast_kdf=True) as node:
        state = node.state()
        assert not state.initialized and state.locked
        assert state.contacts is None and state.messages_waiting is None
        assert state.failed_attempts == 0 and state.transports == 0 and state.links_open == 0
        with pytest.raises(yaok.Locked):
            node.card()
        node.setup("Carol", PIN, PIN)
        state = node.state()
        assert state.initialized and not state.locked
        assert (state.contacts, state.contacts_online, state.messages_waiting) == (0, 0, 0)
        node.add_lan("127.0.0.1", 0, discovery=False)
        assert node.state().transports == 1 and node.state().transports_running == 0


def test_own_card_is_public_and_adds_as_a_contact(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        with alice.card() as card:
            assert isinstance(card, yaok.Card)
            assert card.name == "Alice" and card.text.startswith("yaok:2:")  # with a prekey (PROTOCOL.md §13.4)
            assert card.fingerprint == alice.profile().fingerprint
            assert bob.add_contact(card.text).name == "Alice"


class StreamEnd:
    """One side of a socketpair carrying a stream link: a reader thread feeds the link what
    the socket gives, 5 bytes at a time."""

    def __init__(self, sock):
        self.sock = sock
        self.link = None
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self.read, daemon=True)

    def send(self, frame):
        self.sock.sendall(frame)

    def read(self):
        self.ready.wait()
        while True:
            try:
                chunk = self.sock.recv(5)
            except OSError:
                return
            if not chunk:
                return
            try:
                self.link.receive(chunk)
            except yaok.YaOKError:
                return


def test_two_nodes_over_a_socketpair_with_stream_links(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.profile().card).id
        alice_id = bob.add_contact(alice.profile().card).id
        a_events, b_events = [], []
        alice.set_event_callback(lambda kind, data: a_events.append((kind, data)))
        bob.set_event_callback(lambda kind, data: b_events.append((kind, data)))
        sent = alice.send(bob_id, "Hello over a socket")
        assert alice.state().messages_waiting == 1

        sa, sb = socket.socketpair()
        ea, eb = StreamEnd(sa), StreamEnd(sb)
        eb.link = bob.open_link("sock", LinkRole.RESPONDER, 0, eb.send, stream=True)
        ea.link = alice.open_link("sock", LinkRole.INITIATOR, 0, ea.send, stream=True)
        for end in (ea, eb):
            end.ready.set()
            end.thread.start()

        wait(lambda: any(k == EventKind.MESSAGE_RECEIVED for k, _ in b_events))
        data = next(d for k, d in b_events if k == EventKind.MESSAGE_RECEIVED)
        # A received message, by its ID (yaok_message_lookup): not "No such outgoing message".
        received = bob.message(data["message_id"], contact_id=alice_id)
        assert received.text == "Hello over a socket" and received.message_id == sent.message_id
        assert received.direction is yaok.MessageDirection.INCOMING and received.unread
        with pytest.raises(yaok.NotFound, match="contact_id="):
            bob.message(data["message_id"])  # without the conversation: outgoing only, and it says so

        wait(lambda: alice.message(sent.message_id).status is yaok.MessageStatus.DELIVERED)
        links = alice.open_links()
        assert len(links) == 1
        info = links[0]
        assert info.link_id == ea.link.id and info.transport == "sock" and info.authenticated
        assert info.peer is LinkPeer.CONTACT and info.contact_id == bob_id
        state = alice.state()
        assert (state.links_open, state.contacts_online, state.messages_waiting) == (1, 1, 0)

        opened = [d for k, d in a_events if k == EventKind.LINK_OPENED]
        authenticated = [d for k, d in a_events if k == EventKind.LINK_AUTHENTICATED]
        assert opened == [{"link_id": ea.link.id, "transport": "sock"}]
        assert authenticated[0] == {"link_id": ea.link.id, "transport": "sock", "peer": "contact",
                                    "contact_id": bob_id}

        link_id = ea.link.id
        ea.link.close()
        wait(lambda: any(k == EventKind.LINK_CLOSED for k, _ in a_events))
        closed = next(d for k, d in a_events if k == EventKind.LINK_CLOSED)
        assert closed["link_id"] == link_id and "application" in closed["reason"]
        eb.link.close()
        sa.close()
        sb.close()


def test_a_broken_stream_closes_the_link_and_says_so(tmp_path):
    with yaok.Node.open(tmp_path / "n", test_fast_kdf=True) as node:
        node.setup("Carol", PIN, PIN)
        reasons = []
        link = node.open_link("sock", LinkRole.RESPONDER, 0, lambda frame: None, reasons.append, stream=True)
        with pytest.raises(yaok.FrameTooLarge):
            link.receive(b"\xff\xff\x01")
        wait(lambda: reasons)
        assert "Stream framing broken" in reasons[0]
        with pytest.raises(yaok.Closed, match="link"):
            link.receive(b"\x00")
        link.close()


def test_handle_closed_is_a_yaok_error(tmp_path):
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    node.close()
    with pytest.raises(yaok.YaOKError) as info:
        node.status()
    assert isinstance(info.value, yaok.HandleClosed) and isinstance(info.value, ValueError)
    assert info.value.status == -1 and "closed" in str(info.value)


def test_a_bad_card_says_which_defect(alice):
    text = alice.card
    i = len(text) - 5
    altered = text[:i] + ("B" if text[i] == "A" else "A") + text[i + 1:]
    with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code: bad signature"):
        yaok.Card.decode(altered)
    with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code: unsupported card version 3"):
        yaok.Card.decode("yaok:3:" + text[7:])
    with pytest.raises(yaok.InvalidCard, match="^Invalid Ya OK QR code: not a Ya OK card"):
        yaok.Card.decode("https://example.com/menu")


def test_a_link_peer_code_from_a_later_library_is_kept_as_a_number() -> None:
    """A ``YAOK_LINK_PEER_*`` value this binding does not know (a later library's) reads as
    its number, as event kinds do: listing the links must not raise ValueError."""
    from yaok.links import LinkPeer, _peer_kind
    assert _peer_kind(2) is LinkPeer.STRANGER
    assert _peer_kind(7) == 7 and not isinstance(_peer_kind(7), LinkPeer)
