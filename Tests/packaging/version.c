/* The smallest embedder: built by scripts/test-packaging with nothing but
 * `cc version.c $(pkg-config --cflags --libs yaok)` against an installed prefix. */
#include <yaok.h>

#include <stdio.h>
#include <string.h>

int main(void) {
    const char *version = yaok_version_string();
    printf("libyaok %s, ABI %u\n", version, yaok_abi_version());
    return yaok_abi_version() == YAOK_ABI_VERSION && version != NULL && strlen(version) > 0 ? 0 : 1;
}
