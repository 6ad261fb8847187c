"""Run by scripts/test-packaging with the interpreter of a fresh venv into which only the
wheel was installed, under `env -i` (no Swift toolchain on PATH, no LD_LIBRARY_PATH, no
YAOK_LIBRARY, outside the repository): the bundled library must be the one loaded, and a
real node must work with it."""

import os
import sys
import tempfile
from pathlib import Path

import yaok

package_dir = Path(yaok.__file__).resolve().parent
assert "site-packages" in package_dir.parts, package_dir
assert Path(yaok.library_path).resolve() == package_dir / "libyaok.so.1", yaok.library_path
assert "YAOK_LIBRARY" not in os.environ and "LD_LIBRARY_PATH" not in os.environ
# Nothing in this process came from the Swift toolchain.
with open("/proc/self/maps") as maps:
    swift = sorted({line.split()[-1] for line in maps if "/opt/swift" in line or "libswiftCore" in line})
assert not swift, swift
print(f"yaok {yaok.version_string()} (ABI {yaok.abi_version()}) from {yaok.library_path}")

# Two nodes on disk (the production PIN hashing: this is no test build), set up, exchange
# cards, send; the message waits in the outbox.
with tempfile.TemporaryDirectory() as home:
    with yaok.Node.open(Path(home) / "alice") as alice, \
            yaok.Node.open(Path(home) / "bob") as bob:
        alice.setup("Alice", "482916", "482916")
        bob_setup = bob.setup("Bob", "482916", "482916")
        preview = alice.preview_contact(bob_setup.card)
        assert preview.name == "Bob", preview
        contact = alice.add_contact(bob_setup.card)
        bob.add_contact(alice.profile().card)
        sent = alice.send(contact.id, "Hello from the wheel")
        page = alice.history(contact.conversation_id)
        assert [m.text for m in page.messages] == ["Hello from the wheel"], page
        assert [e.message_id for e in alice.outbox()] == [sent.message_id]
        print(f"Alice added {contact.name} ({preview.fingerprint}) and queued {sent.message_id_hex}")
print("wheel check passed")
sys.exit(0)
