"""Several threads at once: shared handles, per-thread error messages, close during use."""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

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
        (lambda: yaok.Card.decode("not a card"), yaok.InvalidCard, "Invalid Ya OK QR code"),
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


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="needs two cores to show parallelism")
def test_calls_release_the_gil(alice, bob_card):
    """ctypes releases the GIL around foreign calls, so sealing on two threads overlaps:
    a sanity check that the binding does not use PyDLL or hold a global lock."""
    import time
    body = bytes(10_000)

    def burst() -> float:
        start = time.perf_counter()
        for i in range(150):
            envelope.seal(alice, bob_card, body, bytes(16), i)
        return time.perf_counter() - start

    burst()  # warm up
    serial = burst() + burst()
    start = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda _: burst(), range(2)))
    parallel = time.perf_counter() - start
    assert parallel < serial * 0.9, (serial, parallel)
