"""Transport connection state and "Internet: Available/Unavailable" (issue 21 §3) from Python,
against a real `yaok-relay` on 127.0.0.1: a wrong pin is disconnected (pin mismatch), not
"running"; a relay killed is disconnected with a next retry, and connected again once it is
back; each change arrives as an event."""

import re
import subprocess
import threading
import time

import yaok
from yaok import Connectivity, DisconnectReason, EventKind

from conftest import PIN
from test_relay import relay_binary, wait


class Relay:
    """A yaok-relay that can be killed and started again on the same port and key."""

    def __init__(self, data, listen="127.0.0.1:0"):
        self.data = data
        self.proc = subprocess.Popen([relay_binary(), "--listen", listen, "--data", str(data), "--self-signed"],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        found = {}

        def read():
            for line in self.proc.stdout:
                m = re.match(r"(pin|listening): (\S+)$", line.strip())
                if m:
                    found[m.group(1)] = m.group(2)
        threading.Thread(target=read, daemon=True).start()
        wait(lambda: "pin" in found and "listening" in found, timeout=30)
        self.address, self.pin = found["listening"], found["pin"]

    def kill(self):
        self.proc.kill()
        self.proc.wait(timeout=10)


class Events:
    def __init__(self):
        self.lock = threading.Lock()
        self.seen = []

    def __call__(self, kind, data):
        with self.lock:
            self.seen.append((kind, data))

    def of(self, kind, **match):
        with self.lock:
            return [d for k, d in self.seen if k == kind and all(d.get(f) == v for f, v in match.items())]


def relay_connection(node):
    return next(c for c in node.transport_connections() if c.name == "relay")


def test_a_wrong_pin_is_disconnected_with_the_reason_not_running(tmp_path):
    relay = Relay(tmp_path / "relay")
    try:
        with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice:
            events = Events()
            alice.set_event_callback(events)
            alice.setup("Alice", PIN, PIN)
            alice.add_relay(relay.address, pin_hex="ab" * 32)
            alice.set_transport_enabled("relay", True)
            wait(lambda: relay_connection(alice).state == Connectivity.DISCONNECTED)
            c = relay_connection(alice)
            assert c.reason == DisconnectReason.PIN_MISMATCH and c.reason_code == 3
            assert "does not match the pinned key" in (c.detail or "")
            assert c.next_retry_ms is not None and c.next_retry_ms > time.time() * 1000 - 1000
            d = [t for t in alice.diagnostics()["transports"] if t["name"] == "relay"][0]
            assert d["connection"]["reason"] == "pin_mismatch"
            wait(lambda: events.of(EventKind.TRANSPORT_CONNECTION, name="relay", reason="pin_mismatch"))
            # A server answered (and was refused): the network works.
            assert alice.internet().available and alice.internet().line == "Internet: Available"
    finally:
        relay.kill()


def test_a_relay_killed_is_disconnected_and_connects_again_when_back(tmp_path):
    relay = Relay(tmp_path / "relay")
    try:
        with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
                yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
            events = Events()
            alice.set_event_callback(events)
            alice.setup("Alice", PIN, PIN)
            bob.setup("Bob", PIN, PIN)
            alice.add_contact(bob.profile().card)  # a relay with no contact idles
            alice.add_relay(relay.address, pin_hex=relay.pin)
            alice.set_transport_enabled("relay", True)
            wait(lambda: relay_connection(alice).state == Connectivity.CONNECTED)
            assert alice.internet().available
            wait(lambda: events.of(EventKind.TRANSPORT_CONNECTION, name="relay", state="connected"))

            relay.kill()
            wait(lambda: relay_connection(alice).reason == DisconnectReason.REFUSED, timeout=30)
            c = relay_connection(alice)
            assert c.state == Connectivity.DISCONNECTED and c.next_retry_ms is not None
            assert events.of(EventKind.TRANSPORT_CONNECTION, name="relay", state="disconnected")
            wait(lambda: not alice.internet().available)
            assert alice.internet().line == "Internet: Unavailable"
            wait(lambda: events.of(EventKind.INTERNET_CHANGED, available=False))

            relay = Relay(tmp_path / "relay", listen=relay.address)
            wait(lambda: relay_connection(alice).state == Connectivity.CONNECTED, timeout=90)
            wait(lambda: events.of(EventKind.INTERNET_CHANGED, available=True))
            assert alice.internet().available
    finally:
        relay.kill()


def test_lan_is_connected_while_it_runs_and_disconnected_when_off(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice:
        alice.setup("Alice", PIN, PIN)
        alice.add_lan(listen="127.0.0.1", port=0, discovery=False)
        lan = next(c for c in alice.transport_connections() if c.name == "lan")
        assert lan.state == Connectivity.DISCONNECTED and lan.reason == DisconnectReason.DISABLED
        alice.set_transport_enabled("lan", True)
        lan = next(c for c in alice.transport_connections() if c.name == "lan")
        assert lan.state == Connectivity.CONNECTED and lan.reason is None


def test_a_state_from_a_later_library_is_not_shown_as_connected(node, monkeypatch):
    # A library newer than the binding answers YAOK_CONNECTIVITY_* 3 (a state this binding
    # cannot name). Before: the number was clamped to 2, so it read as CONNECTED.
    import yaok.connectivity as connectivity

    def later_library(handle, index, state, reason, retry, detail):
        state._obj.value, reason._obj.value, retry._obj.value, detail._obj.value = 3, 0, 0, None
        return 0
    monkeypatch.setattr(connectivity, "_transport_connection", later_library)
    node.add_lan(listen="127.0.0.1", port=0, discovery=False)
    lan = next(c for c in node.transport_connections() if c.name == "lan")
    assert lan.state == Connectivity.DISCONNECTED


def test_disconnect_reasons_have_the_headers_numbers():
    # The binding reads a reason number as the enum's position (1 = the first): each member
    # must stand where the header numbers it, NO_NETWORK (the LAN with no network) included.
    from pathlib import Path

    header = (Path(__file__).resolve().parents[3] / "include" / "yaok.h").read_text()
    numbers = {m.group(1): int(m.group(2))
               for m in re.finditer(r"^#define YAOK_DISCONNECT_(\w+) (\d+)u", header, re.M)}
    del numbers["NONE"]
    assert {r.name: i + 1 for i, r in enumerate(DisconnectReason)} == numbers
    assert DisconnectReason.NO_NETWORK.value == "no_network" and numbers["NO_NETWORK"] == 17


_NO_NETWORK_SCRIPT = """
import sys, tempfile, yaok
with tempfile.TemporaryDirectory() as d, yaok.Node.open(d + "/a", test_fast_kdf=True) as n:
    n.setup("Alice", sys.argv[1], sys.argv[1])
    n.add_lan(listen="0.0.0.0", port=0, discovery=False)
    n.set_transport_enabled("lan", True)
    lan = next(c for c in n.transport_connections() if c.name == "lan")
    print(lan.state.value, lan.reason.value if lan.reason else None, lan.detail)
"""


def test_lan_in_a_network_namespace_without_interfaces_has_no_network():
    # A fresh network namespace (unshare -n) has only its loopback, down: the LAN transport
    # reads the real interfaces (getifaddrs) and says "no network", not "connected".
    # Nothing leaves the namespace. Skipped where namespaces cannot be made.
    import os
    import shutil
    import sys

    import pytest

    unshare = shutil.which("unshare")
    if not unshare or subprocess.run([unshare, "-n", "true"], capture_output=True).returncode != 0:
        pytest.skip("cannot create a network namespace (unshare -n)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run([unshare, "-n", sys.executable, "-c", _NO_NETWORK_SCRIPT, PIN], env=env,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "disconnected no_network No network: no IPv4 interface is up (other than loopback)"


def test_the_readme_names_every_state_and_reason():
    # What an app can be given must be in the binding's README (issue 21 §6: docs an app
    # need not guess from): each Connectivity state and DisconnectReason by its name, in
    # backquotes. It named five reasons and "…", and said the LAN and BLE report none,
    # after both had reasons of their own (NO_NETWORK, RADIO_OFF, and BLE's CONNECTING).
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    named = set(re.findall(r"`(?:DisconnectReason\.|Connectivity\.)?([A-Z_]+)`", readme))
    missing = [m.name for m in [*Connectivity, *DisconnectReason] if m.name not in named]
    assert not missing, f"bindings/python/README.md does not name {missing}"
