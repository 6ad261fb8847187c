#include <sqlite3.h>
/* SQLITE_TRANSIENT is a cast macro that Swift cannot import. */
static inline sqlite3_destructor_type yaok_sqlite_transient(void) { return SQLITE_TRANSIENT; }
