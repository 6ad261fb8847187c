/* The typed access of include/yaok.h ("typed access: events, messages, contacts,
 * diagnostics without JSON"): everything here is read field by field, with no JSON at all.
 * Two nodes joined by a memory pipe (as in test_link.c): Alice adds Bob from his card and
 * sends; her events report the message stored and its status turning to delivered, Bob's
 * report the message received, whose text he looks up. Then ownership and misuse: borrowed strings live as long as their
 * handle, an event is readable only inside its callback, wrong kinds and wrong handles are
 * refused. Compiled strictly under ASan/UBSan. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"
#include "memory_pipe.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* (Not wait.h: its one-integer JSON reader is exactly what this test must not need.) */
static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- what the event callbacks saw, read with the typed getters only ---- */

struct seen {
    pthread_mutex_t mutex;
    int delivered;                 /* MESSAGE_STATUS_CHANGED to DELIVERED for `watch` */
    uint8_t watch[YAOK_MESSAGE_ID_BYTES];
    int received;                  /* MESSAGE_RECEIVED */
    int64_t received_from;
    uint8_t received_id[YAOK_MESSAGE_ID_BYTES];
    yaok_node *node;
    yaok_message *incoming;        /* looked up from MESSAGE_RECEIVED */
    int stored_outgoing;           /* MESSAGE_STORED of an outgoing message */
    int transport_running;         /* TRANSPORT_CHANGED "lan" RUNNING, with no error text */
    int locked_manual;             /* LOCKED with text "manual" */
    int wrong_kind_refused;        /* getters for fields the kind lacks: NOT_FOUND */
    int getters_failed;
    const yaok_event *stale;       /* kept past its callback, to show it is refused */
};

static void on_event(void *user_data, const yaok_event *event) {
    struct seen *s = user_data;
    pthread_mutex_lock(&s->mutex);
    s->stale = event;
    int64_t contact_id = 0;
    uint8_t id[YAOK_MESSAGE_ID_BYTES];
    uint32_t status = 99, state = 99;
    const char *text = NULL, *name = NULL;
    switch (event->kind) {
    case YAOK_EVENT_MESSAGE_STATUS_CHANGED:
        if (yaok_event_message_id(event, id) != YAOK_OK || yaok_event_message_status(event, &status) != YAOK_OK ||
            yaok_event_contact_id(event, &contact_id) != YAOK_OK)
            s->getters_failed++;
        else if (memcmp(id, s->watch, sizeof id) == 0 && status == YAOK_MESSAGE_DELIVERED)
            s->delivered++;
        if (yaok_event_transport_name(event, &name) == YAOK_E_NOT_FOUND && name == NULL &&
            yaok_event_text(event, &text) == YAOK_E_NOT_FOUND && text == NULL)
            s->wrong_kind_refused++;
        break;
    case YAOK_EVENT_MESSAGE_RECEIVED:
        if (yaok_event_contact_id(event, &s->received_from) != YAOK_OK ||
            yaok_event_message_id(event, s->received_id) != YAOK_OK)
            s->getters_failed++;
        else if (s->incoming == NULL && yaok_message_lookup(s->node, s->received_from, s->received_id,
                                                            &s->incoming) == YAOK_OK)
            s->received++; /* the handle outlives the callback: freed by the test */
        /* never the content: no message, no status */
        yaok_message *none = NULL;
        if (yaok_event_message(event, &none) == YAOK_E_NOT_FOUND && none == NULL &&
            yaok_event_message_status(event, &status) == YAOK_E_NOT_FOUND && status == 99)
            s->wrong_kind_refused++;
        break;
    case YAOK_EVENT_MESSAGE_STORED: {
        yaok_message *m = NULL;
        uint32_t direction = 99;
        if (yaok_event_message(event, &m) != YAOK_OK || yaok_message_direction(m, &direction) != YAOK_OK)
            s->getters_failed++;
        else if (direction == YAOK_DIRECTION_OUTGOING && yaok_event_message_status(event, &status) == YAOK_OK &&
                 status == YAOK_MESSAGE_PENDING)
            s->stored_outgoing++;
        yaok_message_free(m);
        break;
    }
    case YAOK_EVENT_TRANSPORT_CHANGED:
        if (yaok_event_transport_name(event, &name) == YAOK_OK && strcmp(name, "lan") == 0 &&
            yaok_event_transport_state(event, &state) == YAOK_OK && state == YAOK_TRANSPORT_RUNNING &&
            yaok_event_text(event, &text) == YAOK_E_NOT_FOUND)
            s->transport_running++;
        break;
    case YAOK_EVENT_LOCKED:
        if (yaok_event_text(event, &text) == YAOK_OK && strcmp(text, "manual") == 0) s->locked_manual++;
        if (yaok_event_contact_id(event, &contact_id) == YAOK_E_NOT_FOUND &&
            strstr(yaok_last_error_message(), "YAOK_EVENT_LOCKED (1) has no contact id"))
            s->wrong_kind_refused++;
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&s->mutex);
}

static int read_seen(struct seen *s, const int *field) {
    pthread_mutex_lock(&s->mutex);
    int v = *field;
    pthread_mutex_unlock(&s->mutex);
    return v;
}

/* `a` adds `b` from b's card (read without JSON: through its identity); returns the handle. */
static yaok_contact *add(yaok_node *a, yaok_node *b) {
    yaok_identity *identity = NULL;
    char *card = NULL;
    CHECK(yaok_node_identity(b, &identity) == YAOK_OK && yaok_identity_card(identity, &card) == YAOK_OK);
    yaok_identity_free(identity);
    yaok_contact *contact = NULL;
    CHECK(yaok_contact_add_v2(a, card, &contact) == YAOK_OK && contact != NULL);
    CHECK(yaok_contact_add_v2(a, card, &contact) == YAOK_E_CONTACT_EXISTS);
    yaok_string_free(card);
    return contact;
}

static void test_contacts(yaok_node *alice, yaok_contact *bob) {
    int64_t id = 0;
    const char *name = NULL, *user_id = NULL, *hex = NULL, *grouped = NULL, *short_fp = NULL, *transport = "x";
    int32_t verified = -1;
    uint32_t state = 99;
    int64_t last_seen = -1;
    CHECK(yaok_contact_id(bob, &id) == YAOK_OK && id > 0);
    CHECK(yaok_contact_name(bob, &name) == YAOK_OK && strcmp(name, "Bob") == 0);
    CHECK(yaok_contact_user_id(bob, &user_id) == YAOK_OK && strlen(user_id) == 32);
    CHECK(yaok_contact_fingerprint(bob, YAOK_FINGERPRINT_HEX, &hex) == YAOK_OK && strlen(hex) == 64);
    CHECK(yaok_contact_fingerprint(bob, YAOK_FINGERPRINT_GROUPED, &grouped) == YAOK_OK && strlen(grouped) == 79);
    CHECK(yaok_contact_fingerprint(bob, YAOK_FINGERPRINT_SHORT, &short_fp) == YAOK_OK &&
          strncmp(short_fp, hex, 6) == 0 && strlen(short_fp) == 6);
    const char *untouched = NULL;
    CHECK(yaok_contact_fingerprint(bob, 3, &untouched) == YAOK_E_INVALID_ARGUMENT && untouched == NULL);
    CHECK(yaok_contact_verified(bob, &verified) == YAOK_OK && verified == 0);
    CHECK(yaok_contact_connection(bob, &state, &transport, &last_seen) == YAOK_OK &&
          state == YAOK_CONNECTION_NEVER_CONNECTED && transport == NULL && last_seen == 0);
    CHECK(yaok_contact_connection(bob, &state, NULL, NULL) == YAOK_OK);
    CHECK(yaok_contact_connection(bob, NULL, NULL, NULL) == YAOK_E_NULL_ARGUMENT);

    /* A second handle of the same contact, after a change: a new snapshot. */
    CHECK(yaok_contact_verify(alice, id) == YAOK_OK);
    yaok_contact *again = NULL;
    CHECK(yaok_contact_get(alice, id, &again) == YAOK_OK);
    CHECK(yaok_contact_verified(again, &verified) == YAOK_OK && verified == 1);
    CHECK(yaok_contact_verified(bob, &verified) == YAOK_OK && verified == 0); /* the old one is unchanged */
    yaok_contact_free(again);
    yaok_contact *none = NULL;
    CHECK(yaok_contact_get(alice, 999, &none) == YAOK_E_NOT_FOUND && none == NULL);

    /* ids, like snprintf: the count even when the array is too small. */
    size_t count = 99;
    CHECK(yaok_contact_ids(alice, NULL, 0, &count) == YAOK_OK && count == 1);
    int64_t ids[4] = {0};
    CHECK(yaok_contact_ids(alice, ids, 4, &count) == YAOK_OK && count == 1 && ids[0] == id && ids[1] == 0);
    CHECK(yaok_contact_ids(alice, NULL, 4, &count) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_ids(alice, ids, 4, NULL) == YAOK_E_NULL_ARGUMENT);

    /* Misuse: NULL, a handle of another type, a freed handle. */
    CHECK(yaok_contact_name(NULL, &name) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_name(bob, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_contact_name((const yaok_contact *)alice, &name) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_message_status((const yaok_message *)bob, &state) == YAOK_E_INVALID_ARGUMENT);
    yaok_contact_free(NULL);
}

static void test_messages_and_events(void) {
    char dir_a[64], dir_b[64];
    yaok_node *alice = new_node(dir_a, sizeof dir_a, "Alice");
    yaok_node *bob = new_node(dir_b, sizeof dir_b, "Bob");
    struct seen at_alice = {.node = alice}, at_bob = {.node = bob};
    pthread_mutex_init(&at_alice.mutex, NULL);
    pthread_mutex_init(&at_bob.mutex, NULL);
    CHECK(yaok_node_set_event_callback(alice, on_event, &at_alice, NULL) == YAOK_OK);
    CHECK(yaok_node_set_event_callback(bob, on_event, &at_bob, NULL) == YAOK_OK);

    yaok_contact *bob_contact = add(alice, bob);
    yaok_contact *alice_contact = add(bob, alice);
    test_contacts(alice, bob_contact);
    int64_t bob_id = 0, alice_id = 0;
    CHECK(yaok_contact_id(bob_contact, &bob_id) == YAOK_OK && yaok_contact_id(alice_contact, &alice_id) == YAOK_OK);

    /* Send: the handle is the stored message, pending. */
    const char *text = "hello, typed \xc3\xa9";
    yaok_message *sent = NULL;
    CHECK(yaok_message_send_v2(alice, bob_id, (const uint8_t *)"", 0, &sent) == YAOK_E_EMPTY_MESSAGE && sent == NULL);
    CHECK(yaok_message_send_v2(alice, 999, (const uint8_t *)text, strlen(text), &sent) == YAOK_E_NOT_FOUND);
    CHECK(yaok_message_send_v2(alice, bob_id, (const uint8_t *)text, strlen(text), &sent) == YAOK_OK && sent);
    uint8_t id[YAOK_MESSAGE_ID_BYTES] = {0}, zero[YAOK_MESSAGE_ID_BYTES] = {0};
    uint32_t status = 99, direction = 99;
    int64_t contact_id = 0, ms = -1;
    const char *body = NULL;
    size_t body_len = 0;
    CHECK(yaok_message_id(sent, id) == YAOK_OK && memcmp(id, zero, sizeof id) != 0);
    CHECK(yaok_message_contact_id(sent, &contact_id) == YAOK_OK && contact_id == bob_id);
    CHECK(yaok_message_direction(sent, &direction) == YAOK_OK && direction == YAOK_DIRECTION_OUTGOING);
    CHECK(yaok_message_status(sent, &status) == YAOK_OK && status == YAOK_MESSAGE_PENDING);
    CHECK(yaok_message_text(sent, &body, &body_len) == YAOK_OK && body_len == strlen(text) && strcmp(body, text) == 0);
    CHECK(yaok_message_time(sent, YAOK_TIME_SENDER, &ms) == YAOK_OK && ms > 1600000000000LL);
    CHECK(yaok_message_time(sent, YAOK_TIME_CREATED, &ms) == YAOK_OK && ms > 1600000000000LL);
    ms = -1;
    CHECK(yaok_message_time(sent, YAOK_TIME_SENT, &ms) == YAOK_E_NOT_FOUND && ms == -1);
    CHECK(yaok_message_time(sent, YAOK_TIME_RECEIVED, &ms) == YAOK_E_NOT_FOUND && ms == -1);
    CHECK(yaok_message_time(sent, 7, &ms) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_message_text(sent, &body, NULL) == YAOK_E_NULL_ARGUMENT);
    int32_t repaired = -1;
    CHECK(yaok_message_repaired(sent, &repaired) == YAOK_OK && repaired == 0);
    CHECK(yaok_message_repaired(sent, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_message_repaired(NULL, &repaired) == YAOK_E_NULL_ARGUMENT);
    pthread_mutex_lock(&at_alice.mutex);
    memcpy(at_alice.watch, id, sizeof id);
    pthread_mutex_unlock(&at_alice.mutex);

    /* Join them. */
    struct pipe_end to_bob = {0}, to_alice = {0};
    pthread_mutex_init(&to_bob.mutex, NULL);
    pthread_mutex_init(&to_alice.mutex, NULL);
    yaok_link *a_link = NULL, *b_link = NULL;
    CHECK(yaok_link_open(bob, "memory", YAOK_LINK_RESPONDER, 512, on_send, NULL, &to_alice, NULL, &b_link) == YAOK_OK);
    CHECK(yaok_link_open(alice, "memory", YAOK_LINK_INITIATOR, 512, on_send, NULL, &to_bob, NULL, &a_link) == YAOK_OK);
    connect_end(&to_alice, a_link);
    connect_end(&to_bob, b_link);

    for (int i = 0; i < 1000 && !read_seen(&at_alice, &at_alice.delivered); i++) sleep_ms(10);
    for (int i = 0; i < 500 && !read_seen(&at_bob, &at_bob.received); i++) sleep_ms(10);
    CHECK(read_seen(&at_alice, &at_alice.delivered) == 1);
    CHECK(read_seen(&at_bob, &at_bob.received) == 1);
    pthread_mutex_lock(&at_bob.mutex);
    CHECK(at_bob.received_from == alice_id && memcmp(at_bob.received_id, id, sizeof id) == 0);
    yaok_message *incoming = at_bob.incoming;
    at_bob.incoming = NULL;
    const yaok_event *stale = at_bob.stale;
    pthread_mutex_unlock(&at_bob.mutex);
    CHECK(read_seen(&at_alice, &at_alice.stored_outgoing) == 1);
    CHECK(read_seen(&at_alice, &at_alice.wrong_kind_refused) >= 1);
    CHECK(read_seen(&at_bob, &at_bob.wrong_kind_refused) >= 1);

    /* Bob's copy, looked up from his MESSAGE_RECEIVED event, outlives the callback. */
    uint8_t incoming_id[YAOK_MESSAGE_ID_BYTES] = {0};
    CHECK(incoming != NULL);
    CHECK(yaok_message_id(incoming, incoming_id) == YAOK_OK && memcmp(incoming_id, id, sizeof id) == 0);
    CHECK(yaok_message_contact_id(incoming, &contact_id) == YAOK_OK && contact_id == alice_id);
    CHECK(yaok_message_status(incoming, &status) == YAOK_OK && status == YAOK_MESSAGE_DELIVERED);
    CHECK(yaok_message_time(incoming, YAOK_TIME_RECEIVED, &ms) == YAOK_OK && ms > 1600000000000LL);
    CHECK(yaok_message_time(incoming, YAOK_TIME_SENT, &ms) == YAOK_E_NOT_FOUND);
    CHECK(yaok_message_direction(incoming, &direction) == YAOK_OK && direction == YAOK_DIRECTION_INCOMING);
    int32_t incoming_repaired = -1; /* valid UTF-8: not repaired (PROTOCOL.md §3.2) */
    CHECK(yaok_message_repaired(incoming, &incoming_repaired) == YAOK_OK && incoming_repaired == 0);
    yaok_message *missing = NULL;
    CHECK(yaok_message_lookup(bob, bob_id, zero, &missing) == YAOK_E_NOT_FOUND && missing == NULL);
    CHECK(yaok_message_lookup(alice, bob_id, id, &missing) == YAOK_OK); /* outgoing ones too */
    CHECK(yaok_message_status(missing, &status) == YAOK_OK && status == YAOK_MESSAGE_DELIVERED);
    yaok_message_free(missing);

    /* An event pointer kept past its callback is refused, not read. */
    int64_t x = 0;
    CHECK(stale != NULL && yaok_event_contact_id(stale, &x) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_event_contact_id(NULL, &x) == YAOK_E_NULL_ARGUMENT);
    yaok_event fake = {YAOK_EVENT_MESSAGE_RECEIVED, "{\"contact_id\":1}"};
    CHECK(yaok_event_contact_id(&fake, &x) == YAOK_E_INVALID_ARGUMENT && x == 0);

    /* Transports: the event and a diagnostics snapshot. */
    yaok_diagnostics *d = NULL;
    size_t count = 99;
    CHECK(yaok_diagnostics_new(alice, &d) == YAOK_OK && yaok_diagnostics_transport_count(d, &count) == YAOK_OK &&
          count == 0);
    yaok_diagnostics_free(d);
    CHECK(yaok_transport_lan_add(alice, "127.0.0.1", 0, YAOK_LAN_NO_DISCOVERY, NULL, 0) == YAOK_OK);
    CHECK(yaok_transport_set_enabled(alice, "lan", 1) == YAOK_OK);
    for (int i = 0; i < 500 && !read_seen(&at_alice, &at_alice.transport_running); i++) sleep_ms(10);
    CHECK(read_seen(&at_alice, &at_alice.transport_running) == 1);
    CHECK(yaok_diagnostics_new(alice, &d) == YAOK_OK && yaok_diagnostics_transport_count(d, &count) == YAOK_OK &&
          count == 1);
    const char *name = NULL, *line = NULL;
    uint32_t state = 99, links = 99;
    CHECK(yaok_diagnostics_transport(d, 0, &name, &state, &links, &line) == YAOK_OK && strcmp(name, "lan") == 0 &&
          state == YAOK_TRANSPORT_RUNNING && links == 0 && strcmp(line, "Running") == 0);
    CHECK(yaok_diagnostics_transport(d, 1, &name, &state, &links, &line) == YAOK_E_NOT_FOUND);
    CHECK(yaok_diagnostics_transport(d, 0, NULL, &state, &links, &line) == YAOK_E_NULL_ARGUMENT);

    /* Bluetooth LE from C. Where Bluetooth cannot be used (this test machine's kernel has
     * none) the start says why and what to do, and the LAN goes on running. */
    CHECK(yaok_transport_ble_add(alice, "bt0") == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_transport_ble_add(alice, NULL) == YAOK_OK);
    CHECK(yaok_transport_ble_add(alice, NULL) == YAOK_E_INVALID_ARGUMENT);
    yaok_status ble = yaok_transport_set_enabled(alice, "ble", 1);
    if (ble != YAOK_OK) {
        CHECK(ble == YAOK_E_LINK_FAILED);
        CHECK(yaok_last_error_message() != NULL &&
              strncmp(yaok_last_error_message(), "Bluetooth unavailable: ", 23) == 0);
    }
    CHECK(yaok_transport_set_enabled(alice, "ble", 0) == YAOK_OK);
    yaok_diagnostics *after = NULL;
    CHECK(yaok_diagnostics_new(alice, &after) == YAOK_OK && yaok_diagnostics_transport_count(after, &count) == YAOK_OK &&
          count == 2);
    for (size_t i = 0; i < count; i++) {
        CHECK(yaok_diagnostics_transport(after, i, &name, &state, &links, &line) == YAOK_OK);
        if (strcmp(name, "lan") == 0) CHECK(state == YAOK_TRANSPORT_RUNNING);
        if (strcmp(name, "ble") == 0) CHECK(strcmp(line, "Bluetooth: Disabled") == 0);
    }
    yaok_diagnostics_free(after);

    /* LOCKED carries its reason as text; getters for fields it lacks say which. */
    CHECK(yaok_node_lock(alice) == YAOK_OK);
    for (int i = 0; i < 500 && !read_seen(&at_alice, &at_alice.locked_manual); i++) sleep_ms(10);
    CHECK(read_seen(&at_alice, &at_alice.locked_manual) == 1);
    CHECK(read_seen(&at_alice, &at_alice.getters_failed) == 0 && read_seen(&at_bob, &at_bob.getters_failed) == 0);
    CHECK(yaok_contact_get(alice, bob_id, &bob_contact) == YAOK_E_LOCKED);

    /* Handles need no node: readable after it is freed. */
    disconnect_end(&to_alice);
    disconnect_end(&to_bob);
    yaok_link_close(a_link);
    yaok_link_close(b_link);
    yaok_node_free(alice);
    yaok_node_free(bob);
    CHECK(yaok_message_text(sent, &body, &body_len) == YAOK_OK && strcmp(body, text) == 0);
    CHECK(yaok_message_text(incoming, &body, &body_len) == YAOK_OK && strcmp(body, text) == 0);
    CHECK(yaok_diagnostics_transport(d, 0, &name, &state, &links, &line) == YAOK_OK && strcmp(name, "lan") == 0);
    const char *bob_name = NULL;
    CHECK(yaok_contact_name(bob_contact, &bob_name) == YAOK_OK && strcmp(bob_name, "Bob") == 0);

    yaok_diagnostics_free(d);
    yaok_message_free(sent);
    yaok_message_free(incoming);
    yaok_contact_free(bob_contact);
    yaok_contact_free(alice_contact);
    CHECK(yaok_message_status(sent, &status) == YAOK_E_INVALID_ARGUMENT); /* freed */
    yaok_message_free(sent);                                               /* a second free: ignored */
    yaok_message_free(NULL);
    yaok_diagnostics_free(NULL);
    pthread_mutex_destroy(&at_alice.mutex);
    pthread_mutex_destroy(&at_bob.mutex);
    pthread_mutex_destroy(&to_bob.mutex);
    pthread_mutex_destroy(&to_alice.mutex);
    remove_dir(dir_a);
    remove_dir(dir_b);
}

int main(void) {
    opt_in_to_test_kdf();
    if (yaok_abi_version() != YAOK_ABI_VERSION) return 1;
    test_messages_and_events();
    return REPORT();
}
