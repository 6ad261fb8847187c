"""yaok.Node: opening, setup, the app lock (PIN, lockout, platform key, auto-lock), reset."""

from __future__ import annotations

import re

import pytest

import yaok
from yaok import contacts, events, messages, node as node_module

from conftest import PIN, header_int_defines


def test_node_constants_match_header():
    d = header_int_defines()
    assert node_module.NODE_OPEN_DEFAULT == d["NODE_OPEN_DEFAULT"]
    assert node_module.NODE_OPEN_TEST_FAST_KDF == d["NODE_OPEN_TEST_FAST_KDF"]
    assert node_module.AUTO_LOCK_NEVER == d["AUTO_LOCK_NEVER"] == -1
    assert node_module.RESET_CONFIRM == d["RESET_CONFIRM"] == int.from_bytes(b"RSET", "big")
    assert node_module.PLATFORM_KEY_BYTES == d["PLATFORM_KEY_BYTES"]
    assert node_module.DEVICE_SECRET_BYTES == d["DEVICE_SECRET_BYTES"]
    assert {s.code: s.name for s in yaok.Strength} == {v: k[len("STRENGTH_"):] for k, v in d.items()
                                                       if k.startswith("STRENGTH_")}
    assert yaok.NodeWarning.ALL_ZERO_PIN == d["WARNING_ALL_ZERO_PIN"]
    assert yaok.NodeWarning.AUTO_LOCK_DISABLED == d["WARNING_AUTO_LOCK_DISABLED"]
    assert contacts.CONTACT_DELETE_KEEP_MESSAGES == d["CONTACT_DELETE_KEEP_MESSAGES"]
    assert contacts.CONTACT_DELETE_MESSAGES == d["CONTACT_DELETE_MESSAGES"]
    assert messages.MESSAGE_ID_BYTES == d["MESSAGE_ID_BYTES"]
    for status in yaok.MessageStatus:
        assert status.code == d[f"MESSAGE_{status.name}"]
    header_statuses = {k[len("MESSAGE_"):] for k in d if k.startswith("MESSAGE_") and k != "MESSAGE_ID_BYTES"}
    assert header_statuses == {s.name for s in yaok.MessageStatus}
    for kind in events.EventKind:
        assert kind == d[f"EVENT_{kind.name}"]
    assert {k[len("EVENT_"):] for k in d if k.startswith("EVENT_")} == {k.name for k in events.EventKind}


def test_open_refuses_the_constructor_and_bad_paths(tmp_path):
    with pytest.raises(TypeError):
        yaok.Node()
    with pytest.raises(TypeError):
        yaok.Node.open(42)
    with pytest.raises(yaok.InvalidArgument):
        yaok.Node.open(str(tmp_path) + "/a\0b")


def test_a_new_node_is_locked_and_not_set_up(fresh_node):
    status = fresh_node.status()
    assert status == yaok.NodeStatus(initialized=False, locked=True, lockout_seconds=0, failed_attempts=0,
                                      auto_lock_ms=300_000, platform_key_registered=False)
    assert status.auto_lock_ms == 5 * 60 * 1000
    assert not hasattr(status, "auto_lock_seconds")  # one unit for auto-lock: milliseconds
    with pytest.raises(yaok.NotInitialized):
        fresh_node.unlock(PIN)
    with pytest.raises(yaok.Locked):
        fresh_node.contacts()


def test_setup_validation_messages(fresh_node):
    with pytest.raises(yaok.InvalidName, match="^Name must be 2-50 characters$"):
        fresh_node.setup("A", PIN, PIN)
    with pytest.raises(yaok.PINTooShort, match="^PIN must be at least 6 digits$"):
        fresh_node.setup("Alice", "12345", "12345")
    with pytest.raises(yaok.PINTooShort, match="^Passphrase must be at least 6 characters$"):
        fresh_node.setup("Alice", "abcde", "abcde")
    with pytest.raises(yaok.InvalidArgument):
        fresh_node.setup("Alice", "abc\ndef", "abc\ndef")
    with pytest.raises(yaok.PINMismatch, match="^PINs do not match$") as info:
        fresh_node.setup("Alice", "123456", "654321")
    assert info.value.status == yaok.Status.PIN_MISMATCH
    # The name is checked first.
    with pytest.raises(yaok.InvalidName):
        fresh_node.setup("A", "1", "2")
    # Every defect of a name is InvalidName (PROTOCOL.md §1), one over 4,096 bytes and one
    # with a NUL included.
    with pytest.raises(yaok.InvalidName):
        fresh_node.setup("A" * 4097, PIN, PIN)
    with pytest.raises(yaok.InvalidName):
        fresh_node.setup("Al\0ice", PIN, PIN)
    with pytest.raises(TypeError):
        fresh_node.setup("Alice", 135790, 135790)
    assert fresh_node.status().initialized is False


def test_setup_returns_identity_and_warnings(fresh_node, tmp_path):
    result = fresh_node.setup("  Alice  ", PIN, PIN)
    assert result.name == "Alice"
    assert re.fullmatch(r"[0-9a-f]{32}", result.user_id)
    assert re.fullmatch(r"[0-9A-F]{64}", result.fingerprint)
    assert result.fingerprint_short == result.fingerprint[:6]
    assert result.warnings == yaok.NodeWarning.NONE and not result.warnings
    assert result.strength == yaok.SecretStrength(strength=yaok.Strength.WEAK, estimated_bits=19)
    with yaok.Card.decode(result.card) as card:
        assert card.name == "Alice" and card.fingerprint == result.fingerprint
    with fresh_node.identity() as me:
        assert me.user_id == result.user_id
    profile = fresh_node.profile()
    assert (profile.name, profile.user_id, profile.fingerprint, profile.card) == \
        (result.name, result.user_id, result.fingerprint, result.card)
    fresh_node.lock()
    with pytest.raises(yaok.Locked):
        fresh_node.profile()
    fresh_node.unlock(PIN)
    status = fresh_node.status()
    assert status.initialized and not status.locked
    with pytest.raises(yaok.AlreadyInitialized):
        fresh_node.setup("Alice", PIN, PIN)

    with yaok.Node.open(tmp_path / "zeros", test_fast_kdf=True) as other:
        assert other.setup("Zed Zero", "000000", "000000").warnings == yaok.NodeWarning.ALL_ZERO_PIN


def test_wrong_pin_and_unlock(node):
    node.lock()
    assert node.status().locked
    with pytest.raises(yaok.WrongPIN, match="^Incorrect PIN$"):
        node.unlock("000000")
    assert node.status().failed_attempts == 1
    node.unlock(PIN)
    status = node.status()
    assert not status.locked and status.failed_attempts == 0


def test_lock_makes_key_calls_raise_locked(node, bob):
    node.lock()
    node.lock()  # a no-op when locked
    for call in (node.contacts, lambda: node.contact(1), lambda: node.add_contact(bob.card),
                 lambda: node.history(1), lambda: node.send(1, "hi"), node.identity,
                 lambda: node.security_events(), lambda: node.mark_read(1),
                 lambda: node.set_auto_lock(timeout_ms=60_000), lambda: node.register_platform_key(bytes(32))):
        with pytest.raises(yaok.Locked) as info:
            call()
        assert info.value.status == 400 and isinstance(info.value, yaok.StoreError)
    assert node.status().locked  # status works while locked


def test_lockout_after_three_wrong_pins_persists_across_reopen(tmp_path):
    path = tmp_path / "node"
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        node.setup("Alice", PIN, PIN)
        node.lock()
        with pytest.raises(yaok.WrongPIN, match="^Incorrect PIN$"):
            node.unlock("111111")
        with pytest.raises(yaok.WrongPIN, match="^Incorrect PIN$"):
            node.unlock("222222")
        with pytest.raises(yaok.LockedOut, match=r"^Too many attempts\. Try again in 30 seconds\.$"):
            node.unlock("333333")
        # During the lockout even the right PIN is not checked.
        with pytest.raises(yaok.LockedOut, match=r"^Too many attempts\. Try again in \d+ seconds\.$"):
            node.unlock(PIN)
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        with pytest.raises(yaok.LockedOut) as info:
            node.unlock(PIN)
        m = re.fullmatch(r"Too many attempts\. Try again in (\d+) seconds\.", info.value.message)
        assert m and 0 < int(m.group(1)) <= 30
        status = node.status()
        assert status.locked and 0 < status.lockout_seconds <= 30


def test_platform_key_unlock(node):
    key = bytes(range(32))
    with pytest.raises(yaok.InvalidArgument, match="32 bytes"):
        node.register_platform_key(key[:5])
    with pytest.raises(TypeError):
        node.register_platform_key("not bytes")
    node.lock()
    with pytest.raises(yaok.NoPlatformKey):
        node.unlock_with_platform_key(key)
    node.unlock(PIN)
    node.register_platform_key(key)
    assert node.status().platform_key_registered
    node.lock()
    with pytest.raises(yaok.WrongPlatformKey):
        node.unlock_with_platform_key(bytes(32))
    node.unlock_with_platform_key(memoryview(key))
    assert not node.status().locked

    # A bytearray is lent without a copy, so the caller can wipe it afterwards.
    wipeable = bytearray(b"\x42" * 32)
    node.register_platform_key(wipeable)
    node.lock()
    node.unlock_with_platform_key(wipeable)
    wipeable[:] = bytes(32)
    node.lock()
    with pytest.raises(yaok.WrongPlatformKey):
        node.unlock_with_platform_key(wipeable)
    node.unlock(PIN)  # the PIN keeps working

    node.remove_platform_key()
    node.remove_platform_key()  # a no-op without a key
    assert not node.status().platform_key_registered
    node.lock()
    with pytest.raises(yaok.NoPlatformKey):
        node.unlock_with_platform_key(b"\x42" * 32)


def test_platform_key_works_during_a_pin_lockout(node):
    key = b"\x07" * 32
    node.register_platform_key(key)
    node.lock()
    for pin in ("111111", "222222", "333333"):
        with pytest.raises((yaok.WrongPIN, yaok.LockedOut)):
            node.unlock(pin)
    with pytest.raises(yaok.LockedOut):
        node.unlock(PIN)
    node.unlock_with_platform_key(key)
    kinds = [e.kind for e in node.security_events()]
    assert "lockout" in kinds and kinds.count("wrong_pin") >= 2 and kinds[-1] == "unlocked_platform_key"


def test_set_auto_lock(node):
    assert node.set_auto_lock(timeout_ms=None) == yaok.NodeWarning.AUTO_LOCK_DISABLED
    assert node.status().auto_lock_ms is None
    assert node.set_auto_lock(timeout_ms=60_000) == yaok.NodeWarning.NONE
    assert node.status().auto_lock_ms == 60_000
    node.set_auto_lock(timeout_ms=30 * 24 * 3600 * 1000)  # the longest
    assert node.status().auto_lock_ms == 30 * 24 * 3600 * 1000
    node.set_auto_lock(timeout_ms=600_000)
    for bad in (0, -1, -600_000, 30 * 24 * 3600 * 1000 + 1, 1 << 63, 1 << 64):
        with pytest.raises(yaok.InvalidArgument):
            node.set_auto_lock(timeout_ms=bad)
    for wrong in ("60", True, 0.5, 60_000.0, float("nan"), float("inf")):
        with pytest.raises(TypeError):
            node.set_auto_lock(timeout_ms=wrong)
    # Milliseconds, by name only: a caller still passing seconds positionally fails loudly
    # instead of getting a 60 ms auto-lock.
    with pytest.raises(TypeError):
        node.set_auto_lock(60)  # type: ignore[misc]
    with pytest.raises(TypeError):
        node.set_auto_lock(seconds=60)  # type: ignore[call-arg]
    assert node.status().auto_lock_ms == 600_000
    # The shortest (last: the node may lock itself at once; status() works while locked).
    assert node.set_auto_lock(timeout_ms=1) == yaok.NodeWarning.NONE
    assert node.status().auto_lock_ms == 1


def test_reset_needs_confirmation(node, bob):
    node.add_contact(bob.card)
    with pytest.raises(yaok.ConfirmationRequired):
        node.reset()
    with pytest.raises(yaok.ConfirmationRequired):
        node.reset(confirm=1)
    assert node.status().initialized
    node.reset(confirm=True)
    status = node.status()
    assert not status.initialized and status.locked
    node.setup("Alice", PIN, PIN)
    assert node.contacts() == []
    assert [e.kind for e in node.security_events()][:1] == ["reset"]


def test_close_is_idempotent_and_blocks_further_use(tmp_path):
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    assert not node.closed and "closed" not in repr(node)
    node.close()
    node.close()
    assert node.closed and "closed" in repr(node)
    with pytest.raises(yaok.HandleClosed, match="Node is closed"):
        node.status()
    with pytest.raises(yaok.HandleClosed):
        node.set_event_callback(lambda kind, data: None)


def test_reopening_keeps_the_profile(tmp_path, bob):
    path = tmp_path / "n"
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        node.setup("Alice", PIN, PIN)
        bob_id = node.add_contact(bob.card).id
        node.send(bob_id, "kept")
    with yaok.Node.open(str(path), test_fast_kdf=True) as node:
        assert node.status().initialized and node.status().locked
        node.unlock(PIN)
        assert [c.name for c in node.contacts()] == ["Bob"]
        assert [m.text for m in node.history(bob_id).messages] == ["kept"]


def test_forgotten_node_is_freed_by_the_garbage_collector(tmp_path):
    import gc
    node = yaok.Node.open(tmp_path / "n", test_fast_kdf=True)
    handle = node._handle
    del node
    gc.collect()
    assert handle.freed


def test_real_default_kdf(tmp_path):
    """The one test with the real Argon2id costs (64 MiB, 2 passes): no speed assertion."""
    path = tmp_path / "real"
    with yaok.Node.open(path) as node:
        node.setup("Alice", PIN, PIN)
        node.lock()
        with pytest.raises(yaok.WrongPIN):
            node.unlock("975310")
        node.unlock(PIN)
        assert not node.status().locked
    # A node sealed with the real costs opens the same way with the test flag: the costs
    # are stored with the vault.
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        node.unlock(PIN)
        assert node.status().initialized
