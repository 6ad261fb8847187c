"""Shared fixtures. The binding must load the library: a missing libyaok fails the whole run
(scripts/test-python builds nothing; run scripts/build-lib first) rather than skipping.
Importing yaok does not load it, so it is loaded here, once, before any test runs."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, Iterator, List

import pytest

import yaok

# The test-only opt-in that test_fast_kdf=True needs; the library reads it once, so it is set
# before anything opens a node (test_node.py checks a process without it).
os.environ["YAOK_TEST_INSECURE_KDF"] = "1"
yaok.load_library()

REPO = Path(__file__).resolve().parents[3]
HEADER = REPO / "include" / "yaok.h"

# Fixed key material for reproducible checks: X25519 secret (32) || Ed25519 seed (32).
ALICE_SECRETS = bytes(range(0, 64))
BOB_SECRETS = bytes(range(64, 128))
EVE_SECRETS = bytes(range(128, 192))

MESSAGE_ID = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
TIMESTAMP_MS = 1_700_000_000_000


def header_text() -> str:
    return HEADER.read_text(encoding="utf-8")


def header_status_codes() -> Dict[str, int]:
    """YAOK_OK and YAOK_E_* -> value, from the header's status enum."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^\s*YAOK_(OK|E_\w+)\s*=\s*(\d+)", header_text(), re.M)}


def header_defines() -> Dict[str, int]:
    """Every `#define YAOK_<NAME> <integer>`."""
    return {m.group(1): int(m.group(2))
            for m in re.finditer(r"^#define\s+YAOK_(\w+)\s+(\d+)\b", header_text(), re.M)}


def header_int_defines() -> Dict[str, int]:
    """Every integer `#define YAOK_<NAME>`, also hex, `u`-suffixed and parenthesised
    negative values (`0x52534554u`, `1u`, `(-1)`)."""
    pattern = r"^#define\s+YAOK_(\w+)\s+\(?(-?(?:0x[0-9A-Fa-f]+|\d+))[uU]?\)?(?=\s|$)"
    return {m.group(1): int(m.group(2), 0) for m in re.finditer(pattern, header_text(), re.M)}


def header_functions() -> List[str]:
    """Names of the functions the header declares (prototypes, not typedefs)."""
    text = re.sub(r"/\*.*?\*/", "", header_text(), flags=re.S)
    return sorted(set(m.group(1) for m in re.finditer(r"^(?!typedef)[\w \t\*]*?\b(yaok_\w+)\s*\(", text, re.M)))


@pytest.fixture
def alice() -> Iterator[yaok.Identity]:
    with yaok.Identity.restore("Alice", ALICE_SECRETS) as identity:
        yield identity


@pytest.fixture
def bob() -> Iterator[yaok.Identity]:
    with yaok.Identity.restore("Bob", BOB_SECRETS) as identity:
        yield identity


@pytest.fixture
def eve() -> Iterator[yaok.Identity]:
    with yaok.Identity.new("Eve") as identity:
        yield identity


@pytest.fixture
def alice_card(alice: yaok.Identity) -> Iterator[yaok.Card]:
    with yaok.Card.decode(alice.card) as card:
        yield card


@pytest.fixture
def bob_card(bob: yaok.Identity) -> Iterator[yaok.Card]:
    with yaok.Card.decode(bob.card) as card:
        yield card


@pytest.fixture
def eve_card(eve: yaok.Identity) -> Iterator[yaok.Card]:
    with yaok.Card.decode(eve.card) as card:
        yield card


# ---- nodes (tests use YAOK_NODE_OPEN_TEST_FAST_KDF unless they test the real costs)

PIN = "135790"


@pytest.fixture
def fresh_node(tmp_path) -> Iterator[yaok.Node]:
    """A node that is not set up yet, in its own directory."""
    with yaok.Node.open(tmp_path / "node", test_fast_kdf=True) as node:
        yield node


@pytest.fixture
def node(fresh_node: yaok.Node) -> yaok.Node:
    """Alice's node, set up with PIN and unlocked."""
    fresh_node.setup("Alice", PIN, PIN)
    return fresh_node
