"""docs/PROTOCOL.md §11 "Reconciliation", implemented again from the text alone (hashlib's
BLAKE2b, no core code): every message of the document's transcripts is recomputed byte for
byte. It follows the algorithm where the vectors go (no message reaches a limit, so the
cutting rules are not exercised here; the Swift tests and the fuzzer cover them)."""

from __future__ import annotations

import hashlib
from typing import Dict, List, Optional, Tuple

import pytest

from test_protocol_vectors import VECTORS as ALL_VECTORS

L, BUCKETS, T = 16, 8, 16
KEY = b"YaOK-reconcile-v1"
INF = 2**64 - 1
Bound = Tuple[int, bytes]
Item = Tuple[int, bytes]
Range = Tuple[Bound, int, object]  # (upper bound, mode, payload)


VECTORS = {k: v for k, v in ALL_VECTORS.items() if k.startswith("reconcile-")}


def item(i: int) -> Item:
    return (1_800_000_000 + 60 * (i // 4), hashlib.blake2b(b"item" + i.to_bytes(4, "big"), digest_size=16).digest())


def store(spec: str) -> List[Item]:
    indexes = set()
    for word in spec.split():
        if word.startswith("-"):
            indexes.discard(int(word[1:]))
        elif word.startswith("+"):
            indexes.add(int(word[1:]))
        else:
            a, _, b = word.partition("-")
            indexes.update(range(int(a), int(b or a) + 1))
    return sorted(item(i) for i in indexes)


def id_sum(items: List[Item]) -> bytes:
    return (sum(int.from_bytes(i, "little") for _, i in items) % 2 ** (8 * L)).to_bytes(L, "little")


def fingerprint(items: List[Item]) -> bytes:
    return hashlib.blake2b(id_sum(items) + len(items).to_bytes(8, "big"), digest_size=16, key=KEY).digest()


def varint(v: int) -> bytes:
    digits = [v & 0x7F]
    v >>= 7
    while v:
        digits.insert(0, 0x80 | (v & 0x7F))
        v >>= 7
    return bytes(digits)


def read_varint(b: bytes, at: int) -> Tuple[int, int]:
    v = 0
    while True:
        v = v << 7 | (b[at] & 0x7F)
        at += 1
        if not b[at - 1] & 0x80:
            return v, at


def ids_bytes(ids: List[bytes]) -> bytes:
    return varint(len(ids)) + b"".join(ids)


def encode(ranges: List[Range]) -> bytes:
    out, previous = bytearray([1, 1]) + varint(len(ranges)), 0
    for (expiry, prefix), mode, payload in ranges:
        if expiry == INF:
            out += varint(0)
        else:
            out += varint(expiry - previous + 1)
            previous = expiry
        out += bytes([len(prefix)]) + prefix + bytes([mode])
        if mode == 1:
            out += payload
        elif mode == 2:
            out += ids_bytes(payload)
        elif mode == 3:
            out += ids_bytes(payload[0]) + ids_bytes(payload[1])
    return bytes(out)


def decode(b: bytes) -> List[Range]:
    assert b[:2] == bytes([1, 1])
    count, at = read_varint(b, 2)
    ranges, previous = [], 0
    for _ in range(count):
        code, at = read_varint(b, at)
        expiry = INF if code == 0 else previous + code - 1
        if code:
            previous = expiry
        prefix = b[at + 1 : at + 1 + b[at]]
        at += 1 + len(prefix)
        mode = b[at]
        at += 1
        payload: object = None
        if mode == 1:
            payload, at = b[at : at + 16], at + 16
        elif mode in (2, 3):
            lists = []
            for _ in range(1 if mode == 2 else 2):
                n, at = read_varint(b, at)
                lists.append([b[at + k * L : at + (k + 1) * L] for k in range(n)])
                at += n * L
            payload = lists[0] if mode == 2 else (lists[0], lists[1])
        ranges.append(((expiry, prefix), mode, payload))
    assert at == len(b)
    return ranges


def below(it: Item, bound: Bound) -> bool:
    return bound[0] == INF or it < (bound[0], bound[1].ljust(L, b"\0"))


def between(p: Item, n: Item) -> Bound:
    if p[0] != n[0]:
        return (n[0], b"")
    k = 0
    while p[1][k] == n[1][k]:
        k += 1
    return (n[0], n[1][: k + 1])


class Side:
    def __init__(self, items: List[Item], initiator: bool):
        self.items, self.initiator = items, initiator
        self.ids = {i for _, i in items}
        self.have: List[bytes] = []
        self.want: List[bytes] = []
        self.unreported: Tuple[List[bytes], List[bytes]] = ([], [])

    def learn(self, have: List[bytes], want: List[bytes], report: bool) -> None:
        for lst, new, pending in ((self.have, have, self.unreported[0]), (self.want, want, self.unreported[1])):
            for i in new:
                if i not in lst:
                    lst.append(i)
                    if report and self.initiator:
                        pending.append(i)

    def split(self, lo: int, hi: int, upper: Bound) -> List[Range]:
        n = hi - lo
        if n < max(T, 2):
            return [(upper, 2, sorted(i for _, i in self.items[lo:hi]))]
        buckets = min(BUCKETS, n)
        per, extra = divmod(n, buckets)
        out, start = [], lo
        for k in range(buckets):
            end = start + per + (1 if k < extra else 0)
            bound = upper if end == hi else between(self.items[end - 1], self.items[end])
            out.append((bound, 1, fingerprint(self.items[start:end])))
            start = end
        return out

    def answer(self, ranges: List[Range]) -> List[Range]:
        out: List[Range] = []
        lower: Bound = (0, b"")
        lo, pending = 0, False
        for upper, mode, payload in ranges:
            hi = lo
            while hi < len(self.items) and below(self.items[hi], upper):
                hi += 1
            mine = [i for _, i in self.items[lo:hi]]
            produced: List[Range] = []
            if mode == 1 and fingerprint(self.items[lo:hi]) != payload:
                produced = self.split(lo, hi, upper)
            elif mode == 2 and self.initiator:
                self.learn([i for i in mine if i not in payload], [i for i in payload if i not in self.ids], True)
            elif mode == 2:
                extra = sorted(i for i in mine if i not in payload)
                missing = [i for i in payload if i not in self.ids]
                self.learn(extra, missing, False)
                produced = [(upper, 3, (extra, missing))] if extra or missing else []
            elif mode == 3:
                extra, missing = payload
                self.learn([i for i in missing if i in self.ids], [i for i in extra if i not in self.ids], False)
            if produced:
                out += ([(lower, 0, None)] if pending else []) + produced
                pending = False
            else:
                pending = True
            lower, lo = upper, hi
        if pending and out:
            out.append(((INF, b""), 0, None))
        return out


def transcript(a: List[Item], b: List[Item]) -> List[bytes]:
    initiator, responder = Side(a, True), Side(b, False)
    outgoing: List[Range] = [((INF, b""), 1, fingerprint(a)) if a else ((INF, b""), 2, [])]
    messages = []
    settled = encode([])
    while True:
        messages.append(encode(outgoing))
        reply = encode(responder.answer(decode(messages[-1])))
        messages.append(reply)
        if reply == settled:  # the responder has nothing left to ask: over
            return messages
        outgoing = initiator.answer(decode(reply))
        have, want = initiator.unreported
        if have or want:
            messages.append(bytes([1, 2]) + ids_bytes(sorted(have)) + ids_bytes(sorted(want)))
            responder.learn([i for i in want if i in responder.ids], [i for i in have if i not in responder.ids], False)
            initiator.unreported = ([], [])
        if not outgoing:
            messages.append(settled)
            return messages


def test_the_document_has_reconciliation_vectors():
    assert {"reconcile-equal", "reconcile-small", "reconcile-differ"} <= set(VECTORS)


@pytest.mark.parametrize("name", sorted(VECTORS))
def test_reconciliation_transcripts(name):
    v = VECTORS[name]
    assert KEY.hex() == v["key"]
    a, b = store(v["initiator"]), store(v["responder"])
    if "initiator_sum" in v:
        assert id_sum(a).hex() == v["initiator_sum"]
        assert fingerprint(a).hex() == v["initiator_fingerprint"]
    expected = [v[f"message_{k}"] for k in range(1, 20) if f"message_{k}" in v]
    assert [m.hex() for m in transcript(a, b)] == expected
