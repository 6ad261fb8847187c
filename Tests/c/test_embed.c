/* The common path of an embedder, typed and without JSON (issue 21): a first run found
 * without an unlock attempt, one's own card without the secret keys, the node's state, the
 * outbox, a page of history and the open links, over two nodes joined by a socketpair
 * through yaok_link_open_stream (the library frames; the reader feeds raw chunks of 7 bytes,
 * any split). The send callback reads the handle where *out put it: it must be set before
 * the first unit. Link events say opened, authenticated (contact) and closed (reason). A
 * broken stream closes the link with YAOK_E_FRAME_TOO_LARGE, and a closed link says so.
 * Compiled strictly under ASan/UBSan. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- one side of a socketpair carrying a stream link ---- */

struct conn {
    pthread_mutex_t mutex;
    int fd;
    yaok_link *link;            /* written by yaok_link_open_stream's *out */
    int sends, sends_without_handle, closed, freed;
    char closed_reason[160];
    pthread_t reader;
};

static yaok_status on_send(void *user_data, const uint8_t *frame, size_t len) {
    struct conn *c = user_data;
    pthread_mutex_lock(&c->mutex);
    c->sends++;
    if (c->link == NULL) c->sends_without_handle++;
    pthread_mutex_unlock(&c->mutex);
    size_t off = 0;
    while (off < len) {
        ssize_t n = send(c->fd, frame + off, len - off, MSG_NOSIGNAL);   /* no SIGPIPE after close */
        if (n <= 0) break;
        off += (size_t)n;
    }
    return YAOK_OK;
}

static void on_closed(void *user_data, const char *reason) {
    struct conn *c = user_data;
    pthread_mutex_lock(&c->mutex);
    c->closed++;
    snprintf(c->closed_reason, sizeof c->closed_reason, "%s", reason);
    pthread_mutex_unlock(&c->mutex);
}

static void on_free(void *user_data) {
    struct conn *c = user_data;
    pthread_mutex_lock(&c->mutex);
    c->freed++;
    pthread_mutex_unlock(&c->mutex);
}

/* Feeds what the socket gives, 7 bytes at a time, to the link: the stream's own splits. */
static void *reader(void *arg) {
    struct conn *c = arg;
    uint8_t buf[7];
    for (;;) {
        ssize_t n = read(c->fd, buf, sizeof buf);
        if (n <= 0) break;
        pthread_mutex_lock(&c->mutex);
        yaok_link *link = c->link;
        pthread_mutex_unlock(&c->mutex);
        if (link) yaok_link_receive(link, buf, (size_t)n);
    }
    return NULL;
}

static int read_int(struct conn *c, const int *field) {
    pthread_mutex_lock(&c->mutex);
    int v = *field;
    pthread_mutex_unlock(&c->mutex);
    return v;
}

/* ---- events, read with the typed getters only ---- */

struct watch {
    pthread_mutex_t mutex;
    int opened, authenticated, closed, received;
    uint64_t opened_id, authenticated_id, closed_id;
    uint32_t peer;
    int64_t peer_contact;
    char transport[40];
    char closed_reason[160];
};

static void on_event(void *user_data, const yaok_event *event) {
    struct watch *w = user_data;
    pthread_mutex_lock(&w->mutex);
    uint64_t id = 0;
    const char *text = NULL;
    switch (event->kind) {
    case YAOK_EVENT_LINK_OPENED:
        CHECK(yaok_event_link_id(event, &id) == YAOK_OK);
        if (yaok_event_transport_name(event, &text) == YAOK_OK) snprintf(w->transport, sizeof w->transport, "%s", text);
        w->opened++;
        w->opened_id = id;
        break;
    case YAOK_EVENT_LINK_AUTHENTICATED:
        CHECK(yaok_event_link_id(event, &id) == YAOK_OK);
        CHECK(yaok_event_link_peer(event, &w->peer) == YAOK_OK);
        if (yaok_event_contact_id(event, &w->peer_contact) != YAOK_OK) w->peer_contact = -1;
        w->authenticated++;
        w->authenticated_id = id;
        break;
    case YAOK_EVENT_LINK_CLOSED:
        CHECK(yaok_event_link_id(event, &id) == YAOK_OK);
        if (yaok_event_text(event, &text) == YAOK_OK) snprintf(w->closed_reason, sizeof w->closed_reason, "%s", text);
        w->closed++;
        w->closed_id = id;
        break;
    case YAOK_EVENT_MESSAGE_RECEIVED:
        w->received++;
        CHECK(yaok_event_link_id(event, &id) == YAOK_E_NOT_FOUND);
        break;
    default:
        break;
    }
    pthread_mutex_unlock(&w->mutex);
}

static int watched(struct watch *w, const int *field) {
    pthread_mutex_lock(&w->mutex);
    int v = *field;
    pthread_mutex_unlock(&w->mutex);
    return v;
}

static int wait_for(struct watch *w, const int *field, int at_least) {
    for (int i = 0; i < 500 && watched(w, field) < at_least; i++) sleep_ms(20);
    return watched(w, field) >= at_least;
}

static yaok_node_state state_of(yaok_node *node) {
    yaok_node_state s;
    memset(&s, 0xAB, sizeof s);
    s.struct_size = sizeof s;
    CHECK(yaok_node_get_state(node, &s) == YAOK_OK);
    return s;
}

static size_t outbox_count(yaok_node *node) {
    yaok_outbox_list *o = NULL;
    size_t n = 999;
    CHECK(yaok_outbox_list_new(node, &o) == YAOK_OK);
    CHECK(yaok_outbox_list_count(o, &n) == YAOK_OK);
    yaok_outbox_list_free(o);
    return n;
}

/* A first run, told apart without trying an unlock; the own card without secret keys. */
static void test_first_run_and_card(void) {
    char dir[64];
    make_dir(dir, sizeof dir);
    yaok_node *node = NULL;
    CHECK(yaok_node_open(dir, YAOK_NODE_OPEN_TEST_FAST_KDF, &node) == YAOK_OK);
    yaok_node_state s = state_of(node);
    CHECK(s.initialized == 0 && s.locked == 1 && s.counts_known == 0 && s.contacts == 0);
    CHECK(s.transports == 0 && s.links_open == 0);
    /* Nothing counted as a wrong attempt. */
    CHECK(s.failed_attempts == 0 && s.lockout_seconds == 0);
    yaok_card *card = NULL;
    CHECK(yaok_node_card(node, &card) == YAOK_E_LOCKED && card == NULL);

    uint32_t warnings = 0;
    CHECK(yaok_node_setup(node, "Carol", PIN, PIN, &warnings) == YAOK_OK);
    s = state_of(node);
    CHECK(s.initialized == 1 && s.locked == 0 && s.counts_known == 1 && s.messages_waiting == 0);

    CHECK(yaok_node_card(node, &card) == YAOK_OK && card != NULL);
    char *text = NULL, *fingerprint = NULL, *name = NULL;
    CHECK(yaok_card_text(card, &text) == YAOK_OK && strncmp(text, "yaok:2:", 7) == 0);  /* the node's card has a prekey (PROTOCOL.md §13.4) */
    CHECK(yaok_card_fingerprint(card, YAOK_FINGERPRINT_GROUPED, &fingerprint) == YAOK_OK && strlen(fingerprint) == 79);
    CHECK(yaok_card_name(card, &name) == YAOK_OK && strcmp(name, "Carol") == 0);
    yaok_string_free(text);
    yaok_string_free(fingerprint);
    yaok_string_free(name);
    yaok_card_free(card);

    /* A caller-sized struct: a size below the lock fields is refused, a short one is
     * written only as far as it reaches. */
    yaok_node_state small;
    memset(&small, 0xCD, sizeof small);
    small.struct_size = 8;
    CHECK(yaok_node_get_state(node, &small) == YAOK_E_INVALID_ARGUMENT);
    small.struct_size = 5 * sizeof(uint32_t);
    CHECK(yaok_node_get_state(node, &small) == YAOK_OK && small.initialized == 1 && small.failed_attempts == 0);
    CHECK(small.transports == 0xCDCDCDCDu);
    CHECK(yaok_node_get_state(node, NULL) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_node_get_state(NULL, &s) == YAOK_E_NULL_ARGUMENT);

    /* The handle first: the initiator's first unit reaches the send callback only after
     * *out was written (before, it raced yaok_link_open's return), on a unit link and a
     * stream link alike. */
    static struct conn probe = {.mutex = PTHREAD_MUTEX_INITIALIZER, .fd = -1};
    for (int i = 0; i < 40; i++) {
        pthread_mutex_lock(&probe.mutex);
        probe.link = NULL;
        int before = probe.sends;
        pthread_mutex_unlock(&probe.mutex);
        yaok_link *link = NULL;
        CHECK((i % 2 ? yaok_link_open(node, "radio", YAOK_LINK_INITIATOR, 64, on_send, NULL, &probe, NULL, &probe.link)
                     : yaok_link_open_stream(node, "sock", YAOK_LINK_INITIATOR, on_send, NULL, &probe, NULL, &probe.link))
              == YAOK_OK);
        for (int j = 0; j < 250 && read_int(&probe, &probe.sends) == before; j++) sleep_ms(2);
        pthread_mutex_lock(&probe.mutex);
        link = probe.link;
        pthread_mutex_unlock(&probe.mutex);
        yaok_link_close(link);
    }
    CHECK(read_int(&probe, &probe.sends) >= 40);
    CHECK(read_int(&probe, &probe.sends_without_handle) == 0);

    yaok_node_free(node);
    remove_dir(dir);
}

static void open_stream(yaok_node *node, struct conn *c, uint32_t role) {
    CHECK(yaok_link_open_stream(node, "sock", role, on_send, on_closed, c, on_free, &c->link) == YAOK_OK);
}

static void test_two_nodes_over_a_socketpair(void) {
    char dir_a[64], dir_b[64];
    yaok_node *alice = new_node(dir_a, sizeof dir_a, "Alice");
    yaok_node *bob = new_node(dir_b, sizeof dir_b, "Bob");
    static struct watch wa = {.mutex = PTHREAD_MUTEX_INITIALIZER}, wb = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    CHECK(yaok_node_set_event_callback(alice, on_event, &wa, NULL) == YAOK_OK);
    CHECK(yaok_node_set_event_callback(bob, on_event, &wb, NULL) == YAOK_OK);

    /* Each adds the other from the card yaok_node_card gives. */
    yaok_card *card = NULL;
    char *text = NULL;
    yaok_contact *contact = NULL;
    int64_t bob_id = 0, alice_id = 0;
    CHECK(yaok_node_card(bob, &card) == YAOK_OK && yaok_card_text(card, &text) == YAOK_OK);
    CHECK(yaok_contact_add_v2(alice, text, &contact) == YAOK_OK && yaok_contact_id(contact, &bob_id) == YAOK_OK);
    yaok_contact_free(contact);
    yaok_string_free(text);
    yaok_card_free(card);
    CHECK(yaok_node_card(alice, &card) == YAOK_OK && yaok_card_text(card, &text) == YAOK_OK);
    CHECK(yaok_contact_add_v2(bob, text, &contact) == YAOK_OK && yaok_contact_id(contact, &alice_id) == YAOK_OK);
    yaok_contact_free(contact);
    yaok_string_free(text);
    yaok_card_free(card);

    /* Three messages before any link: all in the outbox, waiting for a transport. */
    const char *texts[] = {"one", "two", "three"};
    for (int i = 0; i < 3; i++) {
        yaok_message *m = NULL;
        CHECK(yaok_message_send_v2(alice, bob_id, (const uint8_t *)texts[i], strlen(texts[i]), &m) == YAOK_OK);
        yaok_message_free(m);
    }
    yaok_outbox_list *outbox = NULL;
    size_t n = 0;
    CHECK(yaok_outbox_list_new(alice, &outbox) == YAOK_OK && yaok_outbox_list_count(outbox, &n) == YAOK_OK && n == 3);
    yaok_outbox_entry e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    CHECK(yaok_outbox_list_entry(outbox, 0, &e) == YAOK_OK);
    CHECK(e.contact_id == bob_id && e.status == YAOK_MESSAGE_PENDING && e.waiting_for_transport == 1 && e.expires_ms > 0);
    CHECK(yaok_outbox_list_entry(outbox, 3, &e) == YAOK_E_NOT_FOUND);
    e.struct_size = 4;
    CHECK(yaok_outbox_list_entry(outbox, 0, &e) == YAOK_E_INVALID_ARGUMENT);
    yaok_outbox_list_free(outbox);
    yaok_node_state s = state_of(alice);
    CHECK(s.counts_known == 1 && s.contacts == 1 && s.contacts_online == 0 && s.messages_waiting == 3);

    /* A socketpair: Alice connects (initiator), Bob accepts. */
    int fds[2];
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    static struct conn ca = {.mutex = PTHREAD_MUTEX_INITIALIZER}, cb = {.mutex = PTHREAD_MUTEX_INITIALIZER};
    ca.fd = fds[0];
    cb.fd = fds[1];
    open_stream(bob, &cb, YAOK_LINK_RESPONDER);
    CHECK(pthread_create(&cb.reader, NULL, reader, &cb) == 0);
    open_stream(alice, &ca, YAOK_LINK_INITIATOR);
    CHECK(pthread_create(&ca.reader, NULL, reader, &ca) == 0);

    /* Delivered: the outbox empties; Bob's history holds the three, page by page. */
    CHECK(wait_for(&wb, &wb.received, 3));
    for (int i = 0; i < 500 && outbox_count(alice) > 0; i++) sleep_ms(20);
    CHECK(outbox_count(alice) == 0);
    CHECK(read_int(&ca, &ca.sends) > 0 && read_int(&ca, &ca.sends_without_handle) == 0);
    CHECK(read_int(&cb, &cb.sends) > 0 && read_int(&cb, &cb.sends_without_handle) == 0);

    yaok_history *page = NULL;
    CHECK(yaok_history_new(bob, alice_id, NULL, 2, &page) == YAOK_OK);
    CHECK(yaok_history_count(page, &n) == YAOK_OK && n == 2);
    yaok_message *m = NULL;
    const char *body = NULL;
    size_t len = 0;
    uint32_t direction = 9;
    CHECK(yaok_history_message(page, 1, &m) == YAOK_OK && yaok_message_text(m, &body, &len) == YAOK_OK);
    CHECK(len == 5 && memcmp(body, "three", 5) == 0);
    CHECK(yaok_message_direction(m, &direction) == YAOK_OK && direction == YAOK_DIRECTION_INCOMING);
    CHECK(yaok_history_message(page, 2, &m) == YAOK_E_NOT_FOUND);
    const char *cursor = NULL;
    CHECK(yaok_history_older_cursor(page, &cursor) == YAOK_OK && cursor != NULL);
    yaok_history *older = NULL;
    CHECK(yaok_history_new(bob, alice_id, cursor, 2, &older) == YAOK_OK);
    yaok_history_free(page);  /* the message handle outlives its page */
    CHECK(yaok_message_text(m, &body, &len) == YAOK_OK && len == 5);
    yaok_message_free(m);
    CHECK(yaok_history_count(older, &n) == YAOK_OK && n == 1);
    CHECK(yaok_history_older_cursor(older, &cursor) == YAOK_E_NOT_FOUND);
    CHECK(yaok_history_message(older, 0, &m) == YAOK_OK && yaok_message_text(m, &body, &len) == YAOK_OK);
    CHECK(len == 3 && memcmp(body, "one", 3) == 0);
    yaok_message_free(m);
    yaok_history_free(older);

    /* The open links, typed; the events named the same link. */
    CHECK(wait_for(&wa, &wa.authenticated, 1));
    uint64_t alice_link_id = 0;
    CHECK(yaok_link_id(ca.link, &alice_link_id) == YAOK_OK);
    yaok_link_list *links = NULL;
    CHECK(yaok_link_list_new(alice, &links) == YAOK_OK && yaok_link_list_count(links, &n) == YAOK_OK && n == 1);
    yaok_link_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    CHECK(yaok_link_list_get(links, 0, &info) == YAOK_OK);
    CHECK(info.link_id == alice_link_id && info.authenticated == 1 && info.peer == YAOK_LINK_PEER_CONTACT);
    CHECK(info.has_contact == 1 && info.contact_id == bob_id && strcmp(info.transport, "sock") == 0);
    CHECK(info.opened_ms > 0 && info.last_received_ms >= info.opened_ms);
    CHECK(yaok_link_list_get(links, 1, &info) == YAOK_E_NOT_FOUND);
    yaok_link_list_free(links);
    pthread_mutex_lock(&wa.mutex);
    CHECK(wa.opened == 1 && wa.opened_id == alice_link_id && strcmp(wa.transport, "sock") == 0);
    CHECK(wa.authenticated_id == alice_link_id && wa.peer == YAOK_LINK_PEER_CONTACT && wa.peer_contact == bob_id);
    pthread_mutex_unlock(&wa.mutex);
    s = state_of(alice);
    CHECK(s.links_open == 1 && s.contacts_online == 1 && s.messages_waiting == 0);

    /* Alice closes hers: LINK_CLOSED with the application's reason. */
    yaok_link_close(ca.link);
    CHECK(wait_for(&wa, &wa.closed, 1));
    CHECK(wa.closed_id == alice_link_id && strstr(wa.closed_reason, "application") != NULL);
    pthread_mutex_lock(&cb.mutex);
    yaok_link *bl = cb.link;
    cb.link = NULL;
    pthread_mutex_unlock(&cb.mutex);
    yaok_link_close(bl);
    shutdown(fds[0], SHUT_RDWR);
    shutdown(fds[1], SHUT_RDWR);
    pthread_join(ca.reader, NULL);
    pthread_join(cb.reader, NULL);
    close(fds[0]);
    close(fds[1]);
    CHECK(read_int(&ca, &ca.freed) == 1 && read_int(&cb, &cb.freed) == 1);

    /* A broken stream: a frame longer than any packet. The link closes (closed callback and
     * LINK_CLOSED on the event thread), the call says why, and the next call says the LINK
     * is closed. (A link of its own with no reader, so no other bytes are mid-frame.) */
    static struct conn cx = {.mutex = PTHREAD_MUTEX_INITIALIZER, .fd = -1};
    int bob_closed_before = watched(&wb, &wb.closed);
    open_stream(bob, &cx, YAOK_LINK_RESPONDER);
    const uint8_t oversized[] = {0xFF, 0xFF, 1, 2, 3};
    CHECK(yaok_link_receive(cx.link, oversized, sizeof oversized) == YAOK_E_FRAME_TOO_LARGE);
    for (int i = 0; i < 500 && read_int(&cx, &cx.closed) == 0; i++) sleep_ms(20);
    CHECK(read_int(&cx, &cx.closed) == 1 && strstr(cx.closed_reason, "Stream framing broken") != NULL);
    CHECK(yaok_link_receive(cx.link, oversized, 1) == YAOK_E_CLOSED);
    CHECK(yaok_last_error_message() && strstr(yaok_last_error_message(), "link") != NULL);
    CHECK(strstr(yaok_status_str(YAOK_E_CLOSED), "node has been closed") == NULL);
    CHECK(wait_for(&wb, &wb.closed, bob_closed_before + 1));
    CHECK(strstr(wb.closed_reason, "Stream framing broken") != NULL);
    yaok_link_close(cx.link);
    CHECK(read_int(&cx, &cx.freed) == 1);

    /* Locked: the state still reads, its contact figures are unknown. */
    CHECK(yaok_node_lock(alice) == YAOK_OK);
    s = state_of(alice);
    CHECK(s.locked == 1 && s.initialized == 1 && s.counts_known == 0 && s.contacts == 0 && s.links_open == 0);
    CHECK(yaok_history_new(alice, bob_id, NULL, 10, &page) == YAOK_E_LOCKED);
    CHECK(yaok_outbox_list_new(alice, &outbox) == YAOK_E_LOCKED);
    CHECK(yaok_link_list_new(alice, &links) == YAOK_OK);
    yaok_link_list_free(links);

    /* Misuse. */
    CHECK(yaok_history_count(NULL, &n) == YAOK_E_NULL_ARGUMENT);
    CHECK(yaok_history_new(bob, alice_id, NULL, 0, &page) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_link_list_count((const yaok_link_list *)bob, &n) == YAOK_E_INVALID_ARGUMENT);
    yaok_history_free(NULL);
    yaok_outbox_list_free(NULL);
    yaok_link_list_free(NULL);

    yaok_node_free(alice);
    yaok_node_free(bob);
    remove_dir(dir_a);
    remove_dir(dir_b);
}

int main(void) {
    opt_in_to_test_kdf();
    test_first_run_and_card();
    test_two_nodes_over_a_socketpair();
    return REPORT();
}
