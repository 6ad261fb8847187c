/* Caller-sized structs (yaok_node_state, yaok_link_info) from a caller built against another
 * version of the header: a caller's struct that ends at the first five fields is neither read
 * nor written past its end (it sits against an inaccessible page: a byte beyond it crashes),
 * and a caller whose struct is longer than the library's learns from `struct_size` how far
 * the library wrote (the bytes past it are left alone). Prints "N passed, N failed". */
#define _DEFAULT_SOURCE
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* `size` bytes that end exactly where an inaccessible page begins. */
static void *against_guard(size_t size, void **mapping, size_t *mapped) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    *mapped = 2 * page;
    *mapping = mmap(NULL, *mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (*mapping == MAP_FAILED) return NULL;
    mprotect((char *)*mapping + page, page, PROT_NONE);
    return (char *)*mapping + page - size;
}

static yaok_status quiet_send(void *user_data, const uint8_t *unit, size_t len) {
    (void)user_data, (void)unit, (void)len;
    return YAOK_OK;
}

static void test_short_struct_at_a_page_end(yaok_node *node) {
    void *mapping = NULL;
    size_t mapped = 0;
    /* The smallest yaok_node_state a caller may pass: the five lock fields, 20 bytes. */
    uint32_t *s = against_guard(5 * sizeof(uint32_t), &mapping, &mapped);
    CHECK(s != NULL);
    if (!s) return;
    s[0] = 5 * sizeof(uint32_t);
    CHECK(yaok_node_get_state(node, (yaok_node_state *)(void *)s) == YAOK_OK);
    CHECK(s[1] == 1 && s[2] == 0);  /* initialized, unlocked */
    munmap(mapping, mapped);

    /* yaok_link_info up to link_id (16 bytes) against the page end. */
    yaok_link *link = NULL;
    CHECK(yaok_link_open(node, "probe", YAOK_LINK_RESPONDER, 200, quiet_send, NULL, NULL, NULL, &link) == YAOK_OK);
    yaok_link_list *list = NULL;
    CHECK(yaok_link_list_new(node, &list) == YAOK_OK);
    uint8_t *info = against_guard(16, &mapping, &mapped);
    CHECK(info != NULL);
    if (info) {
        uint32_t size = 16;
        memcpy(info, &size, sizeof size);
        CHECK(yaok_link_list_get(list, 0, (yaok_link_info *)(void *)info) == YAOK_OK);
        uint64_t id = 0, want = 1;
        memcpy(&id, info + 8, sizeof id);
        CHECK(yaok_link_id(link, &want) == YAOK_OK && id == want);
        munmap(mapping, mapped);
    }
    yaok_link_list_free(list);
    yaok_link_close(link);
}

/* A caller built against a later header: its struct is longer; struct_size comes back as
 * what the library wrote, and the caller's extra fields are untouched. */
static void test_longer_caller_struct(yaok_node *node) {
    struct later {
        yaok_node_state known;
        uint32_t appended[4];
    } s;
    memset(&s, 0xEE, sizeof s);
    s.known.struct_size = sizeof s;
    CHECK(yaok_node_get_state(node, &s.known) == YAOK_OK);
    CHECK(s.known.struct_size == sizeof(yaok_node_state));
    CHECK(s.appended[0] == 0xEEEEEEEEu && s.appended[3] == 0xEEEEEEEEu);
    CHECK(s.known.initialized == 1);

    /* yaok_carry_status (issue 18) the same way. */
    struct later_carry {
        yaok_carry_status known;
        uint64_t appended[2];
    } c;
    memset(&c, 0xEE, sizeof c);
    c.known.struct_size = sizeof c;
    CHECK(yaok_node_carry_status(node, &c.known) == YAOK_OK);
    CHECK(c.known.struct_size == sizeof(yaok_carry_status));
    CHECK(c.appended[0] == 0xEEEEEEEEEEEEEEEEu && c.appended[1] == 0xEEEEEEEEEEEEEEEEu);

    /* The library's own size: struct_size is left as it was. */
    yaok_node_state exact;
    exact.struct_size = sizeof exact;
    CHECK(yaok_node_get_state(node, &exact) == YAOK_OK && exact.struct_size == sizeof exact);
    /* A shorter one: struct_size says the caller's size (all of it written). */
    yaok_node_state shorter;
    memset(&shorter, 0xCD, sizeof shorter);
    shorter.struct_size = 5 * sizeof(uint32_t);
    CHECK(yaok_node_get_state(node, &shorter) == YAOK_OK && shorter.struct_size == 5 * sizeof(uint32_t));
}

int main(void) {
    opt_in_to_test_kdf();
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir, "Dana");
    test_short_struct_at_a_page_end(node);
    test_longer_caller_struct(node);
    yaok_node_free(node);
    remove_dir(dir);
    return REPORT();
}
