"""docs/ABI.md stays honest: every JSON example it gives, every field its tables name and
every event's JSON is checked against what the library really returns.

The shape of each example is compared with real output: an object has the same keys in
the same order, each value the same JSON type, an empty ``{}`` or ``[]`` in the example
stands for any object or array, and an array's first item is compared with the real array's
first item. ``null`` is no wildcard: a ``null`` in an example stands for "null or the type
the section's field table gives", and a real ``null`` where the example has a value must be
allowed by the table ("… or null"); a field with neither fails. A field table's rows
(``| `field` | type | meaning |``) must name fields that exist with the type given.
A new example without a producer here fails the test, so ABI.md cannot grow unchecked.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import yaok
from yaok import EventKind, LinkRole, wire
from yaok import contacts as contacts_mod, links as links_mod, messages as messages_mod
from yaok import node as node_mod, security as security_mod

from conftest import PIN, REPO
from test_links import PipeEnd, wait
from test_relay import relay_binary

ABI = REPO / "docs" / "ABI.md"


# ---- reading ABI.md

def sections() -> Dict[str, str]:
    """Heading text of each `## ` section -> its body."""
    out: Dict[str, str] = {}
    title: Optional[str] = None
    for line in ABI.read_text(encoding="utf-8").splitlines(keepends=True):
        if line.startswith("## "):
            title = line[3:].strip()
            out[title] = ""
        elif title is not None:
            out[title] += line
    return out


def json_examples(body: str) -> List[Any]:
    return [json.loads(block) for block in re.findall(r"^```json\n(.*?)^```", body, re.M | re.S)]


def field_rows(body: str) -> List[Tuple[str, str]]:
    """(field path, type) of every row of a `| field | type | meaning |` table whose first
    cell is one plain field path in backticks."""
    rows: List[Tuple[str, str]] = []
    in_table = False
    for line in body.splitlines():
        if re.match(r"^\|\s*field\s*\|\s*type\s*\|\s*meaning\s*\|", line):
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        m = re.fullmatch(r"`([a-z_]+(?:\[\])?(?:\.[a-z_]+(?:\[\])?)*)`", cells[0]) if in_table else None
        if m and len(cells) >= 2:
            rows.append((m.group(1), cells[1]))
    return rows


SECTIONS = sections()


def section(prefix: str) -> str:
    matches = [body for title, body in SECTIONS.items() if title.startswith(prefix)]
    assert len(matches) == 1, f"ABI.md has {len(matches)} sections starting with {prefix!r}"
    return matches[0]


# ---- comparing

def table_path(path: str) -> str:
    """"$.transports[0].error" (or "event X.transports[0].error") -> "transports[].error",
    a field table's spelling."""
    return re.sub(r"\[0\]", "[]", path.split(".", 1)[1]) if "." in path else ""


def same_shape(example: Any, real: Any, path: str = "$", types: Optional[Dict[str, str]] = None) -> None:
    """`types`: field path -> the type its field table gives ("int or null", …)."""
    types = types or {}
    documented = types.get(table_path(path))
    if example is None:
        if real is None:
            return
        assert documented is not None, \
            f"{path}: the example has null, no field table gives its type, and the real value is {real!r}"
        base = documented.removesuffix(" or null")
        assert base in TYPES and TYPES[base](real), f"{path}: documented as {documented}, real value {real!r}"
        return
    if real is None:
        assert documented is not None and documented.endswith(" or null"), \
            f"{path}: documented {json.dumps(example)[:60]} (not nullable in a field table), got null"
        return
    if isinstance(example, dict):
        assert isinstance(real, dict), f"{path}: documented an object, got {real!r}"
        if example:
            assert list(real) == list(example), f"{path}: documented keys {list(example)}, real {list(real)}"
            for key in example:
                same_shape(example[key], real[key], f"{path}.{key}", types)
    elif isinstance(example, list):
        assert isinstance(real, list), f"{path}: documented an array, got {real!r}"
        if example and real:
            same_shape(example[0], real[0], f"{path}[0]", types)
    else:
        assert type(real) is type(example), f"{path}: documented {type(example).__name__}, got {real!r}"


TYPES: Dict[str, Callable[[Any], bool]] = {
    "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "array of strings": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
}


EMPTY = object()  # a path through an empty array: nothing there to check


def resolve(real: Any, path: str) -> Tuple[bool, Any]:
    value = real
    for part in path.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        if not isinstance(value, dict) or key not in value:
            return False, None
        value = value[key]
        if many:
            if not value:
                return True, EMPTY
            value = value[0]
    return True, value


def check_table(body: str, real: Any) -> int:
    checked = 0
    for path, type_text in field_rows(body):
        found, value = resolve(real, path)
        assert found, f"ABI.md documents `{path}`, which the real output lacks: {json.dumps(real)[:300]}"
        nullable = type_text.endswith(" or null")
        base = type_text[: -len(" or null")] if nullable else type_text
        if value is EMPTY:
            continue
        if value is None:
            assert nullable, f"`{path}` is null but documented as {type_text}"
        elif base in TYPES:
            assert TYPES[base](value), f"`{path}` documented as {type_text}, real value {value!r}"
        checked += 1
    return checked


def check_section(prefix: str, real: Any, index: int = 0) -> None:
    body = section(prefix)
    examples = json_examples(body)
    assert len(examples) > index, f"ABI.md section {prefix!r} has no JSON example {index}"
    same_shape(examples[index], real, types=dict(field_rows(body)))
    if index == 0:
        check_table(body, real)


# ---- producing real output

class Recorder:
    def __init__(self) -> None:
        self.events: List[Tuple[Any, Dict[str, Any]]] = []

    def __call__(self, kind: Any, data: Dict[str, Any]) -> None:
        self.events.append((kind, data))

    def first(self, kind: EventKind, **match: Any) -> Dict[str, Any]:
        wait(lambda: any(k == kind and all(d.get(f) == v for f, v in match.items()) for k, d in self.events))
        return next(d for k, d in self.events if k == kind and all(d.get(f) == v for f, v in match.items()))


def raw(node: yaok.Node, fn: Any, *args: Any) -> Any:
    return node._call_json(fn, *args)


@pytest.fixture
def world(tmp_path):
    """Alice and Bob, contacts of each other, a message from Alice delivered over a memory
    link that stays open, and every documented kind of output collected on the way."""
    out: Dict[str, Any] = {}
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        a_events, b_events = Recorder(), Recorder()
        alice.set_event_callback(a_events)
        bob.set_event_callback(b_events)
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        out["status"] = raw(alice, node_mod._status)
        out["profile"] = raw(alice, node_mod._profile)
        bob_card = bob.profile().card.encode()
        out["contact preview"] = raw(alice, contacts_mod._preview, bob_card)
        out["contact"] = raw(alice, contacts_mod._add, bob_card)
        bob_id = out["contact"]["id"]
        out["contact preview of a contact"] = raw(alice, contacts_mod._preview, bob_card)  # existing_contact_id set
        alice_id = bob.add_contact(alice.profile().card).id
        out["contact keys"] = raw(alice, contacts_mod._keys, bob_id)
        text = "Hello, Bob".encode()
        out["message"] = raw(alice, messages_mod._send, bob_id, text, len(text))
        out["outbox entry"] = raw(alice, messages_mod._outbox)[0]
        out["history page"] = raw(alice, messages_mod._history, bob_id, None, 100)

        to_bob, to_alice = PipeEnd(), PipeEnd()
        b_link = bob.open_link("memory", LinkRole.RESPONDER, 512, to_alice.send)
        a_link = alice.open_link("memory", LinkRole.INITIATOR, 512, to_bob.send)
        to_alice.connect(a_link)
        to_bob.connect(b_link)
        wait(lambda: alice.message(out["message"]["message_id"]).status is yaok.MessageStatus.DELIVERED)
        wait(lambda: alice.contact(bob_id).connection.online)
        out["contact online"] = raw(alice, contacts_mod._show, bob_id)
        alice.add_lan("127.0.0.1", 0, discovery=False)  # registered, disabled: one transport to show
        out["diagnostics"] = raw(alice, links_mod._diagnostics)
        out["security event"] = raw(alice, security_mod._security_events, 0, 10)[0]
        message_packet = bytes.fromhex(
            "01010700112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004deadbeef")
        out["packet"] = wire.decode_packet(message_packet)
        out["fragments"] = [u.hex() for u in wire.split(message_packet, 20, 0x1234)]
        # One packet of each type (PROTOCOL.md §4.1): an ack is a message's layout with type
        # 0x02; a handshake's and a link packet's length counts what follows the first 4 bytes.
        out["packets"] = {
            "message": out["packet"],
            "ack": wire.decode_packet(b"\x01\x02" + message_packet[2:]),
            "handshake": wire.decode_packet(bytes.fromhex("01030002abcd")),
            "fragment": wire.decode_packet(bytes.fromhex(out["fragments"][0])),
            "link": wire.decode_packet(bytes.fromhex("01050019" + "0000000000000003" + "ee" * 17)),
        }

        alice.lock()
        alice.unlock(PIN)
        alice.set_transport_enabled("lan", True)
        alice.set_transport_enabled("lan", False)
        events = {
            EventKind.LOCKED: a_events.first(EventKind.LOCKED),
            EventKind.UNLOCKED: a_events.first(EventKind.UNLOCKED, method="pin"),
            EventKind.SECURITY: a_events.first(EventKind.SECURITY),
            EventKind.MESSAGE_STORED: a_events.first(EventKind.MESSAGE_STORED),
            EventKind.MESSAGE_STATUS_CHANGED: a_events.first(EventKind.MESSAGE_STATUS_CHANGED, status="delivered"),
            EventKind.CONTACTS_CHANGED: a_events.first(EventKind.CONTACTS_CHANGED),
            EventKind.MESSAGE_RECEIVED: b_events.first(EventKind.MESSAGE_RECEIVED, contact_id=alice_id),
            EventKind.TRANSPORT_CHANGED: a_events.first(EventKind.TRANSPORT_CHANGED, state="running"),
            EventKind.LINK_OPENED: a_events.first(EventKind.LINK_OPENED),
            EventKind.LINK_AUTHENTICATED: a_events.first(EventKind.LINK_AUTHENTICATED, peer="contact"),
        }
        out["events"] = events
        with to_alice.lock, to_bob.lock:
            to_alice.target = to_bob.target = None
        a_link.close()
        b_link.close()
        events[EventKind.LINK_CLOSED] = a_events.first(EventKind.LINK_CLOSED)
        wait(lambda: raw(alice, contacts_mod._show, bob_id)["connection"]["state"] == "last_seen")
        out["contact last seen"] = raw(alice, contacts_mod._show, bob_id)
        yield out


# ---- the checks

OBJECT_SECTIONS = ["status", "profile", "contact —", "contact preview", "message —", "history page",
                   "outbox entry", "contact keys", "diagnostics", "security event"]


def test_every_json_example_has_a_producer():
    """A section with a JSON example must be one this test checks (add it here when ABI.md
    grows one)."""
    with_examples = {title for title, body in SECTIONS.items() if json_examples(body)}
    checked = {title for title in SECTIONS if any(title.startswith(p) for p in OBJECT_SECTIONS + ["packet"])}
    assert with_examples <= checked, f"unchecked JSON examples in ABI.md: {sorted(with_examples - checked)}"


@pytest.mark.parametrize("prefix", OBJECT_SECTIONS)
def test_objects_match_their_examples_and_tables(world, prefix):
    key = prefix.rstrip(" —")
    check_section(prefix, world[key])


def test_diagnostics_document_clock_skew_and_held_error(world):
    rows = dict(field_rows(section("diagnostics")))
    assert rows["clock_skew"] == "object or null" and rows["held_error"] == "string or null"
    assert "clock_skew" in world["diagnostics"] and "held_error" in world["diagnostics"]


def test_packet_and_fragments_match_their_examples(world):
    check_section("packet", world["packet"], 0)
    example = json_examples(section("packet"))[1]
    assert example == world["fragments"]  # the whole array: it is the wire-fragmentation vector


def event_examples() -> Dict[int, Any]:
    """kind number -> the JSON the events table gives for it: the first `{…}` in its row, or
    the section example its row names ("a security event object", "a message object")."""
    out: Dict[int, Any] = {}
    for line in section("events").splitlines():
        m = re.match(r"^\|\s*(\d+)\s*\|\s*`YAOK_EVENT_\w+`\s*\|(.*)\|\s*$", line)
        if not m:
            continue
        kind, rest = int(m.group(1)), m.group(2)
        braces = re.search(r"`(\{.*?\})`", rest)
        if braces:
            out[kind] = json.loads(braces.group(1))
        elif "security event object" in rest:
            out[kind] = json_examples(section("security event"))[0]
        elif "message object" in rest:
            out[kind] = json_examples(section("message —"))[0]
    return out


def event_types(kind: EventKind) -> Dict[str, str]:
    """The types of an event's fields whose example value is null: from the section its row
    names, else from its row's words ("`retry_after_ms` may be null"; "then `error` says why")."""
    rows = {EventKind.SECURITY: "security event", EventKind.MESSAGE_STORED: "message —",
            EventKind.MESSAGE_STATUS_CHANGED: "message —"}
    if kind in rows:
        return dict(field_rows(section(rows[kind])))
    line = next(l for l in section("events").splitlines() if f"`YAOK_EVENT_{kind.name}`" in l)
    types: Dict[str, str] = {}
    if "`retry_after_ms` may be null" in line:
        types["retry_after_ms"] = "int or null"
    if "then `error` says why" in line:
        types["error"] = "string or null"
    return types


def test_events_match_the_events_table(world):
    documented = event_examples()
    assert set(documented) >= {int(k) for k in EventKind}, "every YAOK_EVENT_* kind is in ABI.md's table"
    for kind, real in world["events"].items():
        same_shape(documented[int(kind)], real, f"event {kind.name}", event_types(kind))


def test_a_preview_of_a_contact_names_it(world):
    """`existing_contact_id` is null in the example: produced here as an int too."""
    real = world["contact preview of a contact"]
    assert real["existing_contact_id"] == world["contact"]["id"]
    check_section("contact preview", real)


def connection_forms() -> Dict[str, Dict[str, str]]:
    """state -> {field: type} from the contact section's `connection` table."""
    forms: Dict[str, Dict[str, str]] = {}
    for line in section("contact —").splitlines():
        m = re.match(r'^\|\s*`"(\w+)"`\s*\|(.*?)\|', line)
        if m:
            forms[m.group(1)] = dict(re.findall(r"`(\w+)`: (\w+)", m.group(2)))
    return forms


def test_every_connection_form_is_produced_as_documented(world):
    forms = connection_forms()
    assert set(forms) == {"online", "last_seen", "never_connected"}
    produced = {c["connection"]["state"]: c["connection"]
                for c in (world["contact"], world["contact online"], world["contact last seen"])}
    assert set(produced) == set(forms)
    for state, connection in produced.items():
        assert list(connection) == ["state"] + list(forms[state]), f"connection {state}: {connection}"
        for field, type_name in forms[state].items():
            assert TYPES[type_name](connection[field]), f"connection {state}.{field}: {connection[field]!r}"


def packet_forms() -> Dict[str, List[Tuple[str, str]]]:
    """type -> [(field, type word)] from the packet section's table: "`hop_limit` int; …";
    a field whose type word is missing takes the next one given ("`group`, `index`, `count` ints")."""
    forms: Dict[str, List[Tuple[str, str]]] = {}
    for line in section("packet").splitlines():
        m = re.match(r"^\|\s*((?:`\"\w+\"`(?:,\s*)?)+)[^|]*\|(.*)\|\s*$", line)
        if not m:
            continue
        fields: List[Tuple[str, str]] = []
        pending: List[str] = []
        for name, kind in re.findall(r"`(\w+)`(?:\s+(int|ints|hex))?", m.group(2)):
            pending.append(name)
            if kind:
                fields += [(n, "int" if kind.startswith("int") else "hex") for n in pending]
                pending = []
        for packet_type in re.findall(r'`"(\w+)"`', m.group(1)):
            forms[packet_type] = fields
    return forms


def test_a_packet_of_every_type_decodes_as_documented(world):
    forms = packet_forms()
    assert set(forms) == {"message", "ack", "handshake", "fragment", "link"}
    assert set(world["packets"]) == set(forms)
    for packet_type, real in world["packets"].items():
        assert real["type"] == packet_type and real["version"] == 1
        assert list(real) == ["version", "type"] + [f for f, _ in forms[packet_type]], f"{packet_type}: {real}"
        for field, kind in forms[packet_type]:
            if kind == "int":
                assert TYPES["int"](real[field]), f"{packet_type}.{field}: {real[field]!r}"
            else:
                assert isinstance(real[field], str) and re.fullmatch(r"[0-9a-f]*", real[field]), \
                    f"{packet_type}.{field}: {real[field]!r}"


SECURITY_EVENT_SWIFT = REPO / "Sources" / "YaOKStore" / "SecurityEvent.swift"


def test_security_kinds_are_swifts():
    """The kind table lists exactly SecurityEventKind's cases (its raw values, read from the
    Swift source), no more, no fewer."""
    swift = set(re.findall(r'^\s*case \w+ = "(\w+)"', SECURITY_EVENT_SWIFT.read_text(encoding="utf-8"), re.M))
    assert len(swift) >= 15
    documented: set = set()
    in_table = False
    for line in section("security event").splitlines():
        if re.match(r"^\|\s*kind\s*\|\s*when\s*\|", line):
            in_table = True
            continue
        if in_table and line.startswith("|") and not line.startswith("|---"):
            documented |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
        elif in_table and not line.startswith("|"):
            in_table = False
    assert documented == swift, f"ABI.md only: {sorted(documented - swift)}; Swift only: {sorted(swift - documented)}"


@pytest.fixture
def rate_limited_relay(tmp_path):
    """A real yaok-relay on 127.0.0.1 that stores one message per pseudonym per hour."""
    proc = subprocess.Popen([relay_binary(), "--listen", "127.0.0.1:0", "--data", str(tmp_path / "relay"),
                             "--self-signed", "--rate-limit", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    found: Dict[str, str] = {}

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            m = re.match(r"(pin|listening): (\S+)$", line.strip())
            if m:
                found[m.group(1)] = m.group(2)
    threading.Thread(target=read, daemon=True).start()
    try:
        wait(lambda: "pin" in found and "listening" in found, timeout=30)
        yield found["listening"], found["pin"]
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_transport_notice_matches_its_row(tmp_path, rate_limited_relay):
    """YAOK_EVENT_TRANSPORT_NOTICE, produced for real: a relay's rate limit refuses the second
    message."""
    address, pin = rate_limited_relay
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        events = Recorder()
        alice.set_event_callback(events)
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.profile().card).id
        alice.add_relay(address, pin_hex=pin)
        alice.set_transport_enabled("relay", True)
        alice.send(bob_id, "one")
        alice.send(bob_id, "two")
        real = events.first(EventKind.TRANSPORT_NOTICE)
    same_shape(event_examples()[int(EventKind.TRANSPORT_NOTICE)], real, "event TRANSPORT_NOTICE",
               event_types(EventKind.TRANSPORT_NOTICE))
    assert real["transport"] == "relay" and real["message"].startswith("Rate limit reached.")


def test_null_in_an_example_is_no_wildcard():
    """A `null` in an example used to match anything: a wrong-shaped `clock_skew` passed."""
    example = json_examples(section("diagnostics"))[0]
    types = dict(field_rows(section("diagnostics")))
    real = dict(example)
    same_shape(example, real, types=types)
    same_shape(example, {**real, "clock_skew": {"link_id": 1, "clock_skew_ms": 5}}, types=types)
    with pytest.raises(AssertionError):
        same_shape(example, {**real, "clock_skew": 5}, types=types)  # "object or null", not an int
    with pytest.raises(AssertionError):
        same_shape(example, {**real, "held_packets": None}, types=types)  # "int": never null
    with pytest.raises(AssertionError):
        same_shape({"x": None}, {"x": 1})  # no field table gives x's type
