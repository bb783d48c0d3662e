#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every allocation and
/// free (sqlite3_config is variadic, so Swift cannot call it). Must run before SQLite is
/// initialized (before the first connection opens); returns SQLITE_MISUSE after that.
static inline int lade_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
