"""docs/ABI.md stays honest: every JSON example it gives, every field its tables name and
every event's JSON is checked against what the library really returns.

The shape of each example is compared with real output: an object has the same keys in
the same order, each value the same JSON type (``null`` on either side matches anything,
an empty ``{}`` or ``[]`` in the example stands for any object or array, and an array's
first item is compared with the real array's first item). A field table's rows
(``| `field` | type | meaning |``) must name fields that exist with the type given.
A new example without a producer here fails the test, so ABI.md cannot grow unchecked.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import yaok
from yaok import EventKind, LinkRole, wire
from yaok import contacts as contacts_mod, links as links_mod, messages as messages_mod
from yaok import node as node_mod, security as security_mod

from conftest import PIN, REPO
from test_links import PipeEnd, wait

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

def same_shape(example: Any, real: Any, path: str = "$") -> None:
    if example is None or real is None:
        return
    if isinstance(example, dict):
        assert isinstance(real, dict), f"{path}: documented an object, got {real!r}"
        if example:
            assert list(real) == list(example), f"{path}: documented keys {list(example)}, real {list(real)}"
            for key in example:
                same_shape(example[key], real[key], f"{path}.{key}")
    elif isinstance(example, list):
        assert isinstance(real, list), f"{path}: documented an array, got {real!r}"
        if example and real:
            same_shape(example[0], real[0], f"{path}[0]")
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
    same_shape(examples[index], real)
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
        alice.add_lan("127.0.0.1", 0, discovery=False)  # registered, disabled: one transport to show
        out["diagnostics"] = raw(alice, links_mod._diagnostics)
        out["security event"] = raw(alice, security_mod._security_events, 0, 10)[0]
        out["packet"] = wire.decode_packet(bytes.fromhex(
            "01010700112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004deadbeef"))
        out["fragments"] = [u.hex() for u in wire.split(bytes.fromhex(
            "01010700112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004deadbeef"), 20, 0x1234)]

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
        }
        out["events"] = events
        with to_alice.lock, to_bob.lock:
            to_alice.target = to_bob.target = None
        a_link.close()
        b_link.close()
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


def test_events_match_the_events_table(world):
    documented = event_examples()
    assert set(documented) >= {int(k) for k in EventKind}, "every YAOK_EVENT_* kind is in ABI.md's table"
    for kind, real in world["events"].items():
        same_shape(documented[int(kind)], real, f"event {kind.name}")
    # TRANSPORT_NOTICE needs a relay's rate limit; its row is still checked to be JSON.
    assert set(documented[int(EventKind.TRANSPORT_NOTICE)]) == {"transport", "message", "retry_after_ms"}
