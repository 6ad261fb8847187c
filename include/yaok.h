/*
 * yaok.h — the C ABI of Ya OK core, a delay-tolerant end-to-end encrypted messenger engine.
 *
 * This header is hand-written and is the documentation. Link with -lyaok (libyaok.so.1,
 * built by scripts/build-lib). Everything here is stable within one YAOK_ABI_VERSION.
 * A first program: examples/c/two_nodes.c (two nodes over a socketpair, one message).
 *
 * ---- Conventions ----
 * Status:    every fallible function returns a yaok_status; 0 (YAOK_OK) is success. Codes
 *            are grouped in ranges and never renumbered. yaok_status_str() names a code;
 *            yaok_last_error_message() gives the detail of this thread's last failure.
 * Outputs:   results come last, through out-pointers, and are written only on success.
 *            On failure the out-pointers are left untouched. Every out-pointer is required,
 *            even one whose value you ignore (such as *out_warnings): NULL is refused with
 *            YAOK_E_NULL_ARGUMENT, unless the function says that it may be NULL.
 * Buffers:   every `const uint8_t *buf` is followed by its `size_t len`; NULL is allowed only
 *            when len is 0. Inputs are borrowed for the duration of the call only.
 * Ownership: a string the library returns (char **out) is freed with yaok_string_free();
 *            bytes it returns (uint8_t **out, size_t *out_len) with yaok_bytes_free().
 *            Handles are created by yaok_<type>_new/_decode/_restore and destroyed by
 *            yaok_<type>_free(); every _free accepts NULL as a no-op. A getter with a
 *            `const char **out` (the typed-access section) lends a string instead: owned
 *            by its handle (or live event), valid until that is freed (or returns), never
 *            freed by the caller.
 * Strings:   UTF-8, NUL-terminated. Invalid UTF-8 input is refused (YAOK_E_INVALID_UTF8),
 *            never silently repaired. A text argument is at most YAOK_MAX_TEXT_BYTES bytes
 *            before its NUL: longer text is refused at once, without being read past that
 *            bound, with YAOK_E_INVALID_ARGUMENT (card text: YAOK_E_INVALID_CARD; a name:
 *            YAOK_E_INVALID_NAME). Functions may take less (a name, a transport name) and
 *            say so.
 * Safety:    NULL or invalid arguments return an error and never crash. A handle of the
 *            wrong type, a freed handle or any other pointer the library did not hand out is
 *            refused with YAOK_E_INVALID_ARGUMENT (and ignored by the _free functions), unless
 *            a new handle of the same type has since been given the same address. No Swift
 *            error crosses the boundary.
 *
 * ---- Threads ----
 * Every function may be called from any thread. yaok_identity and yaok_card handles are
 * immutable: one handle may be used from several threads at once. The last-error message
 * is per thread. Event callbacks (yaok_event_callback) are called on the library's own
 * event thread of the node that owns them, one at a time, never from inside a yaok_* call
 * that the application made; a callback may call back into the library.
 */
#ifndef YAOK_H
#define YAOK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- versions ---- */

#define YAOK_VERSION_MAJOR 0
#define YAOK_VERSION_MINOR 1
#define YAOK_VERSION_PATCH 0
/* Changes only when the ABI changes incompatibly; it is the SONAME suffix (libyaok.so.1). */
#define YAOK_ABI_VERSION 1

/* The ABI version of the loaded library. Compare it with YAOK_ABI_VERSION at start-up. */
uint32_t yaok_abi_version(void);

/* "MAJOR.MINOR.PATCH" of the loaded library. Static storage: do not free. */
const char *yaok_version_string(void);

/* ---- status ---- */

typedef int32_t yaok_status;

enum {
    YAOK_OK = 0,

    /* 1xx: the caller's arguments */
    YAOK_E_NULL_ARGUMENT = 100,
    YAOK_E_INVALID_ARGUMENT = 101,
    YAOK_E_INVALID_UTF8 = 102,
    YAOK_E_BUFFER_TOO_SMALL = 103,

    /* 2xx: identity and contacts */
    YAOK_E_INVALID_NAME = 200,          /* "Name must be 2-50 characters" */
    YAOK_E_INVALID_CARD = 201,          /* "Invalid Ya OK QR code" */
    YAOK_E_CONTACT_EXISTS = 202,        /* "<name> is already in your contacts" */
    YAOK_E_NOT_FOUND = 203,

    /* 3xx: message crypto */
    YAOK_E_NOT_FOR_ME = 300,            /* the envelope is addressed to someone else */
    YAOK_E_TAMPERED = 301,              /* authentication tag failed: altered or corrupted */
    YAOK_E_UNKNOWN_SENDER = 302,        /* authentic, but the sender is not a known contact */
    YAOK_E_SENDER_AUTH_FAILED = 303,    /* the sender's authenticator does not verify */
    YAOK_E_MESSAGE_TOO_LARGE = 304,     /* "Message too large (max 10KB)" */
    YAOK_E_EMPTY_MESSAGE = 305,
    YAOK_E_MALFORMED_ENVELOPE = 306,

    /* 4xx: app lock and storage */
    YAOK_E_LOCKED = 400,
    YAOK_E_WRONG_PIN = 401,             /* "Incorrect PIN" */
    YAOK_E_LOCKED_OUT = 402,            /* "Too many attempts. Try again in N seconds." */
    YAOK_E_PIN_TOO_SHORT = 403,         /* "PIN must be at least 6 digits" (digits only), or
                                           "Passphrase must be at least 6 characters" */
    YAOK_E_PIN_MISMATCH = 404,          /* "PINs do not match" */
    YAOK_E_STORAGE = 405,
    YAOK_E_DISK_FULL = 406,
    YAOK_E_CORRUPT_STORE = 407,
    YAOK_E_CONFIRMATION_REQUIRED = 408,
    YAOK_E_NOT_INITIALIZED = 409,
    YAOK_E_ALREADY_INITIALIZED = 410,
    YAOK_E_NO_PLATFORM_KEY = 411,       /* "No platform key is registered" */
    YAOK_E_WRONG_PLATFORM_KEY = 412,    /* "Incorrect platform key" */
    YAOK_E_CLOSED = 413,                /* a link that either side closed (yaok_link_receive,
                                           yaok_link_peer), or a node closing */
    YAOK_E_BUSY = 414,                  /* the data directory is open in another node (this or
                                           another process): one node per directory */
    YAOK_E_ALREADY_UNLOCKED = 415,      /* an unlock on an unlocked node: refused, not counted */
    YAOK_E_DEVICE_SECRET_REQUIRED = 416,/* the vault is bound to a device secret that is not set */
    YAOK_E_WRONG_DEVICE_SECRET = 417,   /* the device secret set is not the vault's */

    /* 5xx: wire protocol */
    YAOK_E_MALFORMED_PACKET = 500,
    YAOK_E_UNSUPPORTED_VERSION = 501,
    YAOK_E_UNKNOWN_PACKET_TYPE = 502,
    YAOK_E_FRAME_TOO_LARGE = 503,
    YAOK_E_FRAGMENT_INVALID = 504,
    YAOK_E_EXPIRED = 505,
    YAOK_E_LINK_FAILED = 506,           /* handshake or link protocol failure: the link closes */
    YAOK_E_NO_ROUTE = 507,              /* "No transports enabled" */

    /* 6xx: relays (docs/PROTOCOL.md §8) */
    YAOK_E_TLS_FAILED = 600,            /* TLS handshake or connection failure */
    YAOK_E_CERTIFICATE_REJECTED = 601,  /* pin or CA mismatch: never falls back to plaintext */
    YAOK_E_RELAY_AUTH_FAILED = 602,
    YAOK_E_REVOKED = 603,               /* the relay's operator revoked this pseudonym */
    YAOK_E_RATE_LIMITED = 604,          /* "Rate limit reached. Try again in X minutes." */
    YAOK_E_MAILBOX_FULL = 605,
    YAOK_E_RELAY_UNAVAILABLE = 606,

    /* 9xx: the library itself */
    YAOK_E_INTERNAL = 900,
    YAOK_E_OUT_OF_MEMORY = 901,
    YAOK_E_CRYPTO_INIT = 902
};

/* A short English description of `status`. Static storage: do not free. Never NULL. */
const char *yaok_status_str(yaok_status status);

/* The readable message of the last failure on the calling thread, or NULL if no call on
 * this thread has failed yet. Owned by the library; valid until the next failing yaok_*
 * call on this thread. Successful calls do not clear it. */
const char *yaok_last_error_message(void);

/* The longest text argument, in bytes before its NUL (see "Strings" above). */
#define YAOK_MAX_TEXT_BYTES 4096

/* ---- memory ---- */

/* The library records the length of every string and byte buffer it returns, with the
 * allocation. Freeing wipes the whole buffer first (returned strings and bytes may hold
 * decrypted text: message JSON, history pages, an opened envelope's body), then frees it.
 * Either function ignores NULL, a pointer already freed, and any pointer the library did
 * not return: nothing is written to it and nothing is freed. Thread-safe.
 * Leak checkers: the Swift runtime inside the library keeps one-time type caches for the
 * life of the process, which valgrind reports as a few hundred bytes "possibly lost";
 * scripts/valgrind-swift.supp (--suppressions=) hides exactly those, nothing definite. */

/* Wipes and frees a string returned by the library. */
void yaok_string_free(char *s);

/* Wipes and frees bytes returned by the library. Pass the length it returned; the length
 * wiped and freed is the one the library recorded, so a wrong `len` can neither overrun
 * the buffer nor leave part of it unwiped. */
void yaok_bytes_free(uint8_t *data, size_t len);

/* ---- events ----
 * Delivered by a node to the callback the application registers with it. `event` and
 * everything it points to are borrowed for the duration of the callback only: copy what
 * you keep. The callback runs on the node's event thread (see "Threads" above). */

typedef struct yaok_event {
    uint32_t kind;          /* YAOK_EVENT_* */
    const char *json;       /* details, UTF-8 JSON object; schema per kind in docs/ABI.md */
} yaok_event;

typedef void (*yaok_event_callback)(void *user_data, const yaok_event *event);

/* Called once when a callback registration ends, so the application can free user_data. */
typedef void (*yaok_free_callback)(void *user_data);

/* ---- identity ----
 * A person's own identity: an X25519 key pair (encryption), an Ed25519 key pair
 * (signatures) and a display name. Secret keys live in locked, guarded memory and are
 * wiped when the handle is freed. */

typedef struct yaok_identity yaok_identity;

#define YAOK_PUBLIC_KEY_BYTES 32
#define YAOK_IDENTITY_SECRET_BYTES 64
#define YAOK_MESSAGE_ID_BYTES 16
#define YAOK_MAX_MESSAGE_BYTES 10240
/* The longest received message text, in bytes: a body that was not UTF-8 is stored with
 * U+FFFD (3 bytes) per invalid sequence (docs/PROTOCOL.md §3.2), so 3 × YAOK_MAX_MESSAGE_BYTES.
 * Size a buffer for received text by this, never by YAOK_MAX_MESSAGE_BYTES. */
#define YAOK_MAX_RECEIVED_TEXT_BYTES 30720

/* Fingerprint formats. */
#define YAOK_FINGERPRINT_HEX 0      /* 64 upper-case hex characters */
#define YAOK_FINGERPRINT_GROUPED 1  /* 16 groups of 4, separated by spaces */
#define YAOK_FINGERPRINT_SHORT 2    /* the first 6 hex characters */

/* Creates a fresh identity. `name` is 2 to 50 characters as a person counts them (an emoji
 * is one), surrounding white space removed (docs/PROTOCOL.md §1); else YAOK_E_INVALID_NAME,
 * also for a name over 4096 bytes, refused at once. Not UTF-8: YAOK_E_INVALID_UTF8.
 * On success *out owns a new handle: free it with yaok_identity_free(). */
yaok_status yaok_identity_new(const char *name, yaok_identity **out);

/* Rebuilds an identity from its YAOK_IDENTITY_SECRET_BYTES secret: the X25519 secret key
 * (32) followed by the Ed25519 seed (32). For test vectors and restore from a platform
 * keystore. `secrets` is borrowed; wipe your copy afterwards. `name` as for
 * yaok_identity_new (YAOK_E_INVALID_NAME); other lengths of `secrets`:
 * YAOK_E_INVALID_ARGUMENT. Checked in this order, the first failure returned: `out`, then
 * the name's text (NULL: YAOK_E_NULL_ARGUMENT; over 4096 bytes: YAOK_E_INVALID_NAME; not
 * UTF-8: YAOK_E_INVALID_UTF8), then `secrets_len`, then `secrets` (NULL), and only then the
 * name's rules (2 to 50 characters …: YAOK_E_INVALID_NAME). So a bad name with secrets of
 * the wrong length is YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_identity_restore(const char *name, const uint8_t *secrets, size_t secrets_len,
                                  yaok_identity **out);

/* Destroys an identity and wipes its keys. NULL is a no-op. */
void yaok_identity_free(yaok_identity *identity);

/* The display name. *out: free with yaok_string_free(). */
yaok_status yaok_identity_name(const yaok_identity *identity, char **out);

/* The user ID: 32 lower-case hex characters derived from the public keys.
 * *out: free with yaok_string_free(). */
yaok_status yaok_identity_user_id(const yaok_identity *identity, char **out);

/* The SHA-256 fingerprint of the public keys in a YAOK_FINGERPRINT_* format.
 * *out: free with yaok_string_free(). */
yaok_status yaok_identity_fingerprint(const yaok_identity *identity, uint32_t format, char **out);

/* The signed contact card text ("yaok:1:..."), the payload of the QR code others scan.
 * *out: free with yaok_string_free(). */
yaok_status yaok_identity_card(const yaok_identity *identity, char **out);

/* ---- contact cards ----
 * A decoded, signature-checked contact card: a preview of a person before anything is
 * stored. A card proves that its owner holds both keys it carries (docs/PROTOCOL.md §2),
 * so nobody can pass off another person's encryption key as theirs. */

typedef struct yaok_card yaok_card;

/* Decodes and verifies card text. Another app's QR text, an unknown version, corrupted data,
 * a bad signature or key proof, a name not in normal form, a low-order encryption key, text
 * over YAOK_MAX_TEXT_BYTES: YAOK_E_INVALID_CARD ("Invalid Ya OK QR code"). Text that is not
 * UTF-8: YAOK_E_INVALID_UTF8 (checked after the length, before decoding).
 * On success *out owns a new handle: free it with yaok_card_free(). */
yaok_status yaok_card_decode(const char *text, yaok_card **out);

/* Destroys a card. NULL is a no-op. */
void yaok_card_free(yaok_card *card);

/* The card's display name. *out: free with yaok_string_free(). */
yaok_status yaok_card_name(const yaok_card *card, char **out);

/* The card owner's user ID. *out: free with yaok_string_free(). */
yaok_status yaok_card_user_id(const yaok_card *card, char **out);

/* The card owner's fingerprint in a YAOK_FINGERPRINT_* format. *out: free with
 * yaok_string_free(). */
yaok_status yaok_card_fingerprint(const yaok_card *card, uint32_t format, char **out);

/* The card's canonical text. *out: free with yaok_string_free(). */
yaok_status yaok_card_text(const yaok_card *card, char **out);

/* Copies the owner's X25519 and Ed25519 public keys into caller buffers of
 * YAOK_PUBLIC_KEY_BYTES each. */
yaok_status yaok_card_public_keys(const yaok_card *card, uint8_t *out_encryption_key,
                                  uint8_t *out_signing_key);

/* ---- message envelope ----
 * The end-to-end encryption of one message (docs/PROTOCOL.md §3): a PRIMITIVE, for test
 * vectors and interoperability checks. It is not the wire format and sends nothing: apps
 * send with yaok_message_send, and the node seals packets (§4.2, which also binds the
 * packet header) and delivers them. message_id (YAOK_MESSAGE_ID_BYTES) and timestamp_ms
 * (milliseconds since 1970, 0 to 2^48-1, like every time in this header a signed 64-bit
 * count of milliseconds) are bound into the envelope, so opening with other values fails
 * as YAOK_E_TAMPERED; a time outside 0 to 2^48-1 (a packet's `created`, PROTOCOL.md §4.2) is
 * YAOK_E_INVALID_ARGUMENT, when sealing and when opening. */

/* Seals `body` (1 to YAOK_MAX_MESSAGE_BYTES bytes) from `sender` to `recipient`.
 * Errors: YAOK_E_EMPTY_MESSAGE, YAOK_E_MESSAGE_TOO_LARGE.
 * *out_sealed (*out_sealed_len bytes): free with yaok_bytes_free(). */
yaok_status yaok_envelope_seal(const yaok_identity *sender, const yaok_card *recipient,
                               const uint8_t *body, size_t body_len,
                               const uint8_t *message_id, int64_t timestamp_ms,
                               uint8_t **out_sealed, size_t *out_sealed_len);

/* Opens an envelope addressed to `recipient`. `senders` lists the known contacts
 * (`senders_count` cards, NULL when 0). Each failure has its own status:
 * YAOK_E_NOT_FOR_ME, YAOK_E_TAMPERED, YAOK_E_SENDER_AUTH_FAILED, YAOK_E_UNKNOWN_SENDER
 * (authentic, but from no card in `senders`), YAOK_E_MALFORMED_ENVELOPE.
 * On success *out_body (*out_body_len bytes) is the plaintext: free it with
 * yaok_bytes_free(), which wipes it; *out_sender_index is the sender's index in `senders`
 * (the first, if the same card is listed twice). Two different cards in `senders` with the
 * sender's encryption key make the sender ambiguous: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_envelope_open(const yaok_identity *recipient,
                               const yaok_card *const *senders, size_t senders_count,
                               const uint8_t *sealed, size_t sealed_len,
                               const uint8_t *message_id, int64_t timestamp_ms,
                               uint8_t **out_body, size_t *out_body_len, size_t *out_sender_index);

/* ---- wire (interoperability) ----
 * Stateless views of the wire format (docs/PROTOCOL.md §4), so that a second
 * implementation can check the packets, frames and fragments it makes against this
 * library's. Like the envelope section, they send nothing and hold no state: the node
 * does all of this itself. `packet` is borrowed for the call (NULL only when packet_len
 * is 0). A packet is at most 17408 bytes. */

/* Decodes one packet of any type, strictly (PROTOCOL.md §4.1: exactly the bytes the
 * library would encode, nothing trailing), into a JSON object (docs/ABI.md, "packet"):
 * version, type ("message", "ack", "handshake", "fragment", "link") and that type's
 * fields, bytes as lower-case hex. Checks the layout only: no time, tag or crypto check.
 * Errors, in the order §4.1 checks them, whatever the packet's length:
 * YAOK_E_UNSUPPORTED_VERSION (first byte not 1), then YAOK_E_UNKNOWN_PACKET_TYPE, then
 * YAOK_E_MALFORMED_PACKET (empty, cut short, length field
 * that differs from the bytes that follow, lifetime 0, fragment index >= count or
 * count < 2, empty fragment, over 17408 bytes, link length under 25); the message says
 * which field. *out_json: free with yaok_string_free(). */
yaok_status yaok_packet_decode(const uint8_t *packet, size_t packet_len, char **out_json);

/* The stream frame (PROTOCOL.md §4.6: u16 big-endian length, then the packet) of
 * `packet`, which is not decoded: any 1 to 17408 bytes. Empty: YAOK_E_INVALID_ARGUMENT
 * (a zero length is a keepalive); longer: YAOK_E_FRAME_TOO_LARGE.
 * *out_frame (*out_frame_len bytes): free with yaok_bytes_free(). */
yaok_status yaok_frame_encode(const uint8_t *packet, size_t packet_len,
                              uint8_t **out_frame, size_t *out_frame_len);

/* The link units a sender with this `mtu` (YAOK_LINK_MIN_MTU or more) sends for `packet`
 * (PROTOCOL.md §4.7; 1 to 17408 bytes, not decoded), as a JSON array of lower-case hex
 * strings in sending order: the packet itself when it fits in `mtu` bytes, else its
 * fragments 0 to count-1, all of group `first_group`. MTU below YAOK_LINK_MIN_MTU or a
 * packet length outside 1 to 17408: YAOK_E_INVALID_ARGUMENT.
 * *out_json: free with yaok_string_free(). */
yaok_status yaok_fragment_split(const uint8_t *packet, size_t packet_len, uint32_t mtu,
                                uint16_t first_group, char **out_json);

/* ---- node ----
 * A node is one profile: one identity with its contacts, messages and security log, kept
 * in one data directory (SQLite, WAL). Open it, then set it up (first time) or unlock it.
 * Several nodes (on different directories) in one process are fully independent.
 *
 * Threads: a yaok_node may be used from several threads at once; calls are serialised
 * inside. Each node owns one event thread: it runs auto-lock and calls the registered
 * yaok_event_callback. The callback is never called while the node's internal lock is
 * held, so it may call yaok_* functions on the same node (except yaok_node_free).
 *
 * Locking: after yaok_node_open the node is locked. yaok_node_setup or yaok_node_unlock*
 * load the keys; yaok_node_lock, auto-lock and yaok_node_reset wipe them from memory.
 * Every call that needs the keys returns YAOK_E_LOCKED while locked.
 *
 * On disk nothing secret is in clear: the identity's secret keys and a random database key
 * are sealed (XChaCha20-Poly1305) under a key derived from the PIN or passphrase with
 * Argon2id (64 MiB, 2 passes), optionally mixed with a device secret; contact names, contact
 * keys and message bodies are encrypted per row.
 *
 * PINs and passphrases: at least 6 characters, at most 256 bytes of UTF-8, any printable
 * characters (letters, digits, spaces, punctuation, emoji; no control characters or line
 * breaks), compared in Unicode NFC. Digits only is a PIN. yaok_secret_check says whether one
 * is acceptable and how strong it looks.
 *
 * Offline guessing — what someone who copies the data directory can do: the lockout does
 * not apply to a copy. Without a device secret the copy holds everything needed to test
 * PINs offline, one Argon2id evaluation (64 MiB, 2 passes) per guess: 110 ms on one core of
 * an x86-64 server (yaok-bench kdf; docs/ABI.md, "Offline guessing"). On average, half the
 * space:
 *     6-digit PIN             ~ 15 core-hours          (under a minute on 1,000 cores)
 *     10-digit PIN            ~ 17 core-years          (about 6 days on 1,000 cores)
 *     4 random words (52 bit) ~ 6 million core-years
 *     60-bit passphrase       ~ 2 billion core-years
 * A successful guess opens the identity keys and every message. PINs protect against a
 * person with the phone (the lockout), not against a copy of the files: bind the vault to a
 * device secret (yaok_node_set_device_secret) so that the copy alone is useless, and
 * encourage passphrases. */

typedef struct yaok_node yaok_node;

/* yaok_node_open flags. */
#define YAOK_NODE_OPEN_DEFAULT 0u
/* TEST ONLY: seal new PINs with libsodium's minimum Argon2id costs (8 KiB, 1 pass) so
 * test suites stay fast. Refused (YAOK_E_INVALID_ARGUMENT) unless the environment has
 * YAOK_TEST_INSECURE_KDF=1 (read once per process): a production process never sets it.
 * The same variable is what lets a process open any vault sealed below the production
 * minimum (64 MiB, 2 passes); without it such a vault is refused at unlock
 * (YAOK_E_CORRUPT_STORE) and "meets_production_minimum" is false in the status. Offers no
 * protection to the PIN; never use it for real data. */
#define YAOK_NODE_OPEN_TEST_FAST_KDF 1u

/* Warning bits (uint32_t *out_warnings): conditions the app must show the user. */
#define YAOK_WARNING_ALL_ZERO_PIN 1u        /* "A PIN of only zeros is easy to guess":
                                               accepted, but weak */
#define YAOK_WARNING_AUTO_LOCK_DISABLED 2u  /* "App will not auto-lock. Anyone with access
                                               to your phone can read your messages." */

/* Strength classes (uint32_t *out_strength) of a PIN or passphrase, from an estimate of the
 * bits of guessing work (*out_estimated_bits): weak below 40 bits (every PIN of up to 12
 * digits), fair below 60, strong from 60. The estimate is rough and conservative: a run
 * of letters counts as one word from a 4,096-word list, so several random words score well
 * and random characters score low. A guide for a meter, not a guarantee. */
#define YAOK_STRENGTH_WEAK 1u
#define YAOK_STRENGTH_FAIR 2u
#define YAOK_STRENGTH_STRONG 3u

/* yaok_node_set_auto_lock: never lock automatically. */
#define YAOK_AUTO_LOCK_NEVER (-1)

/* yaok_node_reset: the confirmation value ("RSET"); any other value is refused. */
#define YAOK_RESET_CONFIRM 0x52534554u

/* Length of a platform key. */
#define YAOK_PLATFORM_KEY_BYTES 32

/* Length of a device secret. */
#define YAOK_DEVICE_SECRET_BYTES 32

/* Opens (creating it and the directory, mode 0700, if needed) the node stored in
 * `data_dir`, locked. An older store is migrated; one from a newer version or damaged:
 * YAOK_E_CORRUPT_STORE. `flags`: YAOK_NODE_OPEN_* (unknown bits: YAOK_E_INVALID_ARGUMENT).
 * On success *out owns a new handle: free it with yaok_node_free(). */
yaok_status yaok_node_open(const char *data_dir, uint32_t flags, yaok_node **out);

/* Locks the node, stops its event thread (waiting for a running callback to return) and
 * closes the store; the callback's free_user_data runs during this call. Links still open
 * are closed (their closed callbacks run here, reason "The node is closing"); their handles
 * stay valid, closed (YAOK_E_CLOSED), until the app frees each with yaok_link_close, before
 * or after this call. Do not call it from the node's own event callback. NULL is a no-op. */
void yaok_node_free(yaok_node *node);

/* First-time setup (US-002): creates the identity `name`, seals it under `pin` (a PIN or a
 * passphrase, see above) and leaves the node unlocked. With a device secret set
 * (yaok_node_set_device_secret), the vault is bound to it. Errors, checked in this order:
 * YAOK_E_INVALID_NAME (a name over 4096 bytes too), YAOK_E_PIN_TOO_SHORT ("PIN must be at
 * least 6 digits" for digits only, else "Passphrase must be at least 6 characters"),
 * YAOK_E_INVALID_ARGUMENT (more
 * than 256 bytes, or control characters), YAOK_E_PIN_MISMATCH ("PINs do not match"),
 * YAOK_E_ALREADY_INITIALIZED.
 * *out_warnings (required, like every out-pointer): YAOK_WARNING_* bits
 * (YAOK_WARNING_ALL_ZERO_PIN for "000000").
 * yaok_node_setup_v2 also reports the strength. */
yaok_status yaok_node_setup(yaok_node *node, const char *name, const char *pin,
                            const char *pin_confirmation, uint32_t *out_warnings);

/* yaok_node_setup, and the strength of the chosen `secret` for the app to show:
 * *out_strength is YAOK_STRENGTH_*, *out_estimated_bits the estimate it comes from (see
 * YAOK_STRENGTH_WEAK). Neither is stored. Outputs written only on success. */
yaok_status yaok_node_setup_v2(yaok_node *node, const char *name, const char *secret,
                               const char *confirmation, uint32_t *out_warnings,
                               uint32_t *out_strength, uint32_t *out_estimated_bits);

/* Whether `secret` is an acceptable PIN or passphrase (the errors setup would give:
 * YAOK_E_PIN_TOO_SHORT, YAOK_E_INVALID_ARGUMENT, YAOK_E_INVALID_UTF8), and how strong it
 * looks: *out_strength YAOK_STRENGTH_*, *out_estimated_bits. For a strength meter while the
 * person types; needs no node. */
yaok_status yaok_secret_check(const char *secret, uint32_t *out_strength, uint32_t *out_estimated_bits);

/* Sets the device secret this node mixes into the PIN vault's key (`secret`,
 * YAOK_DEVICE_SECRET_BYTES bytes, borrowed: wipe your copy), or clears it (`secret` NULL and
 * `secret_len` 0). Other lengths: YAOK_E_INVALID_ARGUMENT. Works locked or unlocked; held
 * in guarded memory until cleared or yaok_node_free.
 * A setup made while it is set binds the vault to it: the vault key becomes
 * BLAKE2b(Argon2id(PIN) || device secret), so the data directory alone, without the secret,
 * opens nothing however the PIN is guessed. A bound vault unlocks only after the same
 * secret is set: unset, YAOK_E_DEVICE_SECRET_REQUIRED; different,
 * YAOK_E_WRONG_DEVICE_SECRET (neither counts as a wrong PIN). A vault not bound ignores it.
 * Losing the secret (keystore wiped, app data moved to another device) loses the vault:
 * only yaok_node_reset remains. "device_bound" in the status says whether the vault needs it.
 * How a platform layer derives it (call this after yaok_node_open, before setup or unlock):
 *   Android: an HMAC-SHA256 key in the Android Keystore (StrongBox if available, not
 *     exportable, no user authentication), secret = HMAC(key, "yaok-device-secret-v1").
 *   iOS/macOS: a Secure Enclave P-256 key; secret = SHA-256 of its ECDH agreement with a
 *     fixed public key the app ships (or a random secret in the Keychain,
 *     ThisDeviceOnly).
 *   Linux with a TPM 2.0: an HMAC key or sealed random secret under the TPM's storage
 *     hierarchy (tpm2_hmac / tpm2_unseal), secret = its 32-byte output.
 * The secret must be the same on every run: derive it, do not generate it anew. */
yaok_status yaok_node_set_device_secret(yaok_node *node, const uint8_t *secret, size_t secret_len);

/* Unlocks with the PIN or passphrase (US-030). Wrong PIN: YAOK_E_WRONG_PIN ("Incorrect
 * PIN"). The third wrong PIN in a row starts a 30-second lockout; it and every attempt
 * during the lockout return YAOK_E_LOCKED_OUT ("Too many attempts. Try again in N
 * seconds.", N the seconds left) without checking the PIN. Each further lockout before a
 * successful unlock lasts twice as long as the one before, up to one hour (brute-force
 * protection). The count and the lockout's time left are stored, and the count is written
 * before the PIN is checked, so neither a restart nor a kill resets them. The lockout is
 * measured with CLOCK_BOOTTIME (it counts through suspend and cannot be set): moving the
 * wall clock does not shorten it, and after a reboot it resumes from what it had left. A
 * missing or unreadable lock state counts as locked out (one hour).
 * Refused without counting a wrong attempt: input setup would refuse (empty, too short,
 * too long, control characters: the same statuses as setup), YAOK_E_ALREADY_UNLOCKED,
 * YAOK_E_NOT_INITIALIZED, YAOK_E_DEVICE_SECRET_REQUIRED, YAOK_E_WRONG_DEVICE_SECRET, and
 * YAOK_E_CORRUPT_STORE for a vault sealed with costs out of bounds or below the production
 * minimum (see YAOK_NODE_OPEN_TEST_FAST_KDF). Takes about 0.1 s (Argon2id). */
yaok_status yaok_node_unlock(yaok_node *node, const char *pin);

/* Unlocks with the platform key registered earlier (`key`, YAOK_PLATFORM_KEY_BYTES bytes,
 * borrowed; wipe your copy). Not subject to the PIN lockout: it has full entropy.
 * YAOK_E_NO_PLATFORM_KEY if none is registered, YAOK_E_WRONG_PLATFORM_KEY if it differs,
 * YAOK_E_ALREADY_UNLOCKED if the node is unlocked. */
yaok_status yaok_node_unlock_platform_key(yaok_node *node, const uint8_t *key, size_t key_len);

/* Registers a platform key (32 bytes from the OS keystore, released e.g. by biometrics) as
 * a second way to unlock; the PIN keeps working. Replaces an earlier one. Needs the node
 * unlocked (YAOK_E_LOCKED). */
yaok_status yaok_node_register_platform_key(yaok_node *node, const uint8_t *key, size_t key_len);

/* Removes the platform key (a no-op if there is none). Needs the node unlocked. */
yaok_status yaok_node_remove_platform_key(yaok_node *node);

/* Locks now and wipes the keys from memory; emits YAOK_EVENT_LOCKED. A no-op if locked. */
yaok_status yaok_node_lock(yaok_node *node);

/* Sets the idle time after which the node locks itself (stored; default 5 minutes):
 * `timeout_ms` > 0, at most 30 days, or YAOK_AUTO_LOCK_NEVER, which sets
 * YAOK_WARNING_AUTO_LOCK_DISABLED in *out_warnings. Needs the node unlocked. Idle means no
 * call that uses the keys. When it fires, YAOK_EVENT_LOCKED arrives with reason
 * "auto_lock". */
yaok_status yaok_node_set_auto_lock(yaok_node *node, int64_t timeout_ms, uint32_t *out_warnings);

/* The lock state and the vault's key-derivation costs as a JSON object (docs/ABI.md,
 * "status"); works while locked.
 * *out_json: free with yaok_string_free(). */
yaok_status yaok_node_status(yaok_node *node, char **out_json);

/* A handle to the node's identity (for yaok_identity_* and yaok_envelope_*). Needs the
 * node unlocked. The handle holds its own copy of the secret keys until freed, even after
 * the node locks: free it promptly. *out: free with yaok_identity_free(). */
yaok_status yaok_node_identity(yaok_node *node, yaok_identity **out);

/* The node's public profile as a JSON object (docs/ABI.md, "profile"): name, user ID,
 * fingerprint and the contact card text to show as a QR code. Nothing secret: prefer it to
 * yaok_node_identity for display. Needs the node unlocked.
 * *out_json: free with yaok_string_free(). */
yaok_status yaok_node_profile(yaok_node *node, char **out_json);

/* Forgotten PIN: destroys the identity, contacts, messages and settings, leaving an empty
 * node that needs setup again (its security log keeps one "reset" event). Needs no PIN;
 * `confirm` must be YAOK_RESET_CONFIRM, else YAOK_E_CONFIRMATION_REQUIRED. */
yaok_status yaok_node_reset(yaok_node *node, uint32_t confirm);

/* Event kinds (yaok_event.kind). The JSON of each is in docs/ABI.md. Later versions may add
 * kinds within this ABI: ignore a kind you do not know. */
#define YAOK_EVENT_LOCKED 1u                 /* {"reason": "manual"|"auto_lock"|"reset"} */
#define YAOK_EVENT_UNLOCKED 2u               /* {"method": "pin"|"platform_key"|"setup"} */
#define YAOK_EVENT_SECURITY 3u               /* a security log entry */
#define YAOK_EVENT_MESSAGE_STORED 4u         /* a message */
#define YAOK_EVENT_MESSAGE_STATUS_CHANGED 5u /* a message */
#define YAOK_EVENT_CONTACTS_CHANGED 6u       /* {"contact_id": n} */
#define YAOK_EVENT_MESSAGE_RECEIVED 7u       /* {"contact_id": n, "message_id": hex}: a new
                                                message arrived; never its content */
#define YAOK_EVENT_TRANSPORT_CHANGED 8u      /* {"name", "display_name", "state", "error"} */
#define YAOK_EVENT_TRANSPORT_NOTICE 9u       /* {"transport", "message", "retry_after_ms"}: e.g.
                                                "Rate limit reached. Try again in 12 minutes." */
#define YAOK_EVENT_CARRY_ACTIVITY 10u        /* the figures of yaok_carry_status as JSON (docs/ABI.md,
                                                "carry") after a meeting took, handed on,
                                                delivered or purged packets; at most one
                                                per link and minute */
#define YAOK_EVENT_LINK_OPENED 11u           /* {"link_id", "transport"}: a link was opened (an
                                                app's or a transport's); its handshake runs */
#define YAOK_EVENT_LINK_AUTHENTICATED 12u    /* {"link_id", "transport", "peer": "contact"|
                                                "stranger", "contact_id"}: the handshake
                                                completed and recognition settled; again if
                                                that changes (contact deleted, matched at
                                                unlock). contact_id null for a stranger, or
                                                while locked */
#define YAOK_EVENT_LINK_CLOSED 13u           /* {"link_id", "transport", "reason"}: a link
                                                closed, by either side */
#define YAOK_EVENT_TRANSPORT_CONNECTION 14u  /* {"name", "state", "reason", "detail",
                                                "next_retry_ms"}: a transport connected,
                                                started connecting or disconnected (with
                                                the reason): yaok_event_connection */
#define YAOK_EVENT_INTERNET_CHANGED 15u      /* {"available", "line", "default_route",
                                                "relay", "why"}: "Internet: Available" or
                                                "Unavailable" changed: yaok_event_internet */

/* Registers `callback` for this node's events, replacing any earlier registration (whose
 * free_user_data then runs on the event thread, after the last event it was given). NULL
 * `callback` removes the registration (`user_data` and `free_user_data` are then
 * ignored). The callback runs on the node's event thread, one event at a time; `event` is
 * borrowed for the call only. `free_user_data` (may be NULL) is called exactly once when
 * the registration ends: replaced, removed, or at yaok_node_free.
 * Ordering: each event goes to the registration in place when it happened, even if it is
 * delivered later. A registration receives the events of the calls that start after it
 * returns; events that happened before any registration are dropped, so register right
 * after yaok_node_open, before yaok_node_setup or yaok_node_unlock. After a replacement,
 * events already pending still go to the previous callback. */
yaok_status yaok_node_set_event_callback(yaok_node *node, yaok_event_callback callback,
                                         void *user_data, yaok_free_callback free_user_data);

/* ---- contacts ----
 * Contacts are named by their id (int64, stable within a node; it is also the id of the
 * conversation with that person). All need the node unlocked (YAOK_E_LOCKED). Records
 * and lists cross as JSON (docs/ABI.md, "contact"); free *out_json with
 * yaok_string_free(). */

/* yaok_contact_delete flags. */
#define YAOK_CONTACT_DELETE_KEEP_MESSAGES 0u
#define YAOK_CONTACT_DELETE_MESSAGES 1u

/* Decodes and checks card text without storing anything (US-010 preview): name,
 * fingerprint, "existing_contact_id" if this person is already a contact, and
 * "mixed_scripts": true when the name's letters come from more than one script (such as
 * "Аlice" with a Cyrillic "А"; Latin with Han, Hiragana, Katakana, Bopomofo or Hangul is
 * not mixed): a hint to warn before the name is trusted; the fingerprint says who holds
 * the keys. "existing_contact_id" is the contact with the same keys, or one that shares
 * either key (which yaok_contact_add refuses). Bad card (as for yaok_card_decode, text over
 * YAOK_MAX_TEXT_BYTES included): YAOK_E_INVALID_CARD ("Invalid Ya OK QR code"); not UTF-8:
 * YAOK_E_INVALID_UTF8; one's own card (or one sharing a key with it):
 * YAOK_E_INVALID_ARGUMENT ("This is your own contact card"). */
yaok_status yaok_contact_preview(yaok_node *node, const char *card_text, char **out_json);

/* Adds the person on the card; *out_json is the new contact. Each encryption key and each
 * signing key belongs to one contact at most, so a message's sender names one contact:
 * already a contact, YAOK_E_CONTACT_EXISTS ("<name> is already in your contacts"); a card
 * that shares one key with a contact, YAOK_E_CONTACT_EXISTS ("This card shares a key with
 * <name>, who is already in your contacts"); nothing changes. One's own card (or one sharing
 * a key with it): YAOK_E_INVALID_ARGUMENT ("This is your own contact card"). Bad card text:
 * as for yaok_contact_preview. */
yaok_status yaok_contact_add(yaok_node *node, const char *card_text, char **out_json);

/* Every contact, sorted by name: a JSON array of contacts. */
yaok_status yaok_contact_list(yaok_node *node, char **out_json);

/* One contact (US-011). None with that id: YAOK_E_NOT_FOUND. */
yaok_status yaok_contact_show(yaok_node *node, int64_t contact_id, char **out_json);

/* The one contact that `query` names: its id, user ID, a fingerprint prefix of at least 4
 * hex digits, or its name (case-insensitive). None: YAOK_E_NOT_FOUND; several:
 * YAOK_E_INVALID_ARGUMENT; over YAOK_MAX_TEXT_BYTES: YAOK_E_INVALID_ARGUMENT at once. */
yaok_status yaok_contact_find(yaok_node *node, const char *query, char **out_json);

/* Marks a contact verified after an out-of-band fingerprint comparison (US-031). */
yaok_status yaok_contact_verify(yaok_node *node, int64_t contact_id);

/* Renames a contact: the display-name rules of docs/PROTOCOL.md §1 (2 to 50 characters,
 * normalised to NFC, no invisible, format or control characters; else YAOK_E_INVALID_NAME,
 * also for a name over 4096 bytes). */
yaok_status yaok_contact_rename(yaok_node *node, int64_t contact_id, const char *name);

/* Deletes a contact and its public keys (US-012). With YAOK_CONTACT_DELETE_KEEP_MESSAGES
 * the conversation stays readable under the same id and can no longer receive new
 * outgoing messages; with YAOK_CONTACT_DELETE_MESSAGES its messages go too. */
yaok_status yaok_contact_delete(yaok_node *node, int64_t contact_id, uint32_t flags);

/* A contact's card and public keys, read back from the encrypted store, so an app never
 * needs to keep cards itself: a JSON object {"name", "encryption_key", "signing_key",
 * "card"} (keys as 64 lower-case hex characters; "card" the signed card text it was added
 * with, which yaok_card_decode accepts). None with that id: YAOK_E_NOT_FOUND. */
yaok_status yaok_contact_keys(yaok_node *node, int64_t contact_id, char **out_json);

/* ---- forward secrecy (docs/PROTOCOL.md §13) ----
 * Messages and their carried copies are sealed to a short-lived receiver key the contact
 * announced, so a recorded copy stops opening once the contact has erased that key, even
 * with its device and PIN. Until a contact has announced one (the first message to it, or
 * an older implementation), messages to it go to its long-term key: never silently, this
 * tells which, and how many. */

#define YAOK_FORWARD_SECRECY_OFF 0u     /* the node's option is off: every message to the long-term key */
#define YAOK_FORWARD_SECRECY_NOT_YET 1u /* no receiver key from this contact yet: to its long-term key */
#define YAOK_FORWARD_SECRECY_ON 2u      /* messages to this contact go to its newest receiver key */
#define YAOK_FORWARD_SECRECY_PREKEY 3u  /* no receiver key yet: to the prekey of its version 2 card, exposed
                                           until yaok_contact_prekey_exposure's time (PROTOCOL.md §13.4);
                                           a caller that does not know this value reads it as NOT_YET */

/* Forward secrecy with contact `contact_id`: *out_state one of YAOK_FORWARD_SECRECY_*,
 * *out_long_term_seals the messages sealed to its long-term key since it was added (kept in the store),
 * *out_receiver_keys this node's receiver keys held for it (at most 32). All three
 * outputs are required and written only on success. Needs the node unlocked
 * (YAOK_E_LOCKED); no such contact: YAOK_E_NOT_FOUND. */
yaok_status yaok_contact_forward_secrecy(yaok_node *node, int64_t contact_id, uint32_t *out_state,
                                         uint64_t *out_long_term_seals, uint32_t *out_receiver_keys);

/* While messages to contact `contact_id` are sealed to its card's prekey
 * (YAOK_FORWARD_SECRECY_PREKEY): *out_until_ms the Unix time (ms, exclusive) until which they
 * open with the contact's seized device, when it erases that prekey; 0 in every other state.
 * Required output, written only on success; locked: YAOK_E_LOCKED; no such contact:
 * YAOK_E_NOT_FOUND. */
yaok_status yaok_contact_prekey_exposure(yaok_node *node, int64_t contact_id, int64_t *out_until_ms);

/* ---- messages ----
 * Stored messages (US-020, US-023). Text crosses as UTF-8 bytes with their length, so it
 * may hold a NUL. Text to send: 1 to YAOK_MAX_MESSAGE_BYTES (YAOK_E_EMPTY_MESSAGE,
 * YAOK_E_MESSAGE_TOO_LARGE, YAOK_E_INVALID_UTF8). A received text is exactly what the
 * sender sent, whatever UTF-8 allows (controls, bidi controls, white space only; show it
 * with care), or, from a sender whose text was not UTF-8, that text with U+FFFD in place
 * of the invalid bytes, "repaired": true (yaok_message_repaired) and an "invalid_text"
 * security event (docs/PROTOCOL.md §3.2): such a text can exceed the send limit, up to
 * YAOK_MAX_RECEIVED_TEXT_BYTES.
 * Message IDs are YAOK_MESSAGE_ID_BYTES bytes. All need the node unlocked. Free
 * *out_json with yaok_string_free(). */

/* Message status values (the "status" of a message's JSON, as numbers for C apps). */
#define YAOK_MESSAGE_PENDING 0u
#define YAOK_MESSAGE_SENDING 1u     /* reserved: the engine does not use it (a message is
                                       pending until a link confirms it, then sent) */
#define YAOK_MESSAGE_SENT 2u
#define YAOK_MESSAGE_DELIVERED 3u
#define YAOK_MESSAGE_FAILED 4u

/* Sends `text` to `contact_id`: encrypts it, stores it and queues it in the outbox in one
 * transaction, and returns at once; *out_json is the message, status "pending". It goes out
 * over the first open link to the contact, in the order sent; YAOK_EVENT_MESSAGE_STATUS_CHANGED
 * reports "sent" (a link confirmed receipt), "delivered" (the recipient's acknowledgement
 * returned) or "failed" (retried after 1, 5, 15 minutes, then hourly until it expires).
 * Errors: YAOK_E_EMPTY_MESSAGE (empty or only white space), YAOK_E_MESSAGE_TOO_LARGE
 * ("Message too large (max 10KB)": more than YAOK_MAX_MESSAGE_BYTES), YAOK_E_INVALID_UTF8,
 * YAOK_E_NOT_FOUND (no such contact, or a deleted one). */
yaok_status yaok_message_send(yaok_node *node, int64_t contact_id, const uint8_t *text, size_t text_len,
                              char **out_json);

/* Tries a pending, failed or sent outgoing message again now (`message_id`:
 * YAOK_MESSAGE_ID_BYTES bytes, borrowed); it is "pending" again until a link or relay
 * confirms it. A "sent" one is taken too (docs/PROTOCOL.md §6.1): a relay that stored it may
 * have lost it, and its acknowledgement may never come. One whose packet expired is sealed
 * afresh under the same ID. *out_json: the message. No such outgoing message:
 * YAOK_E_NOT_FOUND; already delivered: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_message_retry(yaok_node *node, const uint8_t *message_id, char **out_json);

/* One message we sent, with its current status (`message_id`: YAOK_MESSAGE_ID_BYTES bytes).
 * *out_json: the message. None: YAOK_E_NOT_FOUND. */
yaok_status yaok_message_get(yaok_node *node, const uint8_t *message_id, char **out_json);

/* Messages still on their way (pending or failed), in sending order: a JSON array of
 * outbox entries (docs/ABI.md, "outbox entry"). */
yaok_status yaok_outbox(yaok_node *node, char **out_json);

/* A page of conversation `conversation_id`, oldest first by the sender's timestamp
 * (docs/ABI.md, "history page"). `cursor`: NULL for the newest page, else the previous
 * page's "older_cursor" (opaque text). `limit`: 1 to 1000. */
yaok_status yaok_message_history(yaok_node *node, int64_t conversation_id, const char *cursor,
                                 uint32_t limit, char **out_json);

/* Marks every message of the conversation read; *out_count is how many were unread. */
yaok_status yaok_message_mark_read(yaok_node *node, int64_t conversation_id, uint64_t *out_count);

/* ---- links ----
 * Bring-your-own transport: an app that carries bytes between two devices itself (its own
 * radio, a socket, a test pipe) opens a link per connection; the node runs the handshake
 * (docs/PROTOCOL.md §5), encryption, fragmentation to the MTU, delivery and receipts over
 * it. The app passes every unit that arrives to yaok_link_receive and transmits every unit
 * the node hands to its send callback.
 *
 * Units or a byte stream: a UNIT is what yaok_link_receive takes and the send callback
 * gives, one whole message of the connection (a BLE write, a datagram, a radio packet of at
 * most `mtu` bytes): the node fragments and reassembles packets to fit `mtu`, but it never
 * splits or joins units, so raw chunks of a byte stream fed to yaok_link_open's link break
 * it ("Malformed packet: payload length 193 but 387 bytes follow the header"). A connection
 * that is a byte stream (TCP, a UNIX socket, a serial line, an RFCOMM or L2CAP stream) uses
 * yaok_link_open_stream: the node frames what it sends (docs/PROTOCOL.md §4.6: a u16
 * big-endian length, then the packet; the LAN transport's framing) and yaok_link_receive
 * takes the bytes exactly as read, any split. (yaok_frame_encode is the same framing as a
 * stateless helper.)
 *
 * Whom messages go to: a link carries messages between two nodes that have each added the
 * other as a contact (yaok_node_card's text into the other's yaok_contact_add_v2, both ways).
 * A message to someone who has not added the sender is never delivered (it stays
 * "pending", or is refused as from an unknown sender, docs/PROTOCOL.md §3).
 *
 * The handle first: yaok_link_open writes *out BEFORE the send callback is first called
 * (the initiator's first unit waits until then), so a callback may read the handle from
 * where *out put it (pass the address your callback reads, e.g. &conn->link). Link events
 * (YAOK_EVENT_LINK_OPENED, _AUTHENTICATED, _CLOSED) say when a handshake completed, whether
 * the peer is a contact or a stranger, and why a link closed; yaok_link_id names the link
 * they are about.
 *
 * Threads: a yaok_link may be used from several threads at once. The send callback runs
 * only on the node's event thread, with a link's units in the order they must arrive (the
 * receiver drops a link packet older than one it already took); the closed callback runs
 * on the event thread, or inside yaok_link_close / yaok_node_free. No callback runs while
 * the node's lock is held. A callback may call
 * yaok_link_receive and yaok_link_close (on any link) and other yaok_* functions on the
 * node, except yaok_node_free. The node may send (an acknowledgement, a keepalive) until
 * the link is closed: a send callback that writes to a socket whose other end is gone must
 * not die of SIGPIPE (use send(…, MSG_NOSIGNAL), or ignore SIGPIPE in the process). */

typedef struct yaok_link yaok_link;

/* Transmits one unit (at most the link's MTU bytes). `unit` is borrowed for the call only:
 * copy it. Must not block for long: it runs on the node's event thread, so while it waits
 * no other link of the node sends and no event is delivered. A write(2) to a socket with
 * room in its buffer (the usual case: units are small) is fine; a connection that can stall
 * needs the app's own queue and writer thread. (yaok_link_receive only queues, so a memory
 * pipe may hand the unit straight to the other link.) The return value is ignored today (return
 * YAOK_OK). A lost message or receipt is recovered by the node's retries; a lost handshake
 * unit is not retransmitted: the handshake then times out after 10 s and the link closes
 * (closed callback), and the app opens a new one when its radio reconnects.
 * The first call comes after yaok_link_open has written *out (see "The handle first"). On a
 * stream link (yaok_link_open_stream) each call gives one whole frame: write its bytes to
 * the stream as they are. */
typedef yaok_status
    (*yaok_link_send_callback)(void *user_data, const uint8_t *unit, size_t unit_len);

/* The node ended the link (handshake timeout, protocol violation, node closing): drop the
 * connection. `reason` (UTF-8) is borrowed for the call only. The yaok_link handle stays
 * valid until yaok_link_close. */
typedef void (*yaok_link_closed_callback)(void *user_data, const char *reason);

/* yaok_link_open roles: the side that speaks first (the connector, the BLE central). */
#define YAOK_LINK_INITIATOR 0u
#define YAOK_LINK_RESPONDER 1u

/* The smallest MTU a link accepts. */
#define YAOK_LINK_MIN_MTU 20

/* Opens a link over a connection named `transport` (1 to 32 bytes: "lan", "ble", or the
 * app's own name), `role` YAOK_LINK_*, `mtu` the largest unit the connection carries
 * (YAOK_LINK_MIN_MTU to 1048576; larger packets are fragmented). `send` is required;
 * `closed` may be NULL. `free_user_data` (may be NULL) is called exactly once, after the link
 * was closed by either side, once no callback can run any more (on the event thread, or
 * inside a yaok_* call such as yaok_link_close or yaok_node_free). No callback runs after
 * yaok_link_close returns. Bad role or MTU: YAOK_E_INVALID_ARGUMENT. The node must
 * have been unlocked once since it was opened: else YAOK_E_LOCKED. On failure nothing is
 * kept and free_user_data is not called.
 * On success *out owns a new handle: free it with yaok_link_close(). */
yaok_status yaok_link_open(yaok_node *node, const char *transport, uint32_t role, uint32_t mtu,
                           yaok_link_send_callback send, yaok_link_closed_callback closed,
                           void *user_data, yaok_free_callback free_user_data, yaok_link **out);

/* A stream link over a byte-stream connection (see "Units or a byte stream" above): the same
 * as yaok_link_open, with no MTU (a frame holds any packet whole, nothing is fragmented). The
 * send callback gets whole frames; yaok_link_receive takes the stream's bytes as read, in any
 * split. A frame longer than a packet (17,408 bytes) breaks the stream: that
 * yaok_link_receive returns YAOK_E_FRAME_TOO_LARGE and the link closes (closed callback, on
 * the event thread). A zero-length frame is a keepalive and is ignored.
 * On success *out owns a new handle: free it with yaok_link_close(). */
yaok_status yaok_link_open_stream(yaok_node *node, const char *transport, uint32_t role,
                                  yaok_link_send_callback send, yaok_link_closed_callback closed,
                                  void *user_data, yaok_free_callback free_user_data, yaok_link **out);

/* One unit as the connection received it (on a stream link: any bytes of the stream, in the
 * order read: give one stream link its bytes from one thread at a time, since two calls at
 * once could interleave them). Copied; returns at once, the node processes it
 * on its event thread (so it is safe to call from a send callback). A link that was closed
 * (by either side): YAOK_E_CLOSED ("The link is closed …"). A link that sends faster than the node processes (more
 * than 1 MiB or 16,384 units waiting) is refused with YAOK_E_LINK_FAILED and closed: one
 * flooding peer cannot starve the node's other links. */
yaok_status yaok_link_receive(yaok_link *link, const uint8_t *unit, size_t unit_len);

/* yaok_link_peer: who the link's peer is. */
#define YAOK_LINK_PEER_UNKNOWN  0u  /* handshake not complete, contact recognition not settled, or
                                       not unlocked since the node opened */
#define YAOK_LINK_PEER_CONTACT  1u  /* the peer proved it is a contact (docs/PROTOCOL.md §5.9) */
#define YAOK_LINK_PEER_STRANGER 2u  /* handshake done, and the peer's probe named none of this
                                       node's contacts: it carries packets, nothing routed */

/* Whether the link's handshake is complete (*out_authenticated 1 or 0), and whether its
 * peer is a contact (*out_peer YAOK_LINK_PEER_*; known while locked too, from the contacts
 * at the last unlock). Links are anonymous (docs/PROTOCOL.md §5.8): only a contact learns
 * who a node is, by a proof inside the link (§5.9). Anyone can complete a handshake, and
 * carrying (§12) uses strangers' links: an app whose radio has few connection slots closes strangers' links
 * first, as the core's own Bluetooth transport does (docs/PROTOCOL.md §9.2). Takes the
 * node's lock briefly; any thread, also inside a link callback. Closed link: YAOK_E_CLOSED. */
yaok_status yaok_link_peer(yaok_link *link, int32_t *out_authenticated, uint32_t *out_peer);

/* The link's id: the "link_id" of the link events and diagnostics, and yaok_link_info's.
 * Stable for the link's life; readable after the link closed, until yaok_link_close. */
yaok_status yaok_link_id(yaok_link *link, uint64_t *out_link_id);

/* Closes the link (messages in flight over it are retried later) and frees the handle.
 * NULL is a no-op. */
void yaok_link_close(yaok_link *link);

/* ---- transports and diagnostics ---- */

/* Starts (`enabled` != 0) or stops a transport registered with the node. A start that fails
 * leaves it "failed" with the reason (YAOK_EVENT_TRANSPORT_CHANGED, diagnostics) and
 * returns that error. Starting one that is running changes nothing (YAOK_OK). None with
 * that name: YAOK_E_NOT_FOUND ("No transport named <name>"). */
yaok_status yaok_transport_set_enabled(yaok_node *node, const char *name, int32_t enabled);

/* yaok_transport_lan_add flags. */
#define YAOK_LAN_NO_DISCOVERY 1u  /* no multicast beacons: only the static peers */

/* Registers the LAN transport ("lan", shown as "WiFi"), disabled: start it with
 * yaok_transport_set_enabled(node, "lan", 1). It listens on TCP `listen_address` (NULL:
 * "0.0.0.0", all interfaces) and `port` (0: any free port; diagnostics show which), finds
 * peers by UDP multicast beacons that carry only a rotating random token (docs/PROTOCOL.md
 * §7) unless YAOK_LAN_NO_DISCOVERY, and connects to the `peers_count` (0 to 64) static
 * peers "host:port" in `peers` (borrowed). Peers found are connected, authenticated (§5) and
 * shown as "Online (WiFi)" on their contact. Registered twice: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_transport_lan_add(yaok_node *node, const char *listen_address, uint16_t port, uint32_t flags,
                                   const char *const *peers, size_t peers_count);

/* Registers the Bluetooth LE transport ("ble", shown as "Bluetooth"), disabled: start it with
 * yaok_transport_set_enabled(node, "ble", 1). It uses the kernel's Bluetooth stack on Linux
 * (docs/PROTOCOL.md §9): adapter `adapter` ("hci0", …; NULL: the first powered one that
 * supports LE) advertises a rotating random token, scans for other nodes, and carries links
 * over L2CAP LE credit-based channels; peers found are authenticated (§5) and shown as
 * "Online (Bluetooth)". It needs CAP_NET_ADMIN. Where Bluetooth cannot be used (no kernel
 * support, no adapter, adapter off, no permission) the start fails with YAOK_E_LINK_FAILED
 * and "Bluetooth unavailable: <reason> (<what to do>)", shown in diagnostics and a
 * YAOK_EVENT_TRANSPORT_CHANGED event; the node's other transports carry on, and enabling it
 * again retries. Diagnostics list "advisories" (e.g. LE privacy off: the adapter's fixed
 * address can be followed). `adapter` is borrowed; not a name like "hci0":
 * YAOK_E_INVALID_ARGUMENT. Registered twice: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_transport_ble_add(yaok_node *node, const char *adapter);

/* Registers the relay transport ("relay", shown as "Relay"), disabled: start it with
 * yaok_transport_set_enabled(node, "relay", 1). It keeps a TLS 1.3 session with the relay at
 * `address` ("host:port"), whose certificate must match `pin_hex` (the 64 hex digits
 * `yaok-relay` prints as "pin:") or chain to the PEM CA certificates in `ca_file`: give
 * exactly one, the other NULL (else YAOK_E_INVALID_ARGUMENT). A mismatch refuses the
 * connection (YAOK_EVENT_TRANSPORT_NOTICE, a "tls_failure" security event), never falls back
 * to plaintext. Messages to contacts with no direct link go to their relay mailbox (sent =
 * stored by the relay); ours are fetched while the node is unlocked (a lock ends the
 * session). A relay that is down is retried with backoff; diagnostics show its status
 * ("Connected", "Disconnected: … Retrying in 8 s.") and the last sync (docs/PROTOCOL.md §8).
 * Strings are borrowed. Registered twice: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_transport_relay_add(yaok_node *node, const char *address, const char *pin_hex, const char *ca_file);

/* Diagnostics as a JSON object (docs/ABI.md, "diagnostics"): transports, links, packets held
 * while locked and, when unlocked, contacts' connection status and the outbox. Works while
 * locked. *out_json: free with yaok_string_free(). */
yaok_status yaok_node_diagnostics(yaok_node *node, char **out_json);

/* ---- typed access: events, messages, contacts, diagnostics without JSON ----
 * The common path of an app, field by field, so that a C app needs no JSON parser to send,
 * receive and show statuses. The JSON functions above stay for rich results and bindings;
 * both read the same data.
 *
 * Ownership, for everything in this section:
 *   - yaok_message, yaok_contact and yaok_diagnostics are opaque, immutable snapshots: a
 *     handle never changes after it is made (a status that changes later arrives as a new
 *     event), so one handle may be read from several threads at once. Each is created by
 *     the function that returns it (`yaok_<type> **out`) and destroyed by
 *     yaok_<type>_free(); _free(NULL) is a no-op. They need no node: a handle stays
 *     readable after the node locks or is freed.
 *   - A getter's `const char **out` receives a BORROWED string, NUL-terminated UTF-8, owned
 *     by the handle and valid until the handle is freed: do not free it, copy what you keep
 *     longer. (The older getters that take `char **out` give an owned copy instead, freed
 *     with yaok_string_free.) Strings a handle holds are wiped when it is freed.
 *   - Event getters read the `const yaok_event *` a callback was given, and only during that
 *     callback (on the event thread, or on another thread while the callback has not yet
 *     returned); a borrowed string they give is valid until the callback returns. After it
 *     returns, the event is no longer live: YAOK_E_INVALID_ARGUMENT.
 *   - Integers and message IDs are copied into the caller's variables and buffers.
 * A getter for a field this event kind (or this message or contact) does not have returns
 * YAOK_E_NOT_FOUND and writes nothing; the last-error message says which field. */

typedef struct yaok_message yaok_message;
typedef struct yaok_contact yaok_contact;
typedef struct yaok_diagnostics yaok_diagnostics;

/* Message directions (yaok_message_direction). */
#define YAOK_DIRECTION_OUTGOING 0u
#define YAOK_DIRECTION_INCOMING 1u

/* Message times (yaok_message_time `which`), each milliseconds since 1970. */
#define YAOK_TIME_SENDER 0u    /* the sender's clock; history is ordered by it (always set) */
#define YAOK_TIME_CREATED 1u   /* when this node stored the message (always set) */
#define YAOK_TIME_SENT 2u      /* outgoing: when it first reached "sent" (else NOT_FOUND) */
#define YAOK_TIME_RECEIVED 3u  /* incoming: when it arrived (else NOT_FOUND) */

/* Transport states (yaok_event_transport_state, yaok_diagnostics_transport). */
#define YAOK_TRANSPORT_DISABLED 0u
#define YAOK_TRANSPORT_RUNNING 1u
#define YAOK_TRANSPORT_FAILED 2u

/* Contact connection states (yaok_contact_connection), shown as AC-011-03 says. */
#define YAOK_CONNECTION_NEVER_CONNECTED 0u /* "Never connected" */
#define YAOK_CONNECTION_LAST_SEEN 1u       /* "Last seen …" */
#define YAOK_CONNECTION_ONLINE 2u          /* "Online (<transport>)" */

/* -- events: call these inside the yaok_event_callback, on the event it was given -- */

/* The contact (= conversation) id of YAOK_EVENT_MESSAGE_RECEIVED, YAOK_EVENT_CONTACTS_CHANGED,
 * of the message of YAOK_EVENT_MESSAGE_STORED and YAOK_EVENT_MESSAGE_STATUS_CHANGED, and of
 * the peer of YAOK_EVENT_LINK_AUTHENTICATED when it is a contact whose id is known.
 * Other kinds (and a stranger's link): YAOK_E_NOT_FOUND. */
yaok_status yaok_event_contact_id(const yaok_event *event, int64_t *out_contact_id);

/* The message ID of YAOK_EVENT_MESSAGE_RECEIVED, _STORED and _STATUS_CHANGED, copied into
 * `out_message_id` (YAOK_MESSAGE_ID_BYTES bytes, the caller's). Other kinds:
 * YAOK_E_NOT_FOUND. */
yaok_status yaok_event_message_id(const yaok_event *event, uint8_t *out_message_id);

/* The message's status (YAOK_MESSAGE_*) for YAOK_EVENT_MESSAGE_STATUS_CHANGED (the new
 * status) and YAOK_EVENT_MESSAGE_STORED. Other kinds: YAOK_E_NOT_FOUND. */
yaok_status yaok_event_message_status(const yaok_event *event, uint32_t *out_status);

/* The whole message of YAOK_EVENT_MESSAGE_STORED or _STATUS_CHANGED (text, direction,
 * times) as a new handle that outlives the callback. *out: free with yaok_message_free().
 * Other kinds: YAOK_E_NOT_FOUND. YAOK_EVENT_MESSAGE_RECEIVED never carries the content:
 * read it with yaok_message_lookup(node, contact id, message ID), from the callback or later. */
yaok_status yaok_event_message(const yaok_event *event, yaok_message **out);

/* The transport's name ("lan", "relay", or an app's own) of YAOK_EVENT_TRANSPORT_CHANGED,
 * YAOK_EVENT_TRANSPORT_NOTICE, YAOK_EVENT_TRANSPORT_CONNECTION and the link events
 * (YAOK_EVENT_LINK_*).
 * *out_name: borrowed until the callback returns. */
yaok_status yaok_event_transport_name(const yaok_event *event, const char **out_name);

/* The new state (YAOK_TRANSPORT_*) of YAOK_EVENT_TRANSPORT_CHANGED. */
yaok_status yaok_event_transport_state(const yaok_event *event, uint32_t *out_state);

/* The text for a person that the event carries: the message of YAOK_EVENT_TRANSPORT_NOTICE
 * ("Rate limit reached. Try again in 12 minutes."); the error of YAOK_EVENT_TRANSPORT_CHANGED
 * when its state is YAOK_TRANSPORT_FAILED (otherwise YAOK_E_NOT_FOUND); the reason of
 * YAOK_EVENT_LOCKED ("manual", "auto_lock", "reset"); the method of YAOK_EVENT_UNLOCKED
 * ("pin", "platform_key", "setup"); the reason of YAOK_EVENT_LINK_CLOSED ("Handshake timed
 * out", "Closed by the application", …); the reason of YAOK_EVENT_TRANSPORT_CONNECTION when
 * it has one ("The relay's certificate does not match the pinned key …"); the line of
 * YAOK_EVENT_INTERNET_CHANGED ("Internet: Unavailable"). Other kinds: YAOK_E_NOT_FOUND.
 * *out_text: borrowed until the callback returns. */
yaok_status yaok_event_text(const yaok_event *event, const char **out_text);

/* The link id of YAOK_EVENT_LINK_OPENED, _AUTHENTICATED and _CLOSED (yaok_link_id of the
 * handle). Other kinds: YAOK_E_NOT_FOUND. */
yaok_status yaok_event_link_id(const yaok_event *event, uint64_t *out_link_id);

/* The peer of YAOK_EVENT_LINK_AUTHENTICATED: YAOK_LINK_PEER_CONTACT or _STRANGER. Other
 * kinds: YAOK_E_NOT_FOUND. */
yaok_status yaok_event_link_peer(const yaok_event *event, uint32_t *out_peer);

/* ---- transport connection and internet (docs/ARCHITECTURE.md, "Transport state") ----
 * Whether a transport can carry messages now, for an app to show: a relay reports its
 * own (a wrong pin is DISCONNECTED with YAOK_DISCONNECT_PIN_MISMATCH, however long it is
 * retried); Bluetooth LE is CONNECTING while its adapter starts (until it is powered,
 * advertising and scanning) and DISCONNECTED with YAOK_DISCONNECT_RADIO_OFF while it is off
 * or removed; the LAN is DISCONNECTED with YAOK_DISCONNECT_NO_NETWORK while no IPv4
 * interface other than loopback is up (or its listen address is gone; listening on
 * loopback, or with a static peer there, it always has one); a transport that reports none
 * (an app's own) is CONNECTED while it runs and DISCONNECTED (DISABLED or FAILED)
 * otherwise. Later versions may add states and reasons within this ABI: show a state you
 * do not know as DISCONNECTED and a reason you do not know as YAOK_DISCONNECT_OTHER (the
 * text says what); never index a table with either unchecked. */
#define YAOK_CONNECTIVITY_DISCONNECTED 0u
#define YAOK_CONNECTIVITY_CONNECTING 1u
#define YAOK_CONNECTIVITY_CONNECTED 2u

/* Why a transport is disconnected (YAOK_DISCONNECT_NONE while connected or connecting). */
#define YAOK_DISCONNECT_NONE 0u
#define YAOK_DISCONNECT_DISABLED 1u     /* switched off, or never started */
#define YAOK_DISCONNECT_FAILED 2u       /* its start failed (the text says why) */
#define YAOK_DISCONNECT_PIN_MISMATCH 3u /* the relay's certificate does not match the pin */
#define YAOK_DISCONNECT_CERTIFICATE 4u  /* the certificate was rejected otherwise (CA, name) */
#define YAOK_DISCONNECT_TLS 5u          /* the TLS handshake failed */
#define YAOK_DISCONNECT_REFUSED 6u      /* connection refused: nothing listens there */
#define YAOK_DISCONNECT_TIMED_OUT 7u    /* no answer within the connect timeout */
#define YAOK_DISCONNECT_DNS 8u          /* the name did not resolve */
#define YAOK_DISCONNECT_UNREACHABLE 9u  /* no route to the host or network */
#define YAOK_DISCONNECT_CLOSED 10u      /* the other end closed the connection */
#define YAOK_DISCONNECT_PROTOCOL 11u    /* the other end broke the protocol */
#define YAOK_DISCONNECT_REVOKED 12u     /* the relay revoked our pseudonym: not retried */
#define YAOK_DISCONNECT_LOCKED 13u      /* the node is locked: connects after unlock */
#define YAOK_DISCONNECT_IDLE 14u        /* nothing to do (no contact yet): connects when there is */
#define YAOK_DISCONNECT_OTHER 15u       /* anything else (the text says what) */
#define YAOK_DISCONNECT_RADIO_OFF 16u   /* the radio is off or gone (a Bluetooth adapter
                                           powered off or removed): connects when it is back */
#define YAOK_DISCONNECT_NO_NETWORK 17u  /* no network to be on (the LAN with no IPv4 interface
                                           up but loopback): connects when one is back */

/* YAOK_EVENT_TRANSPORT_CONNECTION: *out_state YAOK_CONNECTIVITY_*, *out_reason
 * YAOK_DISCONNECT_*, *out_next_retry_ms the wall-clock time (ms since 1970) of the next
 * attempt, 0 when none is scheduled. The transport's name: yaok_event_transport_name; the
 * reason for a person ("The relay's certificate does not match the pinned key"):
 * yaok_event_text (YAOK_E_NOT_FOUND when there is none). Other kinds: YAOK_E_NOT_FOUND. */
yaok_status yaok_event_connection(const yaok_event *event, uint32_t *out_state, uint32_t *out_reason,
                                  int64_t *out_next_retry_ms);

/* YAOK_EVENT_INTERNET_CHANGED: *out_available 1 or 0. yaok_event_text gives the line
 * "Internet: Available" / "Internet: Unavailable". Other kinds: YAOK_E_NOT_FOUND. */
yaok_status yaok_event_internet(const yaok_event *event, int32_t *out_available);

/* -- messages -- */

/* yaok_message_send, returning the stored message as a handle instead of JSON (status
 * YAOK_MESSAGE_PENDING). Same arguments, errors and behaviour. *out: free with
 * yaok_message_free(). */
yaok_status yaok_message_send_v2(yaok_node *node, int64_t contact_id, const uint8_t *text, size_t text_len,
                                 yaok_message **out);

/* One stored message, incoming or outgoing, by its conversation (= contact id) and message
 * ID (YAOK_MESSAGE_ID_BYTES bytes, borrowed): what a YAOK_EVENT_MESSAGE_RECEIVED names.
 * None: YAOK_E_NOT_FOUND. Needs the node unlocked. *out: free with yaok_message_free(). */
yaok_status yaok_message_lookup(yaok_node *node, int64_t contact_id, const uint8_t *message_id, yaok_message **out);

/* Destroys a message handle and wipes the text it holds. NULL is a no-op. */
void yaok_message_free(yaok_message *message);

/* The message ID, copied into `out_message_id` (YAOK_MESSAGE_ID_BYTES bytes). */
yaok_status yaok_message_id(const yaok_message *message, uint8_t *out_message_id);

/* The contact (= conversation) id: the recipient of an outgoing message, the sender of an
 * incoming one. */
yaok_status yaok_message_contact_id(const yaok_message *message, int64_t *out_contact_id);

/* YAOK_DIRECTION_OUTGOING or YAOK_DIRECTION_INCOMING. */
yaok_status yaok_message_direction(const yaok_message *message, uint32_t *out_direction);

/* The status when the handle was made: YAOK_MESSAGE_* (incoming messages are
 * YAOK_MESSAGE_DELIVERED). */
yaok_status yaok_message_status(const yaok_message *message, uint32_t *out_status);

/* The text: *out_text is borrowed (NUL-terminated UTF-8, valid until yaok_message_free),
 * *out_len its length in bytes before the terminating NUL: up to YAOK_MAX_MESSAGE_BYTES for
 * a text this node sent, up to YAOK_MAX_RECEIVED_TEXT_BYTES for a received one. The text itself may hold NUL
 * bytes (PROTOCOL.md §3.2): use *out_len, not strlen. */
yaok_status yaok_message_text(const yaok_message *message, const char **out_text, size_t *out_len);

/* One of the message's times (`which`: YAOK_TIME_*), milliseconds since 1970. A time the
 * message does not have (YAOK_TIME_SENT of a message not yet sent, YAOK_TIME_RECEIVED of an
 * outgoing one): YAOK_E_NOT_FOUND. Unknown `which`: YAOK_E_INVALID_ARGUMENT. */
yaok_status yaok_message_time(const yaok_message *message, uint32_t which, int64_t *out_ms);

/* *out_repaired: 1 if this is a received text whose body was not UTF-8, stored with U+FFFD in
 * place of each invalid sequence (docs/PROTOCOL.md §3.2; the JSON's "repaired"; an
 * "invalid_text" security event says so too), so up to YAOK_MAX_RECEIVED_TEXT_BYTES bytes;
 * else 0. */
yaok_status yaok_message_repaired(const yaok_message *message, int32_t *out_repaired);

/* *out_unread: 1 if this is a received message not yet marked read (yaok_message_mark_read)
 * when the handle was made, else 0 (outgoing messages are never unread). */
yaok_status yaok_message_unread(const yaok_message *message, int32_t *out_unread);

/* -- contacts -- */

/* yaok_contact_add, returning the new contact as a handle instead of JSON. Same arguments,
 * errors and behaviour. *out: free with yaok_contact_free(). */
yaok_status yaok_contact_add_v2(yaok_node *node, const char *card_text, yaok_contact **out);

/* One contact by id, as a handle (what yaok_contact_show gives as JSON). None with that id:
 * YAOK_E_NOT_FOUND. Needs the node unlocked. *out: free with yaok_contact_free(). */
yaok_status yaok_contact_get(yaok_node *node, int64_t contact_id, yaok_contact **out);

/* The ids of every contact, sorted by name, like snprintf: writes the first
 * min(count, capacity) ids into `out_ids` (the caller's array of `capacity`; NULL when
 * capacity is 0) and sets *out_count to the number of contacts, which may be more than
 * `capacity`: then call again with a larger array. Needs the node unlocked. */
yaok_status yaok_contact_ids(yaok_node *node, int64_t *out_ids, size_t capacity, size_t *out_count);

/* Destroys a contact handle and wipes the name it holds. NULL is a no-op. */
void yaok_contact_free(yaok_contact *contact);

/* The contact's id (also its conversation's id). */
yaok_status yaok_contact_id(const yaok_contact *contact, int64_t *out_contact_id);

/* The display name. *out_name: borrowed until yaok_contact_free. */
yaok_status yaok_contact_name(const yaok_contact *contact, const char **out_name);

/* The user ID (32 lower-case hex characters). *out_user_id: borrowed until yaok_contact_free. */
yaok_status yaok_contact_user_id(const yaok_contact *contact, const char **out_user_id);

/* The fingerprint in a YAOK_FINGERPRINT_* format (unknown: YAOK_E_INVALID_ARGUMENT).
 * *out_fingerprint: borrowed until yaok_contact_free. */
yaok_status yaok_contact_fingerprint(const yaok_contact *contact, uint32_t format, const char **out_fingerprint);

/* *out_verified: 1 if the contact was marked verified (yaok_contact_verify), else 0. */
yaok_status yaok_contact_verified(const yaok_contact *contact, int32_t *out_verified);

/* The connection when the handle was made: *out_state YAOK_CONNECTION_*. `out_transport`
 * and `out_last_seen_ms` may be NULL. *out_transport: the transport's name when ONLINE
 * (borrowed until yaok_contact_free), else NULL. *out_last_seen_ms: when LAST_SEEN, the
 * time (milliseconds since 1970), else 0. */
yaok_status yaok_contact_connection(const yaok_contact *contact, uint32_t *out_state, const char **out_transport,
                                    int64_t *out_last_seen_ms);

/* -- diagnostics -- */

/* A snapshot of the node's transports (what yaok_node_diagnostics gives as JSON, in the
 * same order). Works while locked. *out: free with yaok_diagnostics_free(). */
yaok_status yaok_diagnostics_new(yaok_node *node, yaok_diagnostics **out);

/* Destroys a diagnostics snapshot. NULL is a no-op. */
void yaok_diagnostics_free(yaok_diagnostics *diagnostics);

/* How many transports are registered. */
yaok_status yaok_diagnostics_transport_count(const yaok_diagnostics *diagnostics, size_t *out_count);

/* Transport `index` (0 to count-1; beyond: YAOK_E_NOT_FOUND): *out_name ("lan", "relay",
 * …), *out_state YAOK_TRANSPORT_*, *out_links the links open over it, and *out_status a line
 * for a person: the transport's own status when it has one (the relay: "Connected",
 * "Disconnected: connection refused. Retrying in 8 s.", …), else the error when failed,
 * else "Running" or "Disabled". Strings borrowed until yaok_diagnostics_free. */
yaok_status yaok_diagnostics_transport(const yaok_diagnostics *diagnostics, size_t index, const char **out_name,
                                       uint32_t *out_state, uint32_t *out_links, const char **out_status);

/* Transport `index`'s connection as yaok_event_connection gives it: *out_state
 * YAOK_CONNECTIVITY_*, *out_reason YAOK_DISCONNECT_*, *out_next_retry_ms (0: none), and
 * *out_detail the reason for a person or NULL. Beyond the count: YAOK_E_NOT_FOUND.
 * Strings borrowed until yaok_diagnostics_free. */
yaok_status yaok_diagnostics_transport_connection(const yaok_diagnostics *diagnostics, size_t index,
                                                  uint32_t *out_state, uint32_t *out_reason,
                                                  int64_t *out_next_retry_ms, const char **out_detail);

/* "Internet: Available/Unavailable" (seed AC-060-01) when the snapshot was taken: whether
 * the node has a usable route to the internet. A running relay decides once it has an
 * answer (connected, or a server that answered and was refused, as for a wrong pin:
 * available; refused, timed out, no DNS: unavailable); otherwise (no relay, or still
 * connecting) a default route decides (Linux: /proc/net/route, /proc/net/ipv6_route).
 * *out_available and *out_default_route 1 or 0; *out_line "Internet: Available" or
 * "Internet: Unavailable", borrowed until yaok_diagnostics_free. */
yaok_status yaok_diagnostics_internet(const yaok_diagnostics *diagnostics, int32_t *out_available,
                                      int32_t *out_default_route, const char **out_line);

/* -- the node at a glance: own card, status, history, outbox, open links -- */

/* The node's own contact card as a yaok_card handle: read it with yaok_card_text (the QR
 * code's text), yaok_card_fingerprint, yaok_card_name, yaok_card_user_id. Public data only:
 * unlike yaok_node_identity it copies no secret key. Needs the node unlocked (the name and
 * keys are sealed while locked): YAOK_E_LOCKED. *out: free with yaok_card_free(). */
yaok_status yaok_node_card(yaok_node *node, yaok_card **out);

/* What a status line shows, in one call, written into the caller's struct (set
 * `struct_size` to sizeof(yaok_node_state) first: the library writes only the fields that
 * fit, later versions append fields and never move them, and `struct_size` comes back as
 * the bytes it wrote, so a caller built against a later header sees which fields an older
 * library filled; smaller than the first five fields: YAOK_E_INVALID_ARGUMENT). Works
 * while locked and does not count as activity for auto-lock. A first run (no identity yet:
 * call yaok_node_setup, not yaok_node_unlock) is `initialized` 0: no unlock attempt is
 * needed to find it. Each transport's name, state and status line: yaok_diagnostics_new and
 * yaok_diagnostics_transport; its connection (connected, or why not and when it retries):
 * yaok_diagnostics_transport_connection; "Internet: Available": yaok_diagnostics_internet. */
typedef struct yaok_node_state {
    uint32_t struct_size;          /* in: sizeof(yaok_node_state); out: bytes written */
    int32_t initialized;           /* 1 once set up; 0: first run */
    int32_t locked;                /* 1 while locked */
    uint32_t lockout_seconds;      /* until the PIN may be tried again; 0 when not locked out */
    uint32_t failed_attempts;      /* wrong PINs since the last success or lockout */
    uint32_t transports;           /* registered transports */
    uint32_t transports_running;   /* of them YAOK_TRANSPORT_RUNNING */
    uint32_t transports_failed;    /* of them YAOK_TRANSPORT_FAILED */
    uint32_t links_open;           /* links open now (handshakes running included) */
    uint32_t held_packets;         /* received while locked, read at the next unlock */
    int32_t counts_known;          /* 1 if the three figures below were read (unlocked); 0
                                      while locked, when they are 0 */
    uint32_t contacts;             /* contacts */
    uint32_t contacts_online;      /* contacts with an open link (YAOK_CONNECTION_ONLINE) */
    uint32_t messages_waiting;     /* outgoing messages on their way: the outbox's count */
} yaok_node_state;

yaok_status yaok_node_get_state(yaok_node *node, yaok_node_state *out);

/* A page of a conversation as a handle: yaok_message_history without JSON. The same
 * arguments: `cursor` NULL for the newest page, else the previous page's older cursor;
 * `limit` 1 to 1000. Needs the node unlocked. *out: free with yaok_history_free(). */
typedef struct yaok_history yaok_history;

yaok_status yaok_history_new(yaok_node *node, int64_t conversation_id, const char *cursor, uint32_t limit,
                             yaok_history **out);

/* Destroys a history page. NULL is a no-op. The page lends no text (yaok_history_message
 * makes a handle that does), so nothing of it is wiped: the texts it held are released. */
void yaok_history_free(yaok_history *history);

/* How many messages the page holds. */
yaok_status yaok_history_count(const yaok_history *history, size_t *out_count);

/* Message `index` (0 to count-1, oldest first by the sender's time; beyond:
 * YAOK_E_NOT_FOUND) as its own handle, readable with the yaok_message_* getters after the
 * page is freed. *out: free with yaok_message_free(). */
yaok_status yaok_history_message(const yaok_history *history, size_t index, yaok_message **out);

/* The cursor of the page before this one, for the next yaok_history_new: borrowed until
 * yaok_history_free. This page reaches the conversation's first message: YAOK_E_NOT_FOUND. */
yaok_status yaok_history_older_cursor(const yaok_history *history, const char **out_cursor);

/* The outbox as a handle: messages still on their way (pending or failed), in sending
 * order, what yaok_outbox gives as JSON. Needs the node unlocked.
 * *out: free with yaok_outbox_list_free(). */
typedef struct yaok_outbox_list yaok_outbox_list;

/* One outbox entry, written into the caller's struct (`struct_size` as for
 * yaok_node_state; smaller than up to `message_id`: YAOK_E_INVALID_ARGUMENT). */
typedef struct yaok_outbox_entry {
    uint32_t struct_size;                        /* in: sizeof(yaok_outbox_entry); out:
                                                    bytes written */
    uint32_t status;                             /* YAOK_MESSAGE_PENDING or _FAILED */
    int64_t contact_id;                          /* the recipient (= conversation) */
    uint8_t message_id[YAOK_MESSAGE_ID_BYTES];
    uint32_t attempts;                           /* attempts that failed so far */
    int32_t waiting_for_transport;               /* 1: no link to the recipient now ("Will
                                                    send when connected") */
    int64_t next_attempt_ms;                     /* when it is tried next, unless a link to
                                                    the contact appears sooner */
    int64_t expires_ms;                          /* when it is given up */
} yaok_outbox_entry;

yaok_status yaok_outbox_list_new(yaok_node *node, yaok_outbox_list **out);

/* Destroys an outbox list. NULL is a no-op. */
void yaok_outbox_list_free(yaok_outbox_list *outbox);

/* How many entries the list holds. */
yaok_status yaok_outbox_list_count(const yaok_outbox_list *outbox, size_t *out_count);

/* Entry `index` (0 to count-1; beyond: YAOK_E_NOT_FOUND) into *out. */
yaok_status yaok_outbox_list_entry(const yaok_outbox_list *outbox, size_t index, yaok_outbox_entry *out);

/* The links open now, as a snapshot: every transport's (LAN, BLE, an app's own), oldest
 * first, with the handshakes still running. Works while locked.
 * *out: free with yaok_link_list_free(). */
typedef struct yaok_link_list yaok_link_list;

/* One open link, written into the caller's struct (`struct_size` as for yaok_node_state;
 * smaller than up to `link_id`: YAOK_E_INVALID_ARGUMENT). */
typedef struct yaok_link_info {
    uint32_t struct_size;          /* in: sizeof(yaok_link_info); out: bytes written */
    int32_t authenticated;         /* 1 once the handshake completed */
    uint64_t link_id;              /* as yaok_link_id and the link events give it */
    const char *transport;         /* "lan", "ble", or an app's own: borrowed until
                                      yaok_link_list_free */
    uint32_t peer;                 /* YAOK_LINK_PEER_* (see yaok_link_peer) */
    int32_t has_contact;           /* 1 if contact_id names the peer */
    int64_t contact_id;            /* the contact at the other end when has_contact, else 0
                                      (a stranger; or a contact not yet matched while locked) */
    int64_t opened_ms;
    int64_t last_received_ms;      /* the last unit taken from it */
} yaok_link_info;

yaok_status yaok_link_list_new(yaok_node *node, yaok_link_list **out);

/* Destroys a link list. NULL is a no-op. */
void yaok_link_list_free(yaok_link_list *links);

/* How many links the list holds. */
yaok_status yaok_link_list_count(const yaok_link_list *links, size_t *out_count);

/* Link `index` (0 to count-1; beyond: YAOK_E_NOT_FOUND) into *out. */
yaok_status yaok_link_list_get(const yaok_link_list *links, size_t index, yaok_link_info *out);

/* ---- carrying for others (docs/PROTOCOL.md §12) ----
 * Every node can carry sealed packets for people it does not know, so that a message
 * crosses a shutdown hop by hop: it reconciles what it carries with each peer it links
 * with, takes and hands on packets (copy budget halved at each hand-over), recognises its
 * own mail, and sends the acknowledgement back the same way. A carrier sees no identity,
 * key or text (§10.8). Carrying needs no keys: it goes on while the node is locked. */

#define YAOK_CARRY_ANYONE 0u   /* take and hand on packets on every link (the default) */
#define YAOK_CARRY_CONTACTS 1u /* only on links with contacts; strangers may still bring own mail */
#define YAOK_CARRY_OFF 2u      /* no carrying at all; switching to it deletes what is carried */

/* Sets whose packets the node carries and the caps of its carry store: `max_packets` and
 * `max_bytes`, 0 for the defaults (2,000 packets, 32 MiB). Kept across restarts; a reset
 * brings back the defaults. Lowering a cap evicts down to it; YAOK_CARRY_OFF deletes every
 * carried packet (zeroed on disk). YAOK_E_INVALID_ARGUMENT for an unknown mode, a cap over
 * 1,000,000 packets, or a byte cap under one packet of 17,408 bytes. Works while locked. */
yaok_status yaok_node_set_carry(yaok_node *node, uint32_t mode, uint32_t max_packets, uint64_t max_bytes);

/* What the node carries (the JSON of YAOK_EVENT_CARRY_ACTIVITY and the "carry" object of
 * yaok_node_diagnostics hold the same figures). The caller owns the struct; set
 * `struct_size` to sizeof(yaok_carry_status) before the call: the library fills only the
 * fields that fit (later versions append fields, never move them), and
 * YAOK_E_INVALID_ARGUMENT if `struct_size` is smaller than this version's first three
 * fields. Held figures survive restarts; the counters count since the node was opened.
 * Works while locked. */
typedef struct yaok_carry_status {
    uint32_t struct_size;               /* in: sizeof(yaok_carry_status); out: bytes written */
    uint32_t mode;                      /* YAOK_CARRY_* */
    uint32_t max_packets;
    uint32_t reserved;                  /* 0 */
    uint64_t max_bytes;
    uint64_t packets_held;              /* carried packets in the store (others' and own) */
    uint64_t bytes_held;
    uint64_t packets_taken;             /* taken from peers */
    uint64_t packets_handed_on;         /* copies handed to peers */
    uint64_t messages_delivered_through_carriers; /* own mail that came through carriers */
    uint64_t acks_through_carriers;     /* own messages acknowledged through carriers */
    uint64_t packets_purged;            /* deleted because their recipient had them */
    uint64_t packets_refused;           /* asked for, then refused (quota, full, expired) */
} yaok_carry_status;

yaok_status yaok_node_carry_status(yaok_node *node, yaok_carry_status *out);

/* ---- security log ----
 * Persisted security events: time, kind and detail, never message content or keys. */

/* The newest `limit` (1 to 1000) events with an id below `before_id` (0: the newest),
 * oldest first, as a JSON array (docs/ABI.md, "security event"). Needs the node unlocked.
 * *out_json: free with yaok_string_free(). */
yaok_status yaok_security_events(yaok_node *node, int64_t before_id, uint32_t limit, char **out_json);

#ifdef __cplusplus
}
#endif

#endif /* YAOK_H */
