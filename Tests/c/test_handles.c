/* The snapshot handles of issue 21 (yaok_history, yaok_outbox_list, yaok_link_list) against
 * a careless or hostile caller: an index of SIZE_MAX (negative once it reaches Swift's Int)
 * or one past the end is YAOK_E_NOT_FOUND, a freed handle is refused and a second free is a
 * no-op, and a message taken from a page outlives the page. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <stdint.h>
#include <string.h>

int main(void) {
    opt_in_to_test_kdf();
    char dir_a[64], dir_b[64];
    yaok_node *a = new_node(dir_a, sizeof dir_a, "Gale");
    yaok_node *b = new_node(dir_b, sizeof dir_b, "Hugo");
    yaok_card *card = NULL;
    char *text = NULL;
    CHECK(yaok_node_card(b, &card) == YAOK_OK && yaok_card_text(card, &text) == YAOK_OK);
    yaok_contact *contact = NULL;
    int64_t id = 0;
    CHECK(yaok_contact_add_v2(a, text, &contact) == YAOK_OK && yaok_contact_id(contact, &id) == YAOK_OK);
    yaok_contact_free(contact);
    yaok_string_free(text);
    yaok_card_free(card);
    yaok_message *sent = NULL;
    CHECK(yaok_message_send_v2(a, id, (const uint8_t *)"hello", 5, &sent) == YAOK_OK);
    yaok_message_free(sent);

    yaok_history *page = NULL;
    size_t count = 0;
    CHECK(yaok_history_new(a, id, NULL, 10, &page) == YAOK_OK && yaok_history_count(page, &count) == YAOK_OK);
    CHECK(count == 1);
    yaok_message *m = NULL;
    CHECK(yaok_history_message(page, SIZE_MAX, &m) == YAOK_E_NOT_FOUND && m == NULL);
    CHECK(yaok_history_message(page, count, &m) == YAOK_E_NOT_FOUND && m == NULL);
    CHECK(yaok_history_message(page, 0, &m) == YAOK_OK && m != NULL);
    CHECK(yaok_history_new(a, id, NULL, 0, &page) == YAOK_E_INVALID_ARGUMENT);
    CHECK(yaok_history_new(a, id, "not a cursor", 10, &page) != YAOK_OK);
    yaok_history_free(page);
    yaok_history_free(page); /* a second free: a no-op */
    CHECK(yaok_history_count(page, &count) == YAOK_E_INVALID_ARGUMENT);
    const char *body = NULL;
    size_t len = 0;
    CHECK(yaok_message_text(m, &body, &len) == YAOK_OK && len == 5 && memcmp(body, "hello", 5) == 0);
    yaok_message_free(m);

    yaok_outbox_list *outbox = NULL;
    CHECK(yaok_outbox_list_new(a, &outbox) == YAOK_OK && yaok_outbox_list_count(outbox, &count) == YAOK_OK);
    CHECK(count == 1);
    yaok_outbox_entry e;
    memset(&e, 0, sizeof e);
    e.struct_size = sizeof e;
    CHECK(yaok_outbox_list_entry(outbox, SIZE_MAX, &e) == YAOK_E_NOT_FOUND);
    CHECK(yaok_outbox_list_entry(outbox, 0, &e) == YAOK_OK && e.contact_id == id && e.struct_size == sizeof e);
    yaok_outbox_list_free(outbox);
    yaok_outbox_list_free(outbox);
    CHECK(yaok_outbox_list_count(outbox, &count) == YAOK_E_INVALID_ARGUMENT);

    yaok_link_list *links = NULL;
    CHECK(yaok_link_list_new(a, &links) == YAOK_OK && yaok_link_list_count(links, &count) == YAOK_OK && count == 0);
    yaok_link_info info;
    info.struct_size = sizeof info;
    CHECK(yaok_link_list_get(links, SIZE_MAX, &info) == YAOK_E_NOT_FOUND);
    CHECK(yaok_link_list_get(links, 0, &info) == YAOK_E_NOT_FOUND);
    /* A handle of another kind is refused, not misread. */
    CHECK(yaok_history_count((yaok_history *)(void *)links, &count) == YAOK_E_INVALID_ARGUMENT);
    /* … and the message names both kinds as the header does, not the library's own types. */
    CHECK(strcmp(yaok_last_error_message(), "history is a yaok_link_list, not a yaok_history") == 0);
    CHECK(yaok_node_lock((yaok_node *)(void *)links) == YAOK_E_INVALID_ARGUMENT);
    CHECK(strcmp(yaok_last_error_message(), "node is a yaok_link_list, not a yaok_node") == 0);
    yaok_link_list_free(links);
    yaok_link_list_free(links);

    yaok_node_free(a);
    yaok_node_free(b);
    remove_dir(dir_a);
    remove_dir(dir_b);
    return REPORT();
}
