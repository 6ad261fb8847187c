"""No public function or method lets a wrong argument reach ctypes.

ctypes answers a value that does not fit an argtype with ``ctypes.ArgumentError`` (not a
TypeError), and silently wraps integers that are too large. Every public callable must
instead raise TypeError, ValueError (InvalidArgument and HandleClosed are ValueErrors) or
another YaOKError, having checked the value itself: the last-resort checks in
yaok._lib.CFunction (whose messages say _lib.UNCHECKED) count as failures here. The
methods are found by introspection, so a method added later is covered as soon as its
parameters have a valid sample in Context.samples() (the test says which one is missing).
"""

from __future__ import annotations

import ctypes
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

import pytest

import yaok
from yaok import _lib, envelope, errors, wire

from conftest import ALICE_SECRETS, BOB_SECRETS, PIN

BAD_VALUES: List[Any] = [object(), 1.5, float("nan"), None, "x", "", b"x", bytearray(b"x"), [], [object()],
                         True, 1 << 70, -(1 << 70), -1, 0, "\0", "\udcff"]

ALLOWED = (TypeError, ValueError, yaok.YaOKError)


def call_must_not_leak(fn: Callable[..., Any], args: Dict[str, Any], where: str) -> None:
    try:
        result = fn(**args)
    except ctypes.ArgumentError as e:
        pytest.fail(f"{where}: ctypes.ArgumentError leaked: {e}")
    except ALLOWED as e:
        if _lib.UNCHECKED in str(e):
            pytest.fail(f"{where}: reached the C call unchecked: {e}")
        return
    except Exception as e:  # anything else is a bug too (OverflowError, AttributeError, ...)
        pytest.fail(f"{where}: {type(e).__name__} leaked: {e}")
    if hasattr(result, "close"):
        result.close()


def public_methods(cls: type) -> List[str]:
    return sorted(name for name, value in vars_with_bases(cls)
                  if not name.startswith("_") and callable(value)
                  and name not in ("from_json",))  # parses the library's own JSON


def vars_with_bases(cls: type) -> Iterator[Tuple[str, Any]]:
    seen = set()
    for klass in cls.__mro__:
        for name, value in vars(klass).items():
            if name not in seen:
                seen.add(name)
                if isinstance(value, (classmethod, staticmethod)):
                    value = value.__func__
                yield name, value


def parameters(fn: Callable[..., Any]) -> List[str]:
    return [p.name for p in inspect.signature(fn).parameters.values()
            if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


class Context:
    """Valid values for every parameter name of the public API."""

    def __init__(self, node: yaok.Node, tmp_path: Any) -> None:
        self.node = node
        self.alice = yaok.Identity.restore("Alice", ALICE_SECRETS)
        self.bob = yaok.Identity.restore("Bob", BOB_SECRETS)
        self.alice_card = yaok.Card.decode(self.alice.card)
        self.bob_card = yaok.Card.decode(self.bob.card)
        self.bob_id = node.add_contact(self.bob.card).id
        self.outgoing = node.send(self.bob_id, "hello").message_id
        self.sealed = envelope.seal(self.alice, self.bob_card, b"hi", bytes(16), 1)
        self.tmp_path = tmp_path

    def samples(self) -> Dict[str, Any]:
        return {
            # Node
            "data_dir": str(self.tmp_path / "other-node"), "test_fast_kdf": True,
            "name": "Bobby", "pin": PIN, "confirmation": PIN, "key": bytes(32), "device_secret": bytes(32),
            "secret": PIN,
            "timeout_ms": 60_000, "confirm": False, "callback": lambda kind, data: None,
            "card": self.bob.card, "contact_id": self.bob_id, "conversation_id": self.bob_id,
            "query": "Bob", "with_messages": False, "transport": "LAN", "text": "hi",
            "message_id": self.outgoing, "sent_at_ms": 1_000, "status": "sent", "before": None,
            "limit": 10, "before_id": None,
            "role": yaok.LinkRole.INITIATOR, "mtu": 200, "send": lambda unit: None, "closed": None, "stream": False,
            "enabled": True, "listen": "127.0.0.1", "port": 0, "discovery": False, "peers": [],
            "address": "127.0.0.1:7443", "pin_hex": "00" * 32, "ca_file": None, "adapter": "hci0",
            "mode": "anyone", "max_packets": 100, "max_bytes": 1 << 20,
            # Identity, Card
            "secrets": ALICE_SECRETS,
            # envelope
            "sender": self.alice, "recipient_card": self.bob_card, "body": b"hi", "timestamp_ms": 1,
            "recipient": self.bob, "senders": [self.alice_card], "sealed": self.sealed,
            # wire: the message packet of docs/PROTOCOL.md's wire-routed-message
            "packet": bytes.fromhex("01010700112233445566778899aabbccddeeff018bcfe5680027605d0d40da0e5962510004deadbeef"),
            "first_group": 0x1234,
            # errors
            "message": "the message",
        }

    def close(self) -> None:
        for thing in (self.alice, self.bob, self.alice_card, self.bob_card):
            thing.close()


@pytest.fixture
def context(node: yaok.Node, tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Context]:
    monkeypatch.chdir(tmp_path)  # a str that is a valid relative path lands here
    ctx = Context(node, tmp_path)
    yield ctx
    ctx.close()


def check_callable(fn: Callable[..., Any], where: str, samples: Dict[str, Any],
                   overrides: Optional[Dict[str, Any]] = None) -> None:
    overrides = overrides or {}
    names = parameters(fn)
    missing = [n for n in names if n not in samples and n not in overrides]
    assert not missing, f"{where}: add a valid sample for parameter(s) {missing} to SAMPLES in this test"
    good = {n: overrides.get(n, samples.get(n)) for n in names}
    for name in names:
        for bad in BAD_VALUES:
            call_must_not_leak(fn, dict(good, **{name: bad}), f"{where}({name}={bad!r})")


def with_arguments(cls: type) -> List[str]:
    return [m for m in public_methods(cls) if parameters(getattr(cls, m))]


@pytest.mark.parametrize("method", with_arguments(yaok.Node))
def test_node_methods(context: Context, method: str):
    check_callable(getattr(context.node, method), f"Node.{method}", context.samples())


@pytest.mark.parametrize("cls,method", [(yaok.Identity, m) for m in with_arguments(yaok.Identity)]
                         + [(yaok.Card, m) for m in with_arguments(yaok.Card)])
def test_identity_and_card_methods(context: Context, cls: type, method: str):
    target = {yaok.Identity: context.alice, yaok.Card: context.alice_card}[cls]
    fn = getattr(target, method)
    overrides = {"text": context.alice.card} if cls is yaok.Card else {}
    check_callable(fn, f"{cls.__name__}.{method}", context.samples(), overrides)


@pytest.mark.parametrize("fn", [envelope.seal, envelope.open, yaok.status_str, errors.error_for_status,
                                yaok.check_secret, wire.decode_packet, wire.frame, wire.split],
                         ids=lambda fn: f"{fn.__module__}.{fn.__name__}")
def test_module_functions(context: Context, fn: Callable[..., Any]):
    overrides: Dict[str, Any] = {}
    if fn is envelope.open:
        overrides = {"recipient": context.bob, "message_id": bytes(16)}
    if fn is envelope.seal:
        overrides = {"message_id": bytes(16)}
    if fn in (yaok.status_str, errors.error_for_status):
        overrides = {"status": 201}
    check_callable(fn, fn.__name__, context.samples(), overrides)


def test_every_public_module_function_is_covered():
    covered = {"seal", "open", "status_str", "error_for_status", "check_secret", "decode_packet", "frame", "split",
               # no arguments:
               "abi_version", "version_string", "load_library"}
    functions = {name for name in yaok.__all__ if inspect.isfunction(getattr(yaok, name))}
    for module in (envelope, wire):
        functions |= {name for name in module.__all__ if inspect.isfunction(getattr(module, name))}
    assert functions <= covered, sorted(functions - covered)


@pytest.mark.parametrize("cls", [yaok.Identity, yaok.Card, yaok.Node])
def test_constructors_refuse_anything_but_a_handle(cls: type):
    """The constructors take the library's handle (from new/decode/open); any other value
    used to be stored and then fail inside ctypes on the first call."""
    for bad in [object(), 1234, "x", b"x", ctypes.c_void_p(1234)]:
        with pytest.raises(TypeError):
            cls(bad)


def test_last_resort_checks_in_cfunction():
    """Should a method forget a check, the C call still gets no ArgumentError and no
    wrapped integer."""
    with pytest.raises(yaok.InvalidArgument, match="yaok_status_str: argument 1 is out of range"):
        _lib._status_str((1 << 32) + 201)
    with pytest.raises(TypeError, match="yaok_status_str: argument 1") as info:
        _lib._status_str("201")
    assert _lib.UNCHECKED in str(info.value) and not isinstance(info.value, ctypes.ArgumentError)


def test_status_str_range():
    assert yaok.status_str(201) == "Invalid Ya OK QR code"
    for bad in (1 << 31, -(1 << 31) - 1, (1 << 32) + 201):
        with pytest.raises(yaok.InvalidArgument):
            yaok.status_str(bad)  # ctypes would wrap (1 << 32) + 201 to 201
    with pytest.raises(TypeError):
        yaok.status_str("201")  # type: ignore[arg-type]
