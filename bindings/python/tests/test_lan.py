"""The LAN transport from Python: two nodes on 127.0.0.1 (static peers, no multicast)."""

import socket
import time

import yaok

from conftest import PIN


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_two_nodes_talk_over_the_lan(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.profile().card).id
        alice_id = bob.add_contact(alice.profile().card).id
        assert "No transports enabled" in alice.diagnostics()["warnings"]

        port = free_port()
        bob.add_lan(listen="127.0.0.1", port=port, discovery=False)
        alice.add_lan(listen="127.0.0.1", discovery=False, peers=[f"127.0.0.1:{port}"])
        bob.set_transport_enabled("lan", True)
        alice.set_transport_enabled("lan", True)
        assert alice.diagnostics()["warnings"] == []

        message = alice.send(bob_id, "Hello over the LAN")
        wait(lambda: alice.message(message.message_id).status == yaok.MessageStatus.DELIVERED)
        assert [m.text for m in bob.history(alice_id).messages] == ["Hello over the LAN"]
        wait(lambda: alice.contact(bob_id).connection.transport == "WiFi")

        alice.set_transport_enabled("lan", False)
        lan = [t for t in alice.diagnostics()["transports"] if t["name"] == "lan"][0]
        assert lan["state"] == "disabled"


def test_lan_twice_and_bad_arguments(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as node:
        node.setup("Alice", PIN, PIN)
        node.add_lan(listen="127.0.0.1", discovery=False)
        try:
            node.add_lan(listen="127.0.0.1", discovery=False)
        except yaok.InvalidArgument as e:
            assert "already registered" in str(e)
        else:
            raise AssertionError("a second LAN transport was accepted")
        try:
            node.add_lan(peers="127.0.0.1:1")  # type: ignore[arg-type]
        except TypeError:
            pass
        else:
            raise AssertionError("a str was accepted as a list of peers")


def test_enabling_a_running_transport_changes_nothing(node):
    """set_transport_enabled(name, True) on a running transport is a no-op (its docstring;
    TransportStartTests in Swift): the LAN is not started again, so it keeps the port it
    bound (port 0: a restart would bind another) and says "running" once."""
    changes = []
    node.set_event_callback(lambda kind, data: changes.append(data)
                            if kind == yaok.EventKind.TRANSPORT_CHANGED and data["name"] == "lan" else None)

    def listening():
        return [t for t in node.diagnostics()["transports"] if t["name"] == "lan"][0]["details"]["listening"]

    node.add_lan(listen="127.0.0.1", discovery=False)
    node.set_transport_enabled("lan", True)
    first = listening()
    assert first is not None and first["port"] != 0
    node.set_transport_enabled("lan", True)
    assert listening() == first
    # Events come in order: once the stop is heard, a second start would have been too.
    node.set_transport_enabled("lan", False)
    wait(lambda: any(c["state"] == "disabled" for c in changes))
    assert [c["state"] for c in changes].count("running") == 1
