"""Embedding Ya OK core from Python: two identities exchange contact cards and one sends the
other an end-to-end encrypted message.

    scripts/build-lib && PYTHONPATH=bindings/python python3 examples/python/seal_and_open.py
"""

import os
import time

import yaok


def main() -> None:
    with yaok.Identity.new("Alice") as alice, yaok.Identity.new("Bob") as bob, \
            yaok.Card.decode(alice.card) as alice_card, yaok.Card.decode(bob.card) as bob_card:
        print(f"Alice scanned {bob_card.name}, fingerprint {bob_card.fingerprint_grouped}")

        message_id = os.urandom(16)
        now_ms = int(time.time() * 1000)
        sealed = yaok.envelope.seal(alice, bob_card, "Meet at the library at 6".encode(), message_id, now_ms)
        print(f"Sealed into {len(sealed)} bytes")

        body, sender = yaok.envelope.open(bob, [alice_card], sealed, message_id, now_ms)
        print(f"Bob read from contact #{sender}: {body.decode()}")

        try:
            with yaok.Identity.new("Eve") as eve:
                yaok.envelope.open(eve, [alice_card], sealed, message_id, now_ms)
        except yaok.NotForMe as error:
            print(f"Eve cannot open it: {error}")


if __name__ == "__main__":
    main()
