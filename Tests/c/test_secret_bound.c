/* A PIN or passphrase is a text argument like any other (include/yaok.h "Strings"): longer
 * than YAOK_MAX_TEXT_BYTES it is refused at once with YAOK_E_INVALID_ARGUMENT, without being
 * read past that bound. yaok_node_unlock and yaok_node_setup used to measure it with strlen
 * and copy all of it into guarded memory, then into a Swift string, before the 256-byte
 * check: a 64 MiB "PIN" raised the peak memory by 128 MiB (unlock) and 192 MiB (setup), and
 * took about half a second. The bound checked, 16 MiB above the peak before the calls,
 * leaves room for the sanitizers. Just over the bound it is refused the same way, and a PIN
 * at the bound still reaches the PIN rules (YAOK_E_INVALID_ARGUMENT: over 256 bytes), so
 * nothing shorter changed. Prints "N passed, N failed". */
#define _POSIX_C_SOURCE 200809L
#include "check.h"
#include "tempdir.h"
#include "node.h"

#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long peak_kb(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_maxrss;
}

/* `len` bytes of '1' and a NUL, every page touched (so the peak before the calls holds it). */
static char *digits(size_t len) {
    char *s = malloc(len + 1);
    if (!s) return NULL;
    memset(s, '1', len);
    s[len] = 0;
    return s;
}

int main(void) {
    opt_in_to_test_kdf();
    char dir[64];
    yaok_node *node = new_node(dir, sizeof dir, "Ivan");
    CHECK(yaok_node_lock(node) == YAOK_OK);
    uint32_t warnings = 0;

    char *huge = digits((size_t)64 << 20);
    CHECK(huge != NULL);
    if (!huge) return REPORT();
    long before = peak_kb();
    CHECK(yaok_node_unlock(node, huge) == YAOK_E_INVALID_ARGUMENT);
    CHECK(strstr(yaok_last_error_message(), "longer than") != NULL);
    CHECK(yaok_node_setup(node, "Ivan", huge, huge, &warnings) == YAOK_E_INVALID_ARGUMENT);
    long grown = peak_kb() - before;
    printf("peak memory grew by %ld KB\n", grown);
    CHECK(grown < 16 * 1024);
    free(huge);

    char *over = digits(YAOK_MAX_TEXT_BYTES + 1);
    CHECK(yaok_node_unlock(node, over) == YAOK_E_INVALID_ARGUMENT);
    CHECK(strcmp(yaok_last_error_message(), "pin is longer than 4096 bytes (a PIN or passphrase is at most 256)") == 0);
    free(over);
    char *at = digits(YAOK_MAX_TEXT_BYTES);
    CHECK(yaok_node_unlock(node, at) == YAOK_E_INVALID_ARGUMENT);
    CHECK(strstr(yaok_last_error_message(), "at most 256 bytes") != NULL);
    free(at);

    /* Refused before any attempt was counted: the right PIN still unlocks. */
    CHECK(yaok_node_unlock(node, PIN) == YAOK_OK);
    yaok_node_free(node);
    remove_dir(dir);
    return REPORT();
}
