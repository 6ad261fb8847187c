/* A Ya OK peer in C, using only include/yaok.h and libyaok.so, and no JSON parser: it
 * creates or opens an identity in a data directory, prints its contact card, adds the card
 * of the person to talk to, and then sends what you type and prints what arrives (through
 * the event callback), with each message's status as it changes, via a relay or the LAN.
 *
 *   scripts/build-lib
 *   cc -std=c11 -Iinclude examples/c/peer.c -Lbuild/lib -lyaok -lpthread \
 *      -Wl,-rpath,$PWD/build/lib -o build/peer
 *   YAOK_PIN=246810 build/peer --data /tmp/alice --name Alice \
 *       --relay 127.0.0.1:7443 --relay-pin <64 hex> --add 'yaok:2:…'      (or --add card.txt)
 *
 * Lines typed on stdin are messages to the current contact; lines starting with "/" are
 * commands (/help). The same commands make it scriptable (the interop test and the demo
 * drive it through stdin): /wait received N [S] and /wait delivered N [S] block until that
 * many messages arrived / were delivered (exit status 3 after S seconds, default 60).
 * examples/python/peer.py and examples/swift/ are the same peer in Python and Swift, with
 * the same options and output.
 */
#define _POSIX_C_SOURCE 200809L
#include "yaok.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

/* ---- output: one line at a time, from the main and the event thread ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int received_count, delivered_count; /* guarded by `lock` */

static void say(const char *format, ...) {
    va_list args;
    va_start(args, format);
    pthread_mutex_lock(&lock);
    vprintf(format, args);
    putchar('\n');
    fflush(stdout);
    pthread_mutex_unlock(&lock);
    va_end(args);
}

/* Prints the failure with the library's message and exits. */
static void check(yaok_status status, const char *what) {
    if (status == YAOK_OK) return;
    const char *detail = yaok_last_error_message();
    fprintf(stderr, "peer: %s: %s (%s)\n", what, detail ? detail : "", yaok_status_str(status));
    exit(1);
}

/* The first 8 hex digits of a message ID: enough to tell messages apart on screen. */
static void short_id(const uint8_t id[YAOK_MESSAGE_ID_BYTES], char out[9]) {
    for (int i = 0; i < 4; i++) snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static const char *status_name(uint32_t status) {
    switch (status) {
    case YAOK_MESSAGE_PENDING: return "pending";
    case YAOK_MESSAGE_SENT: return "sent";
    case YAOK_MESSAGE_DELIVERED: return "delivered";
    case YAOK_MESSAGE_FAILED: return "failed";
    default: return "sending";
    }
}

static const char *state_name(uint32_t state) {
    return state == YAOK_TRANSPORT_RUNNING ? "running" : state == YAOK_TRANSPORT_FAILED ? "failed" : "disabled";
}

/* ---- events: everything read with the typed getters ---- */

static void on_event(void *user_data, const yaok_event *event) {
    yaok_node *node = user_data;
    uint8_t id[YAOK_MESSAGE_ID_BYTES];
    char sid[9];
    int64_t contact_id = 0;
    uint32_t status = 0, state = 0;
    const char *name = NULL, *text = NULL;

    switch (event->kind) {
    case YAOK_EVENT_MESSAGE_RECEIVED: {
        if (yaok_event_contact_id(event, &contact_id) != YAOK_OK || yaok_event_message_id(event, id) != YAOK_OK) break;
        yaok_message *message = NULL;
        yaok_contact *contact = NULL;
        size_t len = 0;
        if (yaok_message_lookup(node, contact_id, id, &message) == YAOK_OK &&
            yaok_message_text(message, &text, &len) == YAOK_OK) {
            if (yaok_contact_get(node, contact_id, &contact) != YAOK_OK || yaok_contact_name(contact, &name) != YAOK_OK)
                name = "someone";
            say("%s -> you: %s", name, text);
        }
        yaok_contact_free(contact);
        yaok_message_free(message);
        pthread_mutex_lock(&lock);
        received_count++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
        break;
    }
    case YAOK_EVENT_MESSAGE_STATUS_CHANGED:
        if (yaok_event_message_id(event, id) != YAOK_OK || yaok_event_message_status(event, &status) != YAOK_OK) break;
        short_id(id, sid);
        say("%s: %s", sid, status_name(status));
        if (status == YAOK_MESSAGE_DELIVERED) {
            pthread_mutex_lock(&lock);
            delivered_count++;
            pthread_cond_broadcast(&changed);
            pthread_mutex_unlock(&lock);
        }
        break;
    case YAOK_EVENT_TRANSPORT_CHANGED:
        if (yaok_event_transport_name(event, &name) != YAOK_OK || yaok_event_transport_state(event, &state) != YAOK_OK)
            break;
        if (yaok_event_text(event, &text) == YAOK_OK)
            say("transport %s: %s (%s)", name, state_name(state), text);
        else
            say("transport %s: %s", name, state_name(state));
        break;
    case YAOK_EVENT_TRANSPORT_NOTICE:
        if (yaok_event_transport_name(event, &name) == YAOK_OK && yaok_event_text(event, &text) == YAOK_OK)
            say("transport %s: %s", name, text);
        break;
    case YAOK_EVENT_LOCKED:
        if (yaok_event_text(event, &text) == YAOK_OK) say("locked (%s)", text);
        break;
    default: /* other kinds, and kinds newer than this program: ignored */
        break;
    }
}

/* ---- contacts ---- */

static int64_t current = 0;           /* the contact typed lines go to; 0: none yet */
static char current_name[64] = "";

static void choose(yaok_node *node, int64_t id) {
    yaok_contact *contact = NULL;
    const char *name = NULL;
    if (yaok_contact_get(node, id, &contact) == YAOK_OK && yaok_contact_name(contact, &name) == YAOK_OK) {
        current = id;
        snprintf(current_name, sizeof current_name, "%s", name);
    }
    yaok_contact_free(contact);
}

/* Card text, or the name of a file holding it (its first line). Returns malloc'd text. */
static char *card_argument(const char *value) {
    if (strncmp(value, "yaok:", 5) == 0) return strdup(value);
    FILE *f = fopen(value, "r");
    if (!f) {
        fprintf(stderr, "peer: %s is neither card text (yaok:2:…) nor a readable file: %s\n", value, strerror(errno));
        exit(2);
    }
    char *line = NULL;
    size_t size = 0;
    ssize_t n = getline(&line, &size, f);
    fclose(f);
    if (n <= 0) {
        free(line);
        fprintf(stderr, "peer: %s is empty\n", value);
        exit(2);
    }
    line[strcspn(line, "\r\n")] = '\0';
    return line;
}

/* Adds a card (already a contact is fine: it is found by its fingerprint) and makes it the
 * current contact. */
static void add_card(yaok_node *node, const char *text) {
    yaok_contact *contact = NULL;
    yaok_status status = yaok_contact_add_v2(node, text, &contact);
    if (status == YAOK_E_CONTACT_EXISTS) {
        yaok_card *card = NULL;
        char *fingerprint = NULL;
        check(yaok_card_decode(text, &card), "read the card");
        check(yaok_card_fingerprint(card, YAOK_FINGERPRINT_HEX, &fingerprint), "read the card's fingerprint");
        int64_t ids[256];
        size_t count = 0;
        check(yaok_contact_ids(node, ids, 256, &count), "list contacts");
        for (size_t i = 0; i < count && i < 256 && !contact; i++) {
            yaok_contact *c = NULL;
            const char *fp = NULL;
            if (yaok_contact_get(node, ids[i], &c) == YAOK_OK && yaok_contact_fingerprint(c, YAOK_FINGERPRINT_HEX, &fp) == YAOK_OK &&
                strcmp(fp, fingerprint) == 0)
                contact = c;
            else
                yaok_contact_free(c);
        }
        yaok_string_free(fingerprint);
        yaok_card_free(card);
        if (!contact) check(status, "add the contact");
    } else {
        check(status, "add the contact");
    }
    int64_t id = 0;
    const char *name = NULL, *fingerprint = NULL;
    check(yaok_contact_id(contact, &id), "read the contact");
    check(yaok_contact_name(contact, &name), "read the contact");
    check(yaok_contact_fingerprint(contact, YAOK_FINGERPRINT_GROUPED, &fingerprint), "read the contact");
    say("contact: %s (fingerprint %s)", name, fingerprint);
    current = id;
    snprintf(current_name, sizeof current_name, "%s", name);
    yaok_contact_free(contact);
}

/* /to NAME: the contact whose name matches (case-insensitive). */
static void switch_to(yaok_node *node, const char *wanted) {
    int64_t ids[256];
    size_t count = 0;
    check(yaok_contact_ids(node, ids, 256, &count), "list contacts");
    for (size_t i = 0; i < count && i < 256; i++) {
        yaok_contact *c = NULL;
        const char *name = NULL;
        int match = yaok_contact_get(node, ids[i], &c) == YAOK_OK && yaok_contact_name(c, &name) == YAOK_OK &&
                    strcasecmp(name, wanted) == 0;
        yaok_contact_free(c);
        if (match) {
            choose(node, ids[i]);
            say("talking to %s", current_name);
            return;
        }
    }
    say("no contact named %s", wanted);
}

static void send_text(yaok_node *node, const char *text) {
    if (current == 0) {
        say("no contact yet: add one with /add CARD (or --add)");
        return;
    }
    yaok_message *message = NULL;
    yaok_status status = yaok_message_send_v2(node, current, (const uint8_t *)text, strlen(text), &message);
    if (status != YAOK_OK) {
        say("not sent: %s", yaok_last_error_message());
        return;
    }
    uint8_t id[YAOK_MESSAGE_ID_BYTES];
    uint32_t state = 0;
    char sid[9];
    check(yaok_message_id(message, id), "read the message");
    check(yaok_message_status(message, &state), "read the message");
    short_id(id, sid);
    say("you -> %s: %s (%s: %s)", current_name, text, sid, status_name(state));
    yaok_message_free(message);
}

static void show_transports(yaok_node *node) {
    yaok_diagnostics *d = NULL;
    size_t count = 0;
    check(yaok_diagnostics_new(node, &d), "read diagnostics");
    check(yaok_diagnostics_transport_count(d, &count), "read diagnostics");
    if (count == 0) say("no transports: start with --relay or --lan");
    for (size_t i = 0; i < count; i++) {
        const char *name = NULL, *line = NULL;
        uint32_t state = 0, links = 0;
        if (yaok_diagnostics_transport(d, i, &name, &state, &links, &line) == YAOK_OK)
            say("transport %s: %s, %u link(s): %s", name, state_name(state), links, line);
    }
    yaok_diagnostics_free(d);
}

/* /wait received|delivered N [SECONDS] */
static void wait_for(const char *what, int n, int seconds) {
    int *counter = strcmp(what, "received") == 0 ? &received_count : strcmp(what, "delivered") == 0 ? &delivered_count : NULL;
    if (!counter) {
        say("usage: /wait received|delivered N [SECONDS]");
        return;
    }
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += seconds;
    pthread_mutex_lock(&lock);
    while (*counter < n && pthread_cond_timedwait(&changed, &lock, &deadline) != ETIMEDOUT) {}
    int got = *counter;
    pthread_mutex_unlock(&lock);
    if (got < n) {
        fprintf(stderr, "peer: timed out after %d s waiting for %d %s (have %d)\n", seconds, n, what, got);
        exit(3);
    }
}

static void help(void) {
    say("type a line to send it to the current contact; commands:\n"
        "  /add CARD|FILE   add a contact from card text or a file holding it\n"
        "  /to NAME         talk to another contact\n"
        "  /card            print your card again\n"
        "  /status          transports and their state\n"
        "  /wait received N [S], /wait delivered N [S]   block until N (exit 3 after S s)\n"
        "  /quit            stop (as does end of input)");
}

static void usage(void) {
    fprintf(stderr,
            "usage: peer --data DIR [--name NAME] [--pin PIN] [--add CARD|FILE] [--card-file FILE]\n"
            "            [--relay HOST:PORT --relay-pin HEX] [--lan] [--lan-listen ADDR] [--lan-port N]\n"
            "            [--lan-peer HOST:PORT]...\n"
            "  --name is needed the first time (it creates the identity); the PIN comes from --pin or\n"
            "  $YAOK_PIN. --card-file writes your card to FILE. Then type messages (/help).\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *data = NULL, *name = NULL, *pin = getenv("YAOK_PIN"), *add = NULL, *card_file = NULL;
    const char *relay = NULL, *relay_pin = NULL, *lan_listen = "0.0.0.0";
    const char *lan_peers[16];
    size_t lan_peer_count = 0;
    int lan = 0, lan_port = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--lan")) lan = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) usage();
        else if (!v) usage();
        else if (!strcmp(a, "--data")) data = argv[++i];
        else if (!strcmp(a, "--name")) name = argv[++i];
        else if (!strcmp(a, "--pin")) pin = argv[++i];
        else if (!strcmp(a, "--add")) add = argv[++i];
        else if (!strcmp(a, "--card-file")) card_file = argv[++i];
        else if (!strcmp(a, "--relay")) relay = argv[++i];
        else if (!strcmp(a, "--relay-pin")) relay_pin = argv[++i];
        else if (!strcmp(a, "--lan-listen")) lan = 1, lan_listen = argv[++i];
        else if (!strcmp(a, "--lan-port")) lan = 1, lan_port = atoi(argv[++i]);
        else if (!strcmp(a, "--lan-peer") && lan_peer_count < 16) lan = 1, lan_peers[lan_peer_count++] = argv[++i];
        else usage();
    }
    /* Say which is missing: the usage text alone left people guessing. */
    if (!data) { fprintf(stderr, "peer: --data DIR is required (where the identity and messages are kept)\n"); usage(); }
    if (!pin) { fprintf(stderr, "peer: no PIN: set YAOK_PIN (or give --pin)\n"); usage(); }
    if (relay && !relay_pin) { fprintf(stderr, "peer: --relay needs --relay-pin (the relay prints it)\n"); usage(); }
    if (yaok_abi_version() != YAOK_ABI_VERSION) {
        fprintf(stderr, "peer: libyaok has ABI %u, this program was built for %d\n", yaok_abi_version(), YAOK_ABI_VERSION);
        return 1;
    }

    /* Open, then unlock, or set up the first time. Register for events first: events that
     * happen before a registration are dropped. */
    yaok_node *node = NULL;
    check(yaok_node_open(data, YAOK_NODE_OPEN_DEFAULT, &node), "open the data directory");
    check(yaok_node_set_event_callback(node, on_event, node, NULL), "register for events");
    yaok_status unlocked = yaok_node_unlock(node, pin);
    if (unlocked == YAOK_E_NOT_INITIALIZED) {
        if (!name) {
            fprintf(stderr, "peer: %s has no identity yet: give --name to create one\n", data);
            return 2;
        }
        uint32_t warnings = 0;
        check(yaok_node_setup(node, name, pin, pin, &warnings), "create the identity");
    } else {
        check(unlocked, "unlock");
    }
    uint32_t warnings = 0;
    check(yaok_node_set_auto_lock(node, YAOK_AUTO_LOCK_NEVER, &warnings), "turn auto-lock off");

    /* Our card: the text others add (a QR code in a real app). yaok_node_card copies no
     * secret key (yaok_node_identity would). */
    yaok_card *me = NULL;
    char *card = NULL, *my_name = NULL;
    check(yaok_node_card(node, &me), "read our card");
    check(yaok_card_text(me, &card), "read the card's text");
    check(yaok_card_name(me, &my_name), "read the name");
    yaok_card_free(me);
    say("you are %s; your card:", my_name);
    say("card: %s", card);
    if (card_file) {
        FILE *f = fopen(card_file, "w");
        if (!f || fprintf(f, "%s\n", card) < 0 || fclose(f) != 0) {
            fprintf(stderr, "peer: cannot write %s: %s\n", card_file, strerror(errno));
            return 1;
        }
    }
    yaok_string_free(card);
    yaok_string_free(my_name);

    size_t contact_count = 0;
    if (add) {
        char *text = card_argument(add);
        add_card(node, text);
        free(text);
    } else {
        int64_t ids[2];
        check(yaok_contact_ids(node, ids, 2, &contact_count), "list contacts");
        if (contact_count == 1) choose(node, ids[0]);
    }

    if (relay) {
        check(yaok_transport_relay_add(node, relay, relay_pin, NULL), "add the relay");
        check(yaok_transport_set_enabled(node, "relay", 1), "start the relay transport");
    }
    if (lan) {
        check(yaok_transport_lan_add(node, lan_listen, (uint16_t)lan_port, lan_peer_count ? YAOK_LAN_NO_DISCOVERY : 0,
                                     lan_peers, lan_peer_count), "add the LAN transport");
        check(yaok_transport_set_enabled(node, "lan", 1), "start the LAN transport");
    }
    if (!relay && !lan) say("no transport: messages wait until you restart with --relay or --lan");
    if (current) say("talking to %s: type a message and press Enter (/help for commands)", current_name);
    else if (contact_count > 1) say("%zu contacts: choose who to talk to with /to NAME (/help for commands)", contact_count);
    else say("add a contact with /add CARD (/help for commands)");

    char *line = NULL;
    size_t size = 0;
    ssize_t n;
    while ((n = getline(&line, &size, stdin)) > 0) {
        line[strcspn(line, "\r\n")] = '\0';
        char what[16] = "";
        int count = 0, seconds = 60;
        if (line[0] == '\0') continue;
        if (line[0] != '/') send_text(node, line);
        else if (!strcmp(line, "/quit")) break;
        else if (!strcmp(line, "/help")) help();
        else if (!strcmp(line, "/status")) show_transports(node);
        else if (!strncmp(line, "/add ", 5)) {
            char *text = card_argument(line + 5);
            add_card(node, text);
            free(text);
        } else if (!strncmp(line, "/to ", 4)) switch_to(node, line + 4);
        else if (!strcmp(line, "/card")) {
            yaok_card *me = NULL;
            char *text = NULL;
            if (yaok_node_card(node, &me) == YAOK_OK && yaok_card_text(me, &text) == YAOK_OK) say("card: %s", text);
            yaok_string_free(text);
            yaok_card_free(me);
        } else if (sscanf(line, "/wait %15s %d %d", what, &count, &seconds) >= 2) wait_for(what, count, seconds);
        else say("unknown command %s (/help)", line);
    }
    free(line);
    yaok_node_free(node); /* stops the transports, waits for the event thread */
    say("bye");
    return 0;
}
