"""Forward secrecy per contact through the binding (Node.forward_secrecy over
yaok_contact_forward_secrecy; docs/PROTOCOL.md §13): the first message to a contact added
by its version 1 card goes to its long-term key (NOT_YET, counted); by its version 2 card,
to its prekey (PREKEY, with the exposure end); once the contact's ack has announced a
receiver key over a memory link, ON."""

import time

import pytest

import yaok
from yaok import ForwardSecrecyState, LinkRole

from conftest import PIN
from test_links import PipeEnd, wait


def test_forward_secrecy_is_reported_per_contact(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        bob_id = alice.add_contact(bob.identity().card).id  # version 1: no prekey
        alice_id = bob.add_contact(alice.identity().card).id
        assert alice.forward_secrecy(bob_id) == yaok.ForwardSecrecy(ForwardSecrecyState.NOT_YET, 0, 0)

        message = alice.send(bob_id, "first")
        status = alice.forward_secrecy(bob_id)
        assert status.state is ForwardSecrecyState.NOT_YET and status.long_term_seals == 1

        to_bob, to_alice = PipeEnd(), PipeEnd()
        b_link = bob.open_link("memory", LinkRole.RESPONDER, 1024, to_alice.send)
        a_link = alice.open_link("memory", LinkRole.INITIATOR, 1024, to_bob.send)
        to_alice.connect(a_link)
        to_bob.connect(b_link)
        wait(lambda: alice.message(message.message_id).status is yaok.MessageStatus.DELIVERED)
        wait(lambda: alice.forward_secrecy(bob_id).state is ForwardSecrecyState.ON)
        status = alice.forward_secrecy(bob_id)
        # Alice mints her own receiver key for Bob when she next announces; Bob minted his.
        assert status.long_term_seals == 1 and status.receiver_keys == 0
        assert bob.forward_secrecy(alice_id) == yaok.ForwardSecrecy(ForwardSecrecyState.NOT_YET, 0, 1)
        contacts = alice.diagnostics()["contacts"]
        assert contacts[0]["forward_secrecy"]["state"] == "on"

        with pytest.raises(yaok.NotFound):
            alice.forward_secrecy(999)
        with pytest.raises(TypeError):
            alice.forward_secrecy("Bob")  # type: ignore[arg-type]
        with to_alice.lock, to_bob.lock:
            to_alice.target = to_bob.target = None
        a_link.close()
        b_link.close()
        alice.lock()
        with pytest.raises(yaok.Locked):
            alice.forward_secrecy(bob_id)


def test_a_version_2_card_seals_the_first_messages_to_its_prekey(tmp_path):
    with yaok.Node.open(tmp_path / "a", test_fast_kdf=True) as alice, \
            yaok.Node.open(tmp_path / "b", test_fast_kdf=True) as bob:
        alice.setup("Alice", PIN, PIN)
        bob.setup("Bob", PIN, PIN)
        card = bob.profile().card
        assert card.startswith("yaok:2:")
        bob_id = alice.add_contact(card).id
        alice.send(bob_id, "first")
        status = alice.forward_secrecy(bob_id)
        assert status.state is ForwardSecrecyState.PREKEY and status.long_term_seals == 0
        day = 86_400_000
        today = int(time.time() * 1000) // day
        assert status.prekey_exposure_until_ms in ((today + 23) * day, (today + 24) * day)
        assert alice.diagnostics()["contacts"][0]["forward_secrecy"]["prekey_exposure_until_ms"] == \
            status.prekey_exposure_until_ms
        with pytest.raises(yaok.ContactExists, match="^Bob is already in your contacts$"):
            alice.add_contact(card)
