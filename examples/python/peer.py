"""A Ya OK peer in Python (the `yaok` binding): the same program as examples/c/peer.c, with
the same options, commands and output, so the two talk to each other (and to
examples/swift).

It creates or opens an identity in a data directory, prints its contact card, adds the card
of the person to talk to, then sends what you type and prints what arrives (through the
node's event callback) with each message's status as it changes, via a relay or the LAN.

    scripts/build-lib
    YAOK_PIN=246810 PYTHONPATH=bindings/python python3 examples/python/peer.py \\
        --data /tmp/bob --name Bob --relay 127.0.0.1:7443 --relay-pin <64 hex> --add alice.card

Lines typed on stdin are messages to the current contact; lines starting with "/" are
commands (/help). /wait received N [S] and /wait delivered N [S] block until that many
messages arrived / were delivered (exit status 3 after S seconds, default 60), which makes
it scriptable.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from typing import Any, Dict, Optional, Union

import yaok
from yaok import EventKind

lock = threading.Condition()
counts = {"received": 0, "delivered": 0}


def say(line: str) -> None:
    with lock:
        print(line, flush=True)


class Peer:
    def __init__(self, node: yaok.Node) -> None:
        self.node = node
        self.current: Optional[yaok.Contact] = None

    # ---- events: on the node's event thread ----

    def on_event(self, kind: Union[EventKind, int], data: Dict[str, Any]) -> None:
        if kind == EventKind.MESSAGE_RECEIVED:
            contact_id, message_id = int(data["contact_id"]), bytes.fromhex(data["message_id"])
            # The event never carries the text: find the message in the conversation.
            page = self.node.history(contact_id, limit=50)
            message = next((m for m in page.messages if m.message_id == message_id), None)
            try:
                name = self.node.contact(contact_id).name
            except yaok.NotFound:
                name = "someone"
            if message is not None:
                say(f"{name} -> you: {message.text}")
            with lock:
                counts["received"] += 1
                lock.notify_all()
        elif kind == EventKind.MESSAGE_STATUS_CHANGED:
            say(f"{data['message_id'][:8]}: {data['status']}")
            if data["status"] == "delivered":
                with lock:
                    counts["delivered"] += 1
                    lock.notify_all()
        elif kind == EventKind.TRANSPORT_CHANGED:
            error = f" ({data['error']})" if data.get("error") else ""
            say(f"transport {data['name']}: {data['state']}{error}")
        elif kind == EventKind.TRANSPORT_NOTICE:
            say(f"transport {data['transport']}: {data['message']}")
        elif kind == EventKind.LOCKED:
            say(f"locked ({data['reason']})")

    # ---- contacts and sending ----

    def add_card(self, text: str) -> None:
        try:
            contact = self.node.add_contact(text)
        except yaok.ContactExists:
            with yaok.Card.decode(text) as card:
                fingerprint = card.fingerprint
            contact = next(c for c in self.node.contacts() if c.fingerprint == fingerprint)
        with yaok.Card.decode(text) as card:
            grouped = card.fingerprint_grouped
        say(f"contact: {contact.name} (fingerprint {grouped})")
        self.current = contact

    def switch_to(self, name: str) -> None:
        match = next((c for c in self.node.contacts() if c.name.lower() == name.lower()), None)
        if match is None:
            say(f"no contact named {name}")
        else:
            self.current = match
            say(f"talking to {match.name}")

    def send(self, text: str) -> None:
        if self.current is None:
            say("no contact yet: add one with /add CARD (or --add)")
            return
        try:
            message = self.node.send(self.current.id, text)
        except yaok.YaOKError as e:
            say(f"not sent: {e}")
            return
        say(f"you -> {self.current.name}: {text} ({message.message_id_hex[:8]}: {message.status.value})")

    def show_transports(self) -> None:
        transports = self.node.diagnostics()["transports"]
        if not transports:
            say("no transports: start with --relay or --lan")
        for t in transports:
            line = (t.get("details") or {}).get("status") or t.get("error") or t["state"].capitalize()
            say(f"transport {t['name']}: {t['state']}, {t['links']} link(s): {line}")


def card_argument(value: str) -> str:
    if value.startswith("yaok:"):
        return value
    try:
        with open(value, encoding="utf-8") as f:
            return f.readline().strip()
    except OSError as e:
        sys.exit(f"peer: {value} is neither card text (yaok:2:…) nor a readable file: {e.strerror}")


def wait_for(what: str, n: int, seconds: float) -> None:
    if what not in counts:
        say("usage: /wait received|delivered N [SECONDS]")
        return
    with lock:
        if not lock.wait_for(lambda: counts[what] >= n, timeout=seconds):
            print(f"peer: timed out after {seconds:g} s waiting for {n} {what} (have {counts[what]})",
                  file=sys.stderr, flush=True)
            os._exit(3)


HELP = """type a line to send it to the current contact; commands:
  /add CARD|FILE   add a contact from card text or a file holding it
  /to NAME         talk to another contact
  /card            print your card again
  /status          transports and their state
  /wait received N [S], /wait delivered N [S]   block until N (exit 3 after S s)
  /quit            stop (as does end of input)"""


def main() -> int:
    p = argparse.ArgumentParser(description="A Ya OK peer (Python binding). Then type messages (/help).")
    p.add_argument("--data", required=True, help="the data directory (created if needed)")
    p.add_argument("--name", help="your name: needed the first time (it creates the identity)")
    p.add_argument("--pin", default=os.environ.get("YAOK_PIN"), help="PIN or passphrase (default: $YAOK_PIN)")
    p.add_argument("--add", metavar="CARD|FILE", help="the contact to talk to: card text or a file holding it")
    p.add_argument("--card-file", metavar="FILE", help="also write your card to FILE")
    p.add_argument("--relay", metavar="HOST:PORT")
    p.add_argument("--relay-pin", metavar="HEX", help="the relay's certificate pin (yaok-relay prints it)")
    p.add_argument("--lan", action="store_true")
    p.add_argument("--lan-listen", metavar="ADDR")
    p.add_argument("--lan-port", type=int, default=0)
    p.add_argument("--lan-peer", action="append", default=[], metavar="HOST:PORT")
    args = p.parse_args()
    if not args.pin:
        p.error("give a PIN with --pin or $YAOK_PIN")
    if args.relay and not args.relay_pin:
        p.error("--relay needs --relay-pin")
    lan = args.lan or args.lan_listen or args.lan_port or args.lan_peer

    node = yaok.Node.open(args.data)
    peer = Peer(node)
    # Register first: events that happen before a registration are dropped.
    node.set_event_callback(peer.on_event)
    try:
        node.unlock(args.pin)
    except yaok.NotInitialized:
        if not args.name:
            sys.exit(f"peer: {args.data} has no identity yet: give --name to create one")
        node.setup(args.name, args.pin, args.pin)
    except yaok.YaOKError as e:
        sys.exit(f"peer: unlock: {e}")
    node.set_auto_lock(timeout_ms=None)

    profile = node.profile()
    say(f"you are {profile.name}; your card:")
    say(f"card: {profile.card}")
    if args.card_file:
        with open(args.card_file, "w", encoding="utf-8") as f:
            f.write(profile.card + "\n")

    if args.add:
        peer.add_card(card_argument(args.add))
    else:
        contacts = node.contacts()
        if len(contacts) == 1:
            peer.current = contacts[0]

    if args.relay:
        node.add_relay(args.relay, pin_hex=args.relay_pin)
        node.set_transport_enabled("relay", True)
    if lan:
        node.add_lan(listen=args.lan_listen or "0.0.0.0", port=args.lan_port, discovery=not args.lan_peer,
                     peers=args.lan_peer)
        node.set_transport_enabled("lan", True)
    if not args.relay and not lan:
        say("no transport: messages wait until you restart with --relay or --lan")
    if peer.current is not None:
        say(f"talking to {peer.current.name}: type a message and press Enter (/help for commands)")
    elif node.contacts():
        names = ", ".join(c.name for c in node.contacts())
        say(f"choose who to talk to with /to NAME ({names}; /help for commands)")
    else:
        say("add a contact with /add CARD (/help for commands)")

    for raw in sys.stdin:
        line = raw.rstrip("\r\n")
        if not line:
            continue
        if not line.startswith("/"):
            peer.send(line)
        elif line == "/quit":
            break
        elif line == "/help":
            say(HELP)
        elif line == "/status":
            peer.show_transports()
        elif line.startswith("/add "):
            peer.add_card(card_argument(line[5:]))
        elif line.startswith("/to "):
            peer.switch_to(line[4:])
        elif line == "/card":
            say(f"card: {node.profile().card}")
        elif line.startswith("/wait ") and len(line.split()) in (3, 4) and all(x.isdigit() for x in line.split()[2:]):
            parts = line.split()
            wait_for(parts[1], int(parts[2]), float(parts[3]) if len(parts) == 4 else 60)
        else:
            say(f"unknown command {line} (/help)")
    node.close()  # stops the transports and the event thread
    say("bye")
    return 0


if __name__ == "__main__":
    sys.exit(main())
