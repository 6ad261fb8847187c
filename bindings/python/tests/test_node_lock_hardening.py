"""Issue 8 through the binding: passphrases and their strength, the device secret, refused
unlocks that do not count, the vault's costs in the status, and the test-only costs opt-in."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import yaok

from conftest import PIN


def test_check_secret_reports_strength_and_refuses_what_setup_refuses():
    assert yaok.check_secret("135790") == yaok.SecretStrength(yaok.Strength.WEAK, 19)
    assert yaok.check_secret("correct horse battery staple") == yaok.SecretStrength(yaok.Strength.FAIR, 55)
    strong = yaok.check_secret("correct horse battery staple cloud")
    assert strong.strength is yaok.Strength.STRONG and strong.strength == "strong" and strong.estimated_bits == 68
    with pytest.raises(yaok.PINTooShort, match="^PIN must be at least 6 digits$"):
        yaok.check_secret("")
    with pytest.raises(yaok.PINTooShort, match="^Passphrase must be at least 6 characters$"):
        yaok.check_secret("abc")
    with pytest.raises(yaok.InvalidArgument):
        yaok.check_secret("x" * 257)
    with pytest.raises(yaok.InvalidArgument):
        yaok.check_secret("tab\there")


def test_a_passphrase_sets_up_and_unlocks(fresh_node):
    phrase = "Tr0ub4dor&3 is not enough"
    result = fresh_node.setup("Alice", phrase, phrase)
    assert result.strength.strength in (yaok.Strength.FAIR, yaok.Strength.STRONG)
    fresh_node.lock()
    with pytest.raises(yaok.WrongPIN):
        fresh_node.unlock(phrase.upper())
    fresh_node.unlock(phrase)


def test_refused_unlocks_do_not_count(node):
    for _ in range(4):
        with pytest.raises(yaok.AlreadyUnlocked):
            node.unlock("000000")
    node.lock()
    for bad in ("", "12"):
        with pytest.raises(yaok.PINTooShort):
            node.unlock(bad)
    with pytest.raises(yaok.InvalidArgument):
        node.unlock("1" * 300)
    assert node.status().failed_attempts == 0
    node.unlock(PIN)


def test_status_shows_the_vault_costs(fresh_node):
    assert fresh_node.status().vault is None
    fresh_node.setup("Alice", PIN, PIN)
    vault = fresh_node.status().vault
    assert vault == yaok.VaultStatus(ops_limit=1, mem_limit=8192, meets_production_minimum=False,
                                     device_bound=False, kdf="argon2id13")


def test_device_secret_binds_the_vault(tmp_path):
    path = tmp_path / "bound"
    secret = bytearray(range(32))
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        with pytest.raises(yaok.InvalidArgument):
            node.set_device_secret(b"short")
        with pytest.raises(TypeError):
            node.set_device_secret("not bytes")  # type: ignore[arg-type]
        node.set_device_secret(secret)
        node.setup("Alice", PIN, PIN)
        status = node.status()
        assert status.vault is not None and status.vault.device_bound
    with yaok.Node.open(path, test_fast_kdf=True) as node:
        with pytest.raises(yaok.DeviceSecretRequired):
            node.unlock(PIN)
        node.set_device_secret(bytes(32))
        with pytest.raises(yaok.WrongDeviceSecret):
            node.unlock(PIN)
        assert node.status().failed_attempts == 0
        node.set_device_secret(memoryview(bytes(secret)))
        node.unlock(PIN)
        node.set_device_secret(None)


def test_test_only_costs_need_the_opt_in(tmp_path):
    """In a process without YAOK_TEST_INSECURE_KDF=1 the test flag is refused, and a vault
    sealed with test-only costs does not open."""
    test_vault = tmp_path / "test-vault"
    with yaok.Node.open(test_vault, test_fast_kdf=True) as node:
        node.setup("Alice", PIN, PIN)
    script = textwrap.dedent(f"""
        import yaok
        try:
            yaok.Node.open({str(tmp_path / 'other')!r}, test_fast_kdf=True)
            print("opened")
        except yaok.InvalidArgument as e:
            print("refused:", e.message)
        with yaok.Node.open({str(test_vault)!r}) as node:
            status = node.status()
            print("production:", status.vault.meets_production_minimum)
            try:
                node.unlock({PIN!r})
                print("unlocked")
            except yaok.CorruptStore as e:
                print("corrupt:", e.message)
            print("failures:", node.status().failed_attempts)
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != yaok.node.TEST_INSECURE_KDF_VARIABLE}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("refused: YAOK_NODE_OPEN_TEST_FAST_KDF is for tests only")
    assert lines[1] == "production: False"
    assert lines[2].startswith("corrupt: The vault was sealed with test-only PIN hashing costs")
    assert lines[3] == "failures: 0"
