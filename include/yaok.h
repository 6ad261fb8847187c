/*
 * yaok.h — the C ABI of Ya OK core, a delay-tolerant end-to-end encrypted messenger engine.
 *
 * This header is hand-written and is the documentation. Link with -lyaok (libyaok.so.1,
 * built by scripts/build-lib). Everything here is stable within one YAOK_ABI_VERSION.
 *
 * ---- Conventions ----
 * Status:    every fallible function returns a yaok_status; 0 (YAOK_OK) is success. Codes
 *            are grouped in ranges and never renumbered. yaok_status_str() names a code;
 *            yaok_last_error_message() gives the detail of this thread's last failure.
 * Outputs:   results come last, through out-pointers, and are written only on success.
 *            On failure the out-pointers are left untouched.
 * Buffers:   every `const uint8_t *buf` is followed by its `size_t len`; NULL is allowed only
 *            when len is 0. Inputs are borrowed for the duration of the call only.
 * Ownership: a string the library returns (char **out) is freed with yaok_string_free();
 *            bytes it returns (uint8_t **out, size_t *out_len) with yaok_bytes_free().
 *            Handles are created by yaok_<type>_new/_decode/_restore and destroyed by
 *            yaok_<type>_free(); every _free accepts NULL as a no-op.
 * Strings:   UTF-8, NUL-terminated. Invalid UTF-8 input is refused (YAOK_E_INVALID_UTF8),
 *            never silently repaired.
 * Safety:    NULL or invalid arguments return an error and never crash. A handle of the
 *            wrong type is refused with YAOK_E_INVALID_ARGUMENT. No Swift error crosses the
 *            boundary.
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
    YAOK_E_PIN_TOO_SHORT = 403,         /* "PIN must be at least 6 digits" */
    YAOK_E_PIN_MISMATCH = 404,          /* "PINs do not match" */
    YAOK_E_STORAGE = 405,
    YAOK_E_DISK_FULL = 406,
    YAOK_E_CORRUPT_STORE = 407,
    YAOK_E_CONFIRMATION_REQUIRED = 408,
    YAOK_E_NOT_INITIALIZED = 409,
    YAOK_E_ALREADY_INITIALIZED = 410,
    YAOK_E_NO_PLATFORM_KEY = 411,       /* "No platform key is registered" */
    YAOK_E_WRONG_PLATFORM_KEY = 412,    /* "Incorrect platform key" */
    YAOK_E_CLOSED = 413,                /* the node was closed (internal use after free) */

    /* 5xx: wire protocol */
    YAOK_E_MALFORMED_PACKET = 500,
    YAOK_E_UNSUPPORTED_VERSION = 501,
    YAOK_E_UNKNOWN_PACKET_TYPE = 502,
    YAOK_E_FRAME_TOO_LARGE = 503,
    YAOK_E_FRAGMENT_INVALID = 504,
    YAOK_E_EXPIRED = 505,

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

/* ---- memory ---- */

/* Frees a string returned by the library. NULL is a no-op. */
void yaok_string_free(char *s);

/* Wipes and frees bytes returned by the library; pass the length it returned. NULL is a
 * no-op. */
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

/* Fingerprint formats. */
#define YAOK_FINGERPRINT_HEX 0      /* 64 upper-case hex characters */
#define YAOK_FINGERPRINT_GROUPED 1  /* 16 groups of 4, separated by spaces */
#define YAOK_FINGERPRINT_SHORT 2    /* the first 6 hex characters */

/* Creates a fresh identity. `name` is 2 to 50 characters as a person counts them (an emoji
 * is one), surrounding white space removed; else YAOK_E_INVALID_NAME.
 * On success *out owns a new handle: free it with yaok_identity_free(). */
yaok_status yaok_identity_new(const char *name, yaok_identity **out);

/* Rebuilds an identity from its YAOK_IDENTITY_SECRET_BYTES secret: the X25519 secret key
 * (32) followed by the Ed25519 seed (32). For test vectors and restore from a platform
 * keystore. `secrets` is borrowed; wipe your copy afterwards. */
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
 * stored. */

typedef struct yaok_card yaok_card;

/* Decodes and verifies card text. Another app's QR text, an unknown version, corrupted data
 * or a bad signature: YAOK_E_INVALID_CARD ("Invalid Ya OK QR code").
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
 * The end-to-end encryption of one message (docs/PROTOCOL.md, "Message envelope").
 * message_id (YAOK_MESSAGE_ID_BYTES) and timestamp_ms travel in the packet header; they
 * are bound into the envelope, so opening with other values fails as YAOK_E_TAMPERED. */

/* Seals `body` (1 to YAOK_MAX_MESSAGE_BYTES bytes) from `sender` to `recipient`.
 * Errors: YAOK_E_EMPTY_MESSAGE, YAOK_E_MESSAGE_TOO_LARGE.
 * *out_sealed (*out_sealed_len bytes): free with yaok_bytes_free(). */
yaok_status yaok_envelope_seal(const yaok_identity *sender, const yaok_card *recipient,
                               const uint8_t *body, size_t body_len,
                               const uint8_t *message_id, uint64_t timestamp_ms,
                               uint8_t **out_sealed, size_t *out_sealed_len);

/* Opens an envelope addressed to `recipient`. `senders` lists the known contacts
 * (`senders_count` cards, NULL when 0). Each failure has its own status:
 * YAOK_E_NOT_FOR_ME, YAOK_E_TAMPERED, YAOK_E_SENDER_AUTH_FAILED, YAOK_E_UNKNOWN_SENDER
 * (authentic, but from no card in `senders`), YAOK_E_MALFORMED_ENVELOPE.
 * On success *out_body (*out_body_len bytes) is the plaintext: free it with
 * yaok_bytes_free(), which wipes it; *out_sender_index is the sender's index in `senders`. */
yaok_status yaok_envelope_open(const yaok_identity *recipient,
                               const yaok_card *const *senders, size_t senders_count,
                               const uint8_t *sealed, size_t sealed_len,
                               const uint8_t *message_id, uint64_t timestamp_ms,
                               uint8_t **out_body, size_t *out_body_len, size_t *out_sender_index);

#ifdef __cplusplus
}
#endif

#endif /* YAOK_H */
