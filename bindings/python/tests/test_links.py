"""Two nodes joined in memory through Node.open_link: each link's send callback hands the
unit to the other link, as an app's own radio would."""

import threading
import time

import pytest

import yaok
from yaok import EventKind, LinkRole

from conftest import PIN


def wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


class PipeEnd:
    """Units for a link that may not exist yet."""

    def __init__(self):
        self.lock = threading.Lock()
        self.target = None
        self.waiting = []

    def send(self, unit):
        with self.lock:
            if self.target is None:
                self.waiting.append(unit)
            else:
                self.target.receive(unit)

    def connect(self, link):
        with self.lock:
            self.target = link
            for unit in self.waiting:
                link.receive(unit)
            self.waiting = []


def test_two_nodes_deliver_over_a_memory_link(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.profile().card).id
        alice_id = bob.add_contact(alice.profile().card).id
        received = []
        bob.set_event_callback(lambda kind, data: received.append((kind, data)))

        message = alice.send(bob_id, "Hello over a link")
        assert alice.outbox()[0].note == "Will send when connected"

        to_bob, to_alice = PipeEnd(), PipeEnd()
        closed = []
        b_link = bob.open_link("memory", LinkRole.RESPONDER, 64, to_alice.send)
        a_link = alice.open_link("memory", LinkRole.INITIATOR, 64, to_bob.send, closed=closed.append)
        to_alice.connect(a_link)
        to_bob.connect(b_link)

        wait(lambda: alice.message(message.message_id).status is yaok.MessageStatus.DELIVERED)
        assert alice.outbox() == []
        texts = [m.text for m in bob.history(alice_id).messages]
        assert texts == ["Hello over a link"]
        wait(lambda: any(k == EventKind.MESSAGE_RECEIVED for k, _ in received))
        data = [d for k, d in received if k == EventKind.MESSAGE_RECEIVED][0]
        assert data == {"contact_id": alice_id, "message_id": message.message_id_hex}
        assert bob.mark_read(alice_id) == 1
        assert alice.contact(bob_id).connection == yaok.Connection("online", transport="memory")
        assert a_link.peer() == (True, True) and b_link.peer() == (True, True)
        diagnostics = alice.diagnostics()
        assert [link["transport"] for link in diagnostics["links"]] == ["memory"]
        with pytest.raises(yaok.NotFound, match="No transport named lan"):
            alice.set_transport_enabled("lan", True)

        with to_alice.lock, to_bob.lock:
            to_alice.target = to_bob.target = None
        a_link.close()
        b_link.close()
        a_link.close()  # safe twice
        assert a_link.freed.wait(5) and b_link.freed.wait(5)
        assert closed == []
        with pytest.raises(yaok.HandleClosed):
            a_link.receive(b"x")


def test_link_misuse(node):
    with pytest.raises(yaok.InvalidArgument):
        node.open_link("memory", LinkRole.INITIATOR, 19, lambda unit: None)
    with pytest.raises(yaok.InvalidArgument):
        node.open_link("memory", 7, 100, lambda unit: None)
    with pytest.raises(TypeError):
        node.open_link("memory", LinkRole.INITIATOR, 100, None)
    closed = []
    link = node.open_link("junk", LinkRole.RESPONDER, 65535, lambda unit: None, closed=closed.append)
    link.receive(b"Z" * 64)
    wait(lambda: closed)
    with pytest.raises(yaok.Closed):
        link.receive(b"Z")
    assert link.freed.wait(5)
    link.close()
