"""yaok.Node events: Python callbacks on the library's event thread.

No speed assertions: every wait is a threading.Event with a generous timeout that only
guards against a hang."""

from __future__ import annotations

import gc
import logging
import threading
from typing import Any, Dict, List, Tuple

import pytest

import yaok
from yaok import events
from yaok.events import EventKind

from conftest import PIN

WAIT = 30.0  # seconds; a hang guard, not an expectation


class Recorder:
    """Collects (kind, data, thread id) and lets a test wait for a matching event."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: List[Tuple[Any, Dict[str, Any], int]] = []
        self.changed = threading.Condition(self.lock)

    def __call__(self, kind: Any, data: Dict[str, Any]) -> None:
        with self.changed:
            self.seen.append((kind, data, threading.get_ident()))
            self.changed.notify_all()

    def wait_for(self, predicate, timeout: float = WAIT):
        with self.changed:
            ok = self.changed.wait_for(lambda: any(predicate(k, d) for k, d, _ in self.seen), timeout)
        assert ok, f"no matching event within {timeout} s; seen: {self.kinds()}"
        return next((k, d) for k, d, _ in self.snapshot() if predicate(k, d))

    def snapshot(self):
        with self.lock:
            return list(self.seen)

    def kinds(self):
        return [k for k, _, _ in self.snapshot()]


def is_auto_lock(kind, data) -> bool:
    return kind == EventKind.LOCKED and data.get("reason") == "auto_lock"


def test_events_arrive_on_another_thread_with_parsed_json(fresh_node):
    recorder = Recorder()
    registration = fresh_node.set_event_callback(recorder)
    assert isinstance(registration, events.Registration) and fresh_node.event_registration is registration
    fresh_node.setup("Alice", PIN, PIN)
    kind, data = recorder.wait_for(lambda k, d: k == EventKind.UNLOCKED)
    assert data == {"method": "setup"}
    kind, data = recorder.wait_for(lambda k, d: k == EventKind.SECURITY)
    assert data["kind"] == "pin_set_up" and isinstance(data["id"], int)
    assert all(tid != threading.get_ident() for _, _, tid in recorder.snapshot())
    assert len({tid for _, _, tid in recorder.snapshot()}) == 1  # one event thread per node
    assert all(isinstance(k, EventKind) for k in recorder.kinds())


def test_auto_lock_event_is_delivered(node):
    recorder = Recorder()
    node.set_event_callback(recorder)
    assert node.set_auto_lock(timeout_ms=50) == yaok.NodeWarning.NONE
    kind, data = recorder.wait_for(is_auto_lock)
    assert data == {"reason": "auto_lock"}
    assert node.status().locked
    with pytest.raises(yaok.Locked):
        node.contacts()
    recorder.wait_for(lambda k, d: k == EventKind.SECURITY and d["kind"] == "auto_locked")


def test_message_and_contact_events(node, bob):
    recorder = Recorder()
    node.set_event_callback(recorder)
    bob_id = node.add_contact(bob.card).id
    recorder.wait_for(lambda k, d: k == EventKind.CONTACTS_CHANGED and d == {"contact_id": bob_id})
    message = node.send(bob_id, "hello")
    _, stored = recorder.wait_for(lambda k, d: k == EventKind.MESSAGE_STORED)
    assert yaok.Message.from_json(stored) == message


def test_callback_may_call_back_into_the_node(node, bob):
    """The callback runs outside the node's lock: calls on the same node work from it, also
    while the main thread keeps calling."""
    bob_id = node.add_contact(bob.card).id
    results: Dict[str, Any] = {}
    counts = {"stored": 0, "history_ok": 0}
    done = threading.Event()
    total = 40

    def callback(kind, data):
        if kind == EventKind.MESSAGE_STORED:
            page = node.history(bob_id, limit=1000)  # back into the node, on the event thread
            assert any(m.message_id_hex == data["message_id"] for m in page.messages)
            counts["stored"] += 1
            counts["history_ok"] += 1
            if counts["stored"] == total:
                node.lock()  # and a call that emits another event
        elif is_auto_lock(kind, data) or (kind == EventKind.LOCKED and data["reason"] == "manual"):
            results["status"] = node.status()
            try:
                node.contacts()
            except yaok.Locked as e:
                results["locked_error"] = e
            done.set()

    node.set_event_callback(callback)
    for i in range(total):
        node.send(bob_id, f"m{i}")
    assert done.wait(WAIT)
    assert counts == {"stored": total, "history_ok": total}
    assert results["status"].locked
    assert isinstance(results["locked_error"], yaok.Locked)


def test_exceptions_in_callbacks_are_logged_not_propagated(node, caplog):
    seen = []
    second = threading.Event()

    def callback(kind, data):
        seen.append(kind)
        if len(seen) == 1:
            raise RuntimeError("boom from the callback")
        second.set()

    with caplog.at_level(logging.ERROR, logger="yaok.events"):
        node.set_event_callback(callback)
        node.lock()  # LOCKED + SECURITY: the first raises, the second is still delivered
        assert second.wait(WAIT)
    records = [r for r in caplog.records if r.name == "yaok.events"]
    assert records and "boom from the callback" in (records[0].exc_text or str(records[0].exc_info))
    node.unlock(PIN)  # the node is fine


def test_free_user_data_runs_when_replaced_removed_and_closed(tmp_path):
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    first = node.set_event_callback(Recorder())
    second = node.set_event_callback(Recorder())
    assert first.freed.wait(WAIT)  # replaced: released on the event thread
    assert first.token not in events._registry and second.token in events._registry
    assert node.set_event_callback(None) is None and node.event_registration is None
    assert second.freed.wait(WAIT)  # removed
    third = node.set_event_callback(Recorder())
    assert not third.freed.is_set()
    node.close()
    assert third.freed.is_set()  # yaok_node_free ran free_user_data before returning
    assert third.token not in events._registry


def test_closing_while_a_callback_is_registered(tmp_path):
    recorder = Recorder()
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    registration = node.set_event_callback(recorder)
    node.setup("Alice", PIN, PIN)
    node.set_auto_lock(timeout_ms=3_600_000)
    node.close()
    assert registration.freed.is_set()
    delivered = registration.delivered
    node.close()
    assert registration.delivered == delivered  # nothing arrives after close
    with pytest.raises(yaok.HandleClosed):
        node.lock()


def test_closing_waits_for_a_running_callback(node):
    entered, release, finished = threading.Event(), threading.Event(), threading.Event()

    def callback(kind, data):
        if kind == EventKind.LOCKED:
            entered.set()
            release.wait(WAIT)
            finished.set()

    registration = node.set_event_callback(callback)
    node.lock()
    assert entered.wait(WAIT)
    closer = threading.Thread(target=node.close)
    closer.start()
    closer.join(0.2)
    assert closer.is_alive() and not registration.freed.is_set()  # still waiting for the callback
    release.set()
    closer.join(WAIT)
    assert not closer.is_alive()
    assert finished.is_set() and registration.freed.is_set() and node._handle.freed


def test_closing_the_node_from_its_own_callback(node):
    """yaok_node_free must not run on the event thread: close() there closes the node at
    once and frees it on a helper thread once the callback has returned."""
    outcome: Dict[str, Any] = {}
    returned = threading.Event()

    def callback(kind, data):
        if kind == EventKind.LOCKED:
            node.close()
            outcome["closed"] = node.closed
            try:
                node.status()
            except yaok.HandleClosed as e:
                outcome["error"] = e
            returned.set()

    registration = node.set_event_callback(callback)
    node.lock()
    assert returned.wait(WAIT)
    assert registration.freed.wait(WAIT)
    assert outcome["closed"] is True and isinstance(outcome["error"], yaok.HandleClosed)
    assert node._handle._freed.wait(WAIT)
    node.close()  # still idempotent from the main thread


def test_unknown_event_kinds_are_passed_as_int():
    assert events._kind(1) is EventKind.LOCKED
    assert events._kind(99) == 99 and not isinstance(events._kind(99), EventKind)


def test_callback_must_be_callable(node):
    with pytest.raises(TypeError):
        node.set_event_callback("not callable")


def test_two_nodes_in_one_process(tmp_path, bob):
    a_events, b_events = Recorder(), Recorder()
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as a, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as b:
        a.set_event_callback(a_events)
        b.set_event_callback(b_events)
        alice = a.setup("Alice", PIN, PIN)
        bob_node = b.setup("Bobby", "975310", "975310")
        assert alice.user_id != bob_node.user_id
        a.add_contact(bob_node.card)
        b.add_contact(alice.card)
        a.lock()  # manual: an auto-lock this short would race the unlocked calls below
        a_events.wait_for(lambda k, d: k == EventKind.LOCKED)
        assert a.status().locked and not b.status().locked
        assert [c.name for c in b.contacts()] == ["Alice"]
        with pytest.raises(yaok.Locked):
            a.contacts()
        with pytest.raises(yaok.WrongPIN):
            a.unlock("975310")  # b's PIN is not a's
        a.unlock(PIN)
        assert [c.name for c in a.contacts()] == ["Bobby"]
        # Each node has its own event thread, and events do not cross over.
        a_threads = {tid for _, _, tid in a_events.snapshot()}
        b_threads = {tid for _, _, tid in b_events.snapshot()}
        assert len(a_threads) == 1 and len(b_threads) == 1 and a_threads != b_threads
        assert EventKind.LOCKED not in b_events.kinds()


def test_many_threads_and_callbacks_on_one_node(node, bob):
    bob_id = node.add_contact(bob.card).id
    stored = Recorder()
    node.set_event_callback(stored)
    errors: List[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(25):
                node.send(bob_id, f"w{worker} m{i}")
                node.status()
                node.history(bob_id, limit=5)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT)
    assert not errors
    assert len(node.history(bob_id, limit=1000).messages) == 100
    with stored.changed:
        assert stored.changed.wait_for(
            lambda: sum(1 for k, _, _ in stored.seen if k == EventKind.MESSAGE_STORED) == 100, WAIT)


def test_a_forgotten_node_with_a_callback_is_closed_by_gc(tmp_path):
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    registration = node.set_event_callback(Recorder())
    handle = node._handle
    del node
    gc.collect()
    assert handle.freed and registration.freed.is_set()


def test_interpreter_exit_with_an_open_node_and_a_busy_callback(tmp_path):
    """A node left open at exit is closed by the atexit hook while callbacks can still run."""
    import subprocess
    import sys
    import textwrap
    script = textwrap.dedent(f"""
        import threading, yaok
        node = yaok.Node.open({str(tmp_path / 'n')!r}, test_fast_kdf=True)
        seen = threading.Event()
        def callback(kind, data):
            seen.set()
            node.status()
        keep = node.set_event_callback(callback)
        node.setup("Alice", "{PIN}", "{PIN}")
        node.set_auto_lock(timeout_ms=10)
        seen.wait(30)
        print("exiting")
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"
    assert "Exception ignored" not in result.stderr and "Fatal" not in result.stderr
