#include <sqlite3.h>

/// Turns off SQLite's memory statistics, which take a global mutex on every allocation and
/// free (sqlite3_config is variadic, so Swift cannot call it). Must run before SQLite is
/// initialized (before the first connection opens); returns SQLITE_MISUSE after that.
static inline int lade_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/// Lets `PRAGMA writable_schema` change `sqlite_master` on `db` (SQLITE_DBCONFIG_DEFENSIVE
/// off), whatever default SQLite was built with (sqlite3_db_config is variadic too).
static inline int lade_sqlite3_allow_schema_writes(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 0, (int *)0);
}
