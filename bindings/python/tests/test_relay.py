"""The relay transport from Python: two nodes and a real `yaok-relay` on 127.0.0.1."""

import os
import re
import subprocess
import threading
import time

import pytest
import yaok

from conftest import PIN, REPO


def wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def relay_binary() -> str:
    """The yaok-relay the Swift build made (scripts/test builds it before the Python stage)."""
    bin_dir = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout.strip()
    path = os.path.join(bin_dir, "yaok-relay")
    if not os.path.exists(path):
        subprocess.run(["swift", "build", "--product", "yaok-relay"], cwd=REPO, check=True)
    return path


@pytest.fixture
def relay(tmp_path):
    proc = subprocess.Popen([relay_binary(), "--listen", "127.0.0.1:0", "--data", str(tmp_path / "relay"),
                             "--self-signed"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found = {}

    def read():
        for line in proc.stdout:
            m = re.match(r"(pin|listening): (\S+)$", line.strip())
            if m:
                found[m.group(1)] = m.group(2)
    threading.Thread(target=read, daemon=True).start()
    wait(lambda: "pin" in found and "listening" in found, timeout=30)
    yield found["listening"], found["pin"]
    proc.terminate()
    proc.wait(timeout=10)


def test_two_nodes_talk_through_a_relay(tmp_path, relay):
    address, pin = relay
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.profile().card).id
        alice_id = bob.add_contact(alice.profile().card).id
        alice.add_relay(address, pin_hex=pin)
        alice.set_transport_enabled("relay", True)

        def relay_status(node):
            return [t for t in node.diagnostics()["transports"] if t["name"] == "relay"][0]["details"]["status"]
        wait(lambda: relay_status(alice) == "Connected")
        message = alice.send(bob_id, "Hello through the relay")
        wait(lambda: alice.message(message.message_id).status == yaok.MessageStatus.SENT)  # stored, Bob offline

        bob.add_relay(address, pin_hex=pin)
        bob.set_transport_enabled("relay", True)
        wait(lambda: alice.message(message.message_id).status == yaok.MessageStatus.DELIVERED)
        assert [m.text for m in bob.history(alice_id).messages] == ["Hello through the relay"]


def test_a_wrong_pin_is_refused(tmp_path, relay):
    address, _ = relay
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice:
        alice.setup("Alice", PIN, PIN)
        alice.add_relay(address, pin_hex="ab" * 32)
        alice.set_transport_enabled("relay", True)

        def error():
            return [t for t in alice.diagnostics()["transports"] if t["name"] == "relay"][0]["details"]["error"]
        wait(lambda: error() is not None)
        assert "does not match the pinned key" in error()
        wait(lambda: any(e.kind == "tls_failure" for e in alice.security_events()))


def test_relay_arguments_are_checked(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as node:
        node.setup("Alice", PIN, PIN)
        with pytest.raises(ValueError):
            node.add_relay("127.0.0.1:7443")  # neither pin nor CA
        with pytest.raises(ValueError):
            node.add_relay("127.0.0.1:7443", pin_hex="00" * 32, ca_file="/etc/ssl/ca.pem")
        with pytest.raises(yaok.InvalidArgument, match="64 hex digits"):
            node.add_relay("127.0.0.1:7443", pin_hex="00")
        with pytest.raises(yaok.InvalidArgument, match="HOST:PORT"):
            node.add_relay("no-port", pin_hex="00" * 32)
        node.add_relay("127.0.0.1:7443", pin_hex="00" * 32)
        with pytest.raises(yaok.InvalidArgument, match="already registered"):
            node.add_relay("127.0.0.1:7443", pin_hex="00" * 32)
