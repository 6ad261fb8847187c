/* Embedding Ya OK core from C, the whole common path: two nodes (two profiles, each with its
 * own data directory) in one process, joined by a socketpair that stands for the app's own
 * connection (TCP, Bluetooth RFCOMM, a serial line), through stream links. Alice sends Bob a
 * message; Bob prints it; Alice prints its delivery. No JSON: the typed getters only.
 *
 *   scripts/install --prefix /tmp/yaok && export PKG_CONFIG_PATH=/tmp/yaok/lib/pkgconfig
 *   cc -std=c11 examples/c/two_nodes.c $(pkg-config --cflags --libs yaok) -lpthread \
 *      -Wl,-rpath,$(pkg-config --variable=libdir yaok) -o two_nodes && ./two_nodes
 *
 * With a directory argument the nodes live there and a second run unlocks them instead of
 * setting them up; without one they go in a temporary directory, removed at the end.
 * What an app must know, each said where it happens below:
 *   - every out-pointer is required (yaok_node_setup's out_warnings too);
 *   - both sides add the other's card, or nothing is delivered;
 *   - the send callback runs on the node's event thread: a write to a socket is fine, with
 *     MSG_NOSIGNAL (after the other end closed, a plain write() raises SIGPIPE, which kills
 *     the process: the node may still send an acknowledgement while the app shuts down);
 *   - *out is written before the send callback's first call, so the callback may use it;
 *   - events come on the event thread: copy what you keep (here: flags under a mutex).
 */
#define _XOPEN_SOURCE 700
#include "yaok.h"

#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define PIN "246810"   /* an app asks its user; at least 6 digits or characters */

struct side {
    const char *name;
    yaok_node *node;
    yaok_link *link;        /* written by yaok_link_open_stream before the first send */
    int fd;                 /* this side's end of the socketpair */
    pthread_t reader;
    pthread_mutex_t mutex;
    pthread_cond_t changed;
    int received, delivered;
};

/* Prints the failure and exits: enough error handling for an example. */
static void check(yaok_status status, const char *what) {
    if (status == YAOK_OK) return;
    const char *detail = yaok_last_error_message();
    fprintf(stderr, "%s failed: %s (%s)\n", what, yaok_status_str(status), detail ? detail : "");
    exit(1);
}

static void raise_flag(struct side *s, int *flag) {
    pthread_mutex_lock(&s->mutex);
    *flag = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->mutex);
}

static void wait_for(struct side *s, int *flag) {
    pthread_mutex_lock(&s->mutex);
    while (!*flag) pthread_cond_wait(&s->changed, &s->mutex);
    pthread_mutex_unlock(&s->mutex);
}

/* The node's events, on its event thread. A received message's event carries no text: read
 * the message by its contact and ID (a callback may call back into the library). */
static void on_event(void *user_data, const yaok_event *event) {
    struct side *s = user_data;
    if (event->kind == YAOK_EVENT_MESSAGE_RECEIVED) {
        int64_t contact = 0;
        uint8_t id[YAOK_MESSAGE_ID_BYTES];
        yaok_message *m = NULL;
        const char *text = NULL;
        size_t len = 0;
        if (yaok_event_contact_id(event, &contact) == YAOK_OK && yaok_event_message_id(event, id) == YAOK_OK &&
            yaok_message_lookup(s->node, contact, id, &m) == YAOK_OK && yaok_message_text(m, &text, &len) == YAOK_OK) {
            printf("%s received: %.*s\n", s->name, (int)len, text);   /* len, not strlen: a text may hold NUL */
            raise_flag(s, &s->received);
        }
        yaok_message_free(m);
    } else if (event->kind == YAOK_EVENT_MESSAGE_STATUS_CHANGED) {
        uint32_t status = 0;
        if (yaok_event_message_status(event, &status) == YAOK_OK && status == YAOK_MESSAGE_DELIVERED) {
            printf("%s: delivered\n", s->name);
            raise_flag(s, &s->delivered);
        }
    }
}

/* The node hands one whole frame at a time: write it to the stream as it is. MSG_NOSIGNAL:
 * a closed connection is an error here, not a SIGPIPE that ends the process. */
static yaok_status on_send(void *user_data, const uint8_t *frame, size_t len) {
    struct side *s = user_data;
    while (len > 0) {
        ssize_t n = send(s->fd, frame, len, MSG_NOSIGNAL);
        if (n <= 0) break;   /* the connection is gone: the link closes, messages wait in the outbox */
        frame += n;
        len -= (size_t)n;
    }
    return YAOK_OK;
}

/* Everything read from the stream goes to the link as it is, in any split. */
static void *read_stream(void *arg) {
    struct side *s = arg;
    uint8_t buffer[4096];
    ssize_t n;
    while ((n = read(s->fd, buffer, sizeof buffer)) > 0)
        if (yaok_link_receive(s->link, buffer, (size_t)n) != YAOK_OK) break;   /* link closed */
    return NULL;
}

/* Opens the node in `dir`; sets it up on a first run (found without an unlock attempt),
 * else unlocks it. The callback is registered first, so no event is missed. */
static void open_node(struct side *s, const char *dir) {
    pthread_mutex_init(&s->mutex, NULL);
    pthread_cond_init(&s->changed, NULL);
    check(yaok_node_open(dir, YAOK_NODE_OPEN_DEFAULT, &s->node), "open");
    check(yaok_node_set_event_callback(s->node, on_event, s, NULL), "set the event callback");
    yaok_node_state state;
    memset(&state, 0, sizeof state);
    state.struct_size = sizeof state;
    check(yaok_node_get_state(s->node, &state), "read the state");
    if (!state.initialized) {
        uint32_t warnings = 0;   /* required, like every out-pointer */
        check(yaok_node_setup(s->node, s->name, PIN, PIN, &warnings), "set up");
    } else {
        check(yaok_node_unlock(s->node, PIN), "unlock");
    }
}

/* `whom`'s card into `to`'s contacts; the contact's id (= conversation id). On a second run
 * the card is already there (YAOK_E_CONTACT_EXISTS): each node here has one contact. */
static int64_t add_contact(struct side *to, struct side *whom) {
    yaok_card *card = NULL;
    char *text = NULL;
    yaok_contact *contact = NULL;
    int64_t id = 0;
    size_t count = 0;
    check(yaok_node_card(whom->node, &card), "read the card");   /* public: no secret key copied */
    check(yaok_card_text(card, &text), "card text");             /* what a QR code would carry */
    yaok_status status = yaok_contact_add_v2(to->node, text, &contact);
    if (status == YAOK_E_CONTACT_EXISTS) {
        check(yaok_contact_ids(to->node, &id, 1, &count), "list contacts");
    } else {
        check(status, "add the contact");
        check(yaok_contact_id(contact, &id), "contact id");
    }
    yaok_contact_free(contact);
    yaok_string_free(text);
    yaok_card_free(card);
    return id;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st, (void)type, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv) {
    if (yaok_abi_version() != YAOK_ABI_VERSION) {
        fprintf(stderr, "libyaok ABI %u, built for %d\n", yaok_abi_version(), YAOK_ABI_VERSION);
        return 1;
    }
    char base[4096] = "/tmp/yaok-two-nodes-XXXXXX", alice_dir[4200], bob_dir[4200];
    if (argc > 1) snprintf(base, sizeof base, "%s", argv[1]);
    else if (mkdtemp(base) == NULL) { perror("mkdtemp"); return 1; }
    snprintf(alice_dir, sizeof alice_dir, "%s/alice", base);
    snprintf(bob_dir, sizeof bob_dir, "%s/bob", base);

    struct side alice = {.name = "Alice"}, bob = {.name = "Bob"};
    open_node(&alice, alice_dir);
    open_node(&bob, bob_dir);
    int64_t bob_for_alice = add_contact(&alice, &bob);
    add_contact(&bob, &alice);   /* both ways: a node takes messages only from its contacts */

    /* The connection, and a stream link over each end: the initiator is the side that
     * connected. The node frames what it sends and unframes what it receives. */
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) { perror("socketpair"); return 1; }
    alice.fd = fds[0];
    bob.fd = fds[1];
    check(yaok_link_open_stream(alice.node, "pipe", YAOK_LINK_INITIATOR, on_send, NULL, &alice, NULL, &alice.link),
          "open Alice's link");
    check(yaok_link_open_stream(bob.node, "pipe", YAOK_LINK_RESPONDER, on_send, NULL, &bob, NULL, &bob.link),
          "open Bob's link");
    pthread_create(&alice.reader, NULL, read_stream, &alice);
    pthread_create(&bob.reader, NULL, read_stream, &bob);

    /* Sending stores and queues at once; it goes out when the link's handshake completes. */
    const char *text = "Hello Bob";
    yaok_message *sent = NULL;
    check(yaok_message_send_v2(alice.node, bob_for_alice, (const uint8_t *)text, strlen(text), &sent), "send");
    yaok_message_free(sent);
    wait_for(&bob, &bob.received);
    wait_for(&alice, &alice.delivered);

    /* Teardown: end the connection (the readers return), then close the links and free the
     * nodes (in either order: a link outlives its node as a closed handle). */
    shutdown(fds[0], SHUT_RDWR);
    shutdown(fds[1], SHUT_RDWR);
    pthread_join(alice.reader, NULL);
    pthread_join(bob.reader, NULL);
    yaok_link_close(alice.link);
    yaok_link_close(bob.link);
    yaok_node_free(alice.node);
    yaok_node_free(bob.node);
    close(fds[0]);
    close(fds[1]);
    if (argc <= 1) nftw(base, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}
