"""Several threads at once: shared handles, per-thread error messages, close during use."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import yaok
from yaok import envelope

THREADS = 8
ROUNDS = 60


def test_many_threads_seal_and_open_with_shared_handles(alice, bob, alice_card, bob_card, eve_card):
    def work(worker: int) -> int:
        done = 0
        for i in range(ROUNDS):
            body = f"worker {worker} message {i}".encode() * (1 + i % 20)
            mid = worker.to_bytes(8, "big") + i.to_bytes(8, "big")
            sealed = envelope.seal(alice, bob_card, body, mid, 1000 + i)
            opened = envelope.open(bob, [eve_card, alice_card], sealed, mid, 1000 + i)
            assert opened == (body, 1)
            # and back the other way, from bob to alice
            sealed = envelope.seal(bob, alice_card, body, mid, 2000 + i)
            assert envelope.open(alice, [bob_card], sealed, mid, 2000 + i) == (body, 0)
            done += 1
        return done

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(work, range(THREADS))) == THREADS * ROUNDS


def test_each_thread_sees_its_own_error_message():
    """yaok_last_error_message() is per thread: concurrent failures never swap messages."""
    barrier = threading.Barrier(THREADS)
    cases = [
        (lambda: yaok.Identity.new("A"), yaok.InvalidName, "Name must be 2-50 characters"),
        (lambda: yaok.Card.decode("not a card"), yaok.InvalidCard,
         "Invalid Ya OK QR code: not a Ya OK card (Ya OK card text starts with yaok:1: or yaok:2:)"),
        (lambda: yaok.Identity.restore("Alice", bytes(3)), yaok.InvalidArgument, "secrets must be 64 bytes"),
        (lambda: yaok.Identity.new("Al\udcff"), yaok.InvalidUTF8, "name is not valid UTF-8"),
    ]

    def work(worker: int) -> int:
        action, cls, message = cases[worker % len(cases)]
        barrier.wait()
        mismatches = 0
        for _ in range(200):
            try:
                action()
            except cls as e:
                mismatches += e.message != message
            else:
                mismatches += 1
        return mismatches

    with ThreadPoolExecutor(THREADS) as pool:
        assert sum(pool.map(work, range(THREADS))) == 0


def test_identities_created_on_many_threads_are_independent():
    with ThreadPoolExecutor(THREADS) as pool:
        fingerprints = list(pool.map(lambda i: _fingerprint_of_new(f"Person {i}"), range(64)))
    assert len(set(fingerprints)) == 64


def _fingerprint_of_new(name: str) -> str:
    with yaok.Identity.new(name) as identity:
        return identity.fingerprint


def test_close_while_other_threads_use_the_object(alice, bob):
    """Closing a card that other threads are sealing to: each call either completes or
    raises HandleClosed; nothing crashes and the handle is freed once."""
    for _ in range(5):
        card = yaok.Card.decode(bob.card)
        started = threading.Barrier(THREADS + 1)
        outcomes = []
        lock = threading.Lock()

        def work() -> None:
            started.wait()
            for i in range(100):
                try:
                    envelope.seal(alice, card, b"racing", bytes(16), i)
                    result = "sealed"
                except yaok.HandleClosed:
                    result = "closed"
                with lock:
                    outcomes.append(result)

        threads = [threading.Thread(target=work) for _ in range(THREADS)]
        for t in threads:
            t.start()
        started.wait()
        card.close()
        for t in threads:
            t.join()
        assert len(outcomes) == THREADS * 100
        assert set(outcomes) <= {"sealed", "closed"}
        assert outcomes[-1] == "closed" or card.closed


def test_calls_release_the_gil():
    """ctypes releases the GIL around calls through CDLL functions, but not PyDLL ones
    (FUNCFLAG_PYTHONAPI): check the mechanism rather than timings, which flake on a busy machine."""
    import ctypes
    from yaok import _lib
    assert type(_lib.lib) is ctypes.CDLL
    for name in ("yaok_envelope_seal", "yaok_envelope_open", "yaok_identity_new"):
        assert not getattr(_lib.lib, name)._flags_ & ctypes._FUNCFLAG_PYTHONAPI, name
