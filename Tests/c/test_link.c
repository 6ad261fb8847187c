/* The delivery engine through the C ABI: two nodes in one process joined by links the
 * application carries itself (a memory pipe: each link's send callback hands the unit to
 * the other link with yaok_link_receive). Alice sends, the message is delivered, Bob's
 * history has it and his MESSAGE_RECEIVED event does not. Then misuse: NULL arguments, a
 * bad MTU or role, receive on a closed link. Compiled strictly under ASan/UBSan.
 * Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"
#include "memory_pipe.h"
#include "wait.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Copies the string value of "key" in a flat JSON object (no escapes expected). */
static int json_str(const char *json, const char *key, char *out, size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *p = strstr(json, pattern);
    if (!p) return 0;
    p += strlen(pattern);
    const char *end = strchr(p, '"');
    if (!end || (size_t)(end - p) >= size) return 0;
    memcpy(out, p, (size_t)(end - p));
    out[end - p] = '\0';
    return 1;
}

static void hex_to_bytes(const char *hex, uint8_t *out, size_t n) {
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (uint8_t)v;
    }
}

static int read_int(pthread_mutex_t *mutex, const int *field) {
    pthread_mutex_lock(mutex);
    int v = *field;
    pthread_mutex_unlock(mutex);
    return v;
}

struct inbox {
    pthread_mutex_t mutex;
    int received;
    int had_text;
    long long contact_id;
};

static void on_event(void *user_data, const yaok_event *event) {
    struct inbox *in = user_data;
    if (event->kind != YAOK_EVENT_MESSAGE_RECEIVED) return;
    pthread_mutex_lock(&in->mutex);
    in->received++;
    in->contact_id = json_int(event->json, "contact_id");
    if (strstr(event->json, "hello") || strstr(event->json, "\"text\"")) in->had_text = 1;
    pthread_mutex_unlock(&in->mutex);
}

/* `a` adds `b` from b's profile card; returns the contact id. */
static long long add_from_profile(yaok_node *a, yaok_node *b) {
    char *json = NULL;
    static char card[2048];
    CHECK(yaok_node_profile(b, &json) == YAOK_OK && json_str(json, "card", card, sizeof card));
    yaok_string_free(json);
    CHECK(yaok_contact_add(a, card, &json) == YAOK_OK);
    long long id = json ? json_int(json, "id") : -1;
    yaok_string_free(json);
    return id;
}

static void test_delivery(void) {
    char dir_a[64], dir_b[64];
    yaok_node *alice = new_node(dir_a, sizeof dir_a, "Alice");
    yaok_node *bob = new_node(dir_b, sizeof dir_b, "Bob");
    long long bob_id = add_from_profile(alice, bob);
    long long alice_id = add_from_profile(bob, alice);
    CHECK(bob_id > 0 && alice_id > 0);

    struct inbox inbox = {.contact_id = -1};
    pthread_mutex_init(&inbox.mutex, NULL);
    CHECK(yaok_node_set_event_callback(bob, on_event, &inbox, NULL) == YAOK_OK);

    /* Sent before any link: it waits in the outbox. */
    const char *text = "hello over a link \xc3\xa9";
    char *json = NULL;
    CHECK(yaok_message_send(alice, bob_id, (const uint8_t *)text, strlen(text), &json) == YAOK_OK);
    char id_hex[40] = {0};
    CHECK(json && json_str(json, "message_id", id_hex, sizeof id_hex) && strlen(id_hex) == 32);
    yaok_string_free(json);
    uint8_t message_id[YAOK_MESSAGE_ID_BYTES];
    hex_to_bytes(id_hex, message_id, sizeof message_id);
    CHECK(yaok_outbox(alice, &json) == YAOK_OK && strstr(json, id_hex) && strstr(json, "Will send when connected"));
    yaok_string_free(json);

    /* The pipe: a small MTU, so packets are fragmented. */
    struct pipe_end to_bob = {0}, to_alice = {0};
    pthread_mutex_init(&to_bob.mutex, NULL);
    pthread_mutex_init(&to_alice.mutex, NULL);
    yaok_link *a_link = NULL, *b_link = NULL;
    CHECK(yaok_link_open(bob, "memory", YAOK_LINK_RESPONDER, 64, on_send, on_closed, &to_alice, on_free, &b_link) ==
          YAOK_OK);
    CHECK(yaok_link_open(alice, "memory", YAOK_LINK_INITIATOR, 64, on_send, on_closed, &to_bob, on_free, &a_link) ==
          YAOK_OK);
    connect_end(&to_alice, a_link);
    connect_end(&to_bob, b_link);

    int delivered = 0;
    for (int i = 0; i < 1000 && !delivered; i++) {
        CHECK(yaok_message_get(alice, message_id, &json) == YAOK_OK);
        delivered = json && strstr(json, "\"status\":\"delivered\"") != NULL;
        yaok_string_free(json);
        if (!delivered) sleep_ms(10);
    }
    CHECK(delivered);
    CHECK(yaok_outbox(alice, &json) == YAOK_OK && strcmp(json, "[]") == 0);
    yaok_string_free(json);
    CHECK(yaok_message_history(bob, alice_id, NULL, 10, &json) == YAOK_OK && strstr(json, text) &&
          strstr(json, "\"direction\":\"incoming\""));
    yaok_string_free(json);
    for (int i = 0; i < 500 && read_int(&inbox.mutex, &inbox.received) == 0; i++) sleep_ms(10);
    CHECK(read_int(&inbox.mutex, &inbox.received) == 1);
    CHECK(read_int(&inbox.mutex, &inbox.had_text) == 0);
    pthread_mutex_lock(&inbox.mutex);
    CHECK(inbox.contact_id == alice_id);
    pthread_mutex_unlock(&inbox.mutex);
    CHECK(yaok_message_retry(alice, message_id, &json) == YAOK_E_INVALID_ARGUMENT);

    /* Who is at the other end: a contact, also while locked. */
    int32_t authenticated = -1;
    uint32_t peer = 99;
    CHECK(yaok_link_peer(a_link, &authenticated, &peer) == YAOK_OK && authenticated == 1 &&
          peer == YAOK_LINK_PEER_CONTACT);
    CHECK(yaok_node_lock(alice) == YAOK_OK);
    CHECK(yaok_link_peer(a_link, &authenticated, &peer) == YAOK_OK && authenticated == 1 &&
          peer == YAOK_LINK_PEER_CONTACT);
    CHECK(yaok_node_unlock(alice, PIN) == YAOK_OK);
    CHECK(yaok_link_peer(a_link, NULL, &peer) == YAOK_E_NULL_ARGUMENT);

    /* Diagnostics show the link; contacts' keys come back from the store. */
    CHECK(yaok_node_diagnostics(alice, &json) == YAOK_OK && strstr(json, "\"links\":[{") &&
          strstr(json, "\"transport\":\"memory\"") && strstr(json, "\"held_packets\":0"));
    yaok_string_free(json);
    CHECK(yaok_contact_keys(alice, bob_id, &json) == YAOK_OK && strstr(json, "\"name\":\"Bob\"") &&
          strstr(json, "\"encryption_key\":\"") && strstr(json, "\"signing_key\":\"") &&
          strstr(json, "\"card\":\"yaok:2:"));
    yaok_string_free(json);
    CHECK(yaok_contact_keys(alice, 999, &json) == YAOK_E_NOT_FOUND);
    CHECK(yaok_transport_set_enabled(alice, "lan", 1) == YAOK_E_NOT_FOUND);
    CHECK(strcmp(yaok_last_error_message(), "No transport named lan") == 0);

    /* Closing: user_data is freed once, and never before the pipe stops using it. */
    disconnect_end(&to_alice);
    disconnect_end(&to_bob);
    yaok_link_close(a_link);
    yaok_link_close(b_link);
    yaok_link_close(NULL);
    for (int i = 0; i < 500 && (read_int(&to_bob.mutex, &to_bob.freed) == 0 ||
                                read_int(&to_alice.mutex, &to_alice.freed) == 0); i++) sleep_ms(10);
    CHECK(read_int(&to_bob.mutex, &to_bob.freed) == 1 && read_int(&to_alice.mutex, &to_alice.freed) == 1);
    CHECK(read_int(&to_bob.mutex, &to_bob.closed) == 0); /* closed by us: no closed callback */
    CHECK(yaok_link_receive(a_link, (const uint8_t *)"x", 1) == YAOK_E_INVALID_ARGUMENT); /* freed */

    yaok_node_free(alice);
    yaok_node_free(bob);
    CHECK(read_int(&to_bob.mutex, &to_bob.freed) == 1 && read_int(&to_alice.mutex, &to_alice.freed) == 1);
    for (int i = 0; i < to_bob.waiting_count; i++) free(to_bob.waiting[i]);
    for (int i = 0; i < to_alice.waiting_count; i++) free(to_alice.waiting[i]);
    pthread_mutex_destroy(&inbox.mutex);
    pthread_mutex_destroy(&to_bob.mutex);
    pthread_mutex_destroy(&to_alice.mutex);
    remove_dir(dir_a);
    remove_dir(dir_b);
}

static void test_misuse(void) {
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir, "Alice");
    struct pipe_end end = {0};
    pthread_mutex_init(&end.mutex, NULL);
    yaok_link *link = NULL;

    CHECK(yaok_link_open(NULL, "x", YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, &link) ==
          YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_link_open(node, NULL, YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, &link) ==
          YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_link_open(node, "x", YAOK_LINK_INITIATOR, 100, NULL, NULL, &end, on_free, &link) ==
          YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_link_open(node, "x", YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, NULL) ==
          YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_link_open(node, "x", YAOK_LINK_INITIATOR, YAOK_LINK_MIN_MTU - 1, on_send, NULL, &end, on_free,
                         &link) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_link_open(node, "x", 7, 100, on_send, NULL, &end, on_free, &link) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_link_open(node, "", YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, &link) ==
          YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_link_open(node, "\xff", YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, &link) ==
          YAOK_E_INVALID_UTF8);
    CHECK(link == NULL);
    CHECK(read_int(&end.mutex, &end.freed) == 0); /* a failed open keeps nothing, frees nothing */
    CHECK(yaok_link_receive(NULL, (const uint8_t *)"x", 1) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_link_receive((yaok_link *)node, (const uint8_t *)"x", 1) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_message_get(node, NULL, NULL) == YAOK_E_NULL_ARGUMENT);
    uint8_t unknown[YAOK_MESSAGE_ID_BYTES] = {0};
    char *json = NULL;
    CHECK(yaok_message_get(node, unknown, &json) == YAOK_E_NOT_FOUND && json == NULL);
    CHECK(yaok_message_retry(node, unknown, &json) == YAOK_E_NOT_FOUND);
    CHECK(yaok_outbox(NULL, &json) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_node_diagnostics(node, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_transport_set_enabled(node, NULL, 1) == YAOK_E_NULL_ARGUMENT);

    /* A peer that speaks nonsense: the node closes the link, calls `closed`, and a later
     * receive is refused with YAOK_E_CLOSED. */
    CHECK(yaok_link_open(node, "junk", YAOK_LINK_RESPONDER, 65535, on_send, on_closed, &end, on_free, &link) ==
          YAOK_OK && link != NULL);
    CHECK(yaok_link_receive(link, NULL, 3) == YAOK_E_NULL_ARGUMENT);
    uint8_t junk[64];
    memset(junk, 0x5a, sizeof junk);
    CHECK(yaok_link_receive(link, junk, sizeof junk) == YAOK_OK);
    for (int i = 0; i < 500 && read_int(&end.mutex, &end.closed) == 0; i++) sleep_ms(10);
    CHECK(read_int(&end.mutex, &end.closed) == 1);
    CHECK(yaok_link_receive(link, junk, sizeof junk) == YAOK_E_CLOSED);
    for (int i = 0; i < 500 && read_int(&end.mutex, &end.freed) == 0; i++) sleep_ms(10);
    CHECK(read_int(&end.mutex, &end.freed) == 1); /* closed by the node: freed without yaok_link_close */
    yaok_link_close(link);
    yaok_link_close(link); /* a second close is a no-op */
    CHECK(read_int(&end.mutex, &end.freed) == 1);

    /* Links need the keys loaded once since the node was opened. */
    yaok_node_free(node);
    node = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    link = NULL;
    CHECK(yaok_link_open(node, "x", YAOK_LINK_INITIATOR, 100, on_send, NULL, &end, on_free, &link) == YAOK_E_LOCKED);
    CHECK(link == NULL);
    yaok_node_free(node);
    CHECK(read_int(&end.mutex, &end.freed) == 1);
    pthread_mutex_destroy(&end.mutex);
    remove_dir(dir);
}

int main(void) {
    opt_in_to_test_kdf();
    test_delivery();
    test_misuse();
    return REPORT();
}
