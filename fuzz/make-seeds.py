# Regenerates the checked-in seed corpus (fuzz/corpus) from the formats in docs/PROTOCOL.md §4 and
# §9.1 (and BlueZ's doc/mgmt-api.txt for the Bluetooth management packets),
# written independently of the Swift code: run from the repository root with python3.
import struct, os, random
random.seed(4)
out = "fuzz/corpus"  # relative to the repository root
def routed(t, hop, payload):
    return bytes([1, t, hop]) + bytes(range(16)) + (1_700_000_000_000).to_bytes(6, "big") + struct.pack(">H", 10080) + bytes(range(8, 16)) + struct.pack(">H", len(payload)) + payload
def frame(p): return struct.pack(">H", len(p)) + p
def frags(p, mtu, group):
    chunk = mtu - 8
    n = (len(p) + chunk - 1) // chunk
    return [bytes([1, 4]) + struct.pack(">HHH", group, i, n) + p[i*chunk:(i+1)*chunk] for i in range(n)]
seeds = {
    # A message packet of the shortest real size: a packet envelope (§3.1) of 64 + 64 bytes.
    "message": routed(1, 7, bytes(random.randrange(256) for _ in range(128))),
    "ack": routed(2, 6, bytes(range(20))),
    "handshake": bytes([1, 3, 0, 3, 9, 9, 9]),
    "fragment": bytes([1, 4, 0, 5, 0, 1, 0, 3, 1, 2, 3]),
    "bad-version": bytes([2, 1, 0]),
    "bad-type": bytes([1, 9, 0]),
    "frames-keepalive": frame(bytes([1, 3, 0, 0])) + b"\0\0" + frame(routed(1, 0, b"x")),
    "frame-oversized": b"\xff\xff" + b"\0" * 16,
    # Link packets (§5.3): the link-packet-carried vector, and the shortest one a link sends.
    "link": bytes.fromhex("0105004200000000000000000e2e3531429fc15f3b381968dc21b93e681e5a91"
                          "82d316188c70e1857be06991718db802a07e4842c33f778f89e0db4de03176c8"
                          "73f56cd5385b"),
    "link-keepalive": bytes([1, 5, 0, 25]) + (7).to_bytes(8, "big") + bytes(range(17)),
    # A carried packet (§10.2): hop 8, budget 8, expiry hour, tag, claim hash, a 128-byte payload.
    "carried": bytes([1, 6, 8, 8]) + (472559).to_bytes(4, "big") + bytes(range(8, 16)) + bytes(range(32, 48))
               + struct.pack(">H", 128) + bytes(random.Random(6).randrange(256) for _ in range(128)),
    # A purge record (§10.6) of two claims, ascending.
    "purge": bytes([1, 7, 2]) + bytes(range(0x30, 0x40)) + bytes(range(0x40, 0x50)),
}
# Anonymous links (§5.9): a contact probe (kind 0x04, 1024 bytes with exactly 4096 bits set)
# and a contact proof (kind 0x05, 32 bytes), as link plaintexts.
seeds["contact-probe"] = bytes([4]) + b"\xff" * 256 + b"\x0f" * 256 + b"\xf0" * 256 + b"\0" * 256
seeds["contact-proof"] = bytes([5]) + bytes(range(32))
p = routed(1, 8, bytes(random.randrange(256) for _ in range(300)))
fs = frags(p, 23, 77)
seeds["framed-fragments-in-order"] = b"".join(frame(f) for f in fs)
random.shuffle(fs)
seeds["framed-fragments-shuffled"] = b"".join(frame(f) for f in fs + fs[:3])
fs2 = frags(routed(2, 5, bytes(60)), 20, 65535)
seeds["framed-fragments-two-groups"] = b"".join(frame(f) for f in fs2 + frags(p, 185, 1))
seeds["framed-link-and-handshake"] = frame(bytes([1, 3, 0, 33, 1]) + bytes(32)) + frame(seeds["link-keepalive"])

# Bluetooth LE (§9.1): the advertisement (version 2 after the Flags structure, version 1 among
# other structures), and mgmt packets as the kernel writes them (BlueZ doc/mgmt-api.txt):
# header = event (u16 LE) || controller index (u16 LE) || parameter length (u16 LE).
uuid_le = bytes.fromhex("e5fd7c71576f4cc0a7c4e1e0e2b7bbba")[::-1]
def advert_v2(token, psm): return bytes([27, 0x21]) + uuid_le + bytes([2]) + token + bytes([psm])
def advert_v1(token): return bytes([26, 0x21]) + uuid_le + bytes([1]) + token
def mgmt(event, index, params): return struct.pack("<HHH", event, index, len(params)) + params
ble_token = bytes(range(8))
seeds["ble-advert-v2"] = bytes([2, 1, 6]) + advert_v2(ble_token, 0xc5)
seeds["ble-advert-v1-among-others"] = bytes([2, 1, 6, 5, 9]) + b"abcd" + advert_v1(ble_token) + bytes(3)
addr = bytes([0, 0, 0, 1, 0xaa, 0])  # 00:AA:01:00:00:00, least significant byte first
eir = bytes([2, 1, 6]) + advert_v2(bytes(range(8, 16)), 0x81)
seeds["mgmt-device-found"] = mgmt(0x0012, 0, addr + bytes([1, 0xc4]) + struct.pack("<IH", 0, len(eir)) + eir)
info = addr + bytes([9]) + struct.pack("<HII", 0x3f, 0xffff, 0x2601) + bytes(3) + b"ble-a".ljust(249, b"\0") + bytes(11)
seeds["mgmt-read-info-complete"] = mgmt(0x0001, 0, struct.pack("<HB", 0x0004, 0) + info)
seeds["mgmt-index-list-complete"] = mgmt(0x0001, 0xffff, struct.pack("<HB", 0x0003, 0) + struct.pack("<HHH", 2, 0, 1))
seeds["mgmt-adv-features-complete"] = mgmt(0x0001, 0, struct.pack("<HB", 0x003d, 0) + struct.pack("<I", 0xffff) + bytes([31, 31, 5, 2, 1, 2]))
seeds["mgmt-new-settings"] = mgmt(0x0006, 0, struct.pack("<I", 0x2601))
seeds["mgmt-discovering"] = mgmt(0x0013, 0, bytes([6, 1]))
# Carry reconciliation (PROTOCOL.md "Reconciliation"): version 1, kind 1 (ranges) or 2 (have/want).
def varint(v):
    out = [v & 0x7f]
    v >>= 7
    while v:
        out.insert(0, 0x80 | (v & 0x7f))
        v >>= 7
    return bytes(out)
rid = lambda k: bytes([k]) * 16
seeds["reconcile-opening"] = bytes([1, 1, 1, 0, 0, 1]) + bytes(range(16))
seeds["reconcile-settled"] = bytes([1, 1, 0])
seeds["reconcile-ranges"] = (bytes([1, 1, 3]) + varint(1_800_000_001) + bytes([1, 0x42, 1]) + bytes(range(16))
                             + varint(1) + bytes([2, 0x42, 0x80, 0]) + bytes([0, 0, 2, 2]) + rid(1) + rid(2))
seeds["reconcile-difference"] = bytes([1, 1, 1, 0, 0, 3, 1]) + rid(3) + bytes([1]) + rid(4)
seeds["reconcile-have-want"] = bytes([1, 2, 1]) + rid(5) + bytes([2]) + rid(6) + rid(7)
seeds["reconcile-32-byte-ids"] = bytes([1, 1, 1, 0, 0, 2, 1]) + bytes([9]) * 32
for name, data in seeds.items():
    open(os.path.join(out, name), "wb").write(data)
print(len(seeds), "seeds")
