/* db.c: the graph cache's SQLite file and schema. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../util/fs.h"
#include "internal.h"

static const char schema[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);"
    "CREATE TABLE IF NOT EXISTS files(id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,"
    " lang INT, is_test INT, size INT, mtime INT, hash INT, parsed_with INT);"
    "CREATE TABLE IF NOT EXISTS symbols(file_id INT NOT NULL, name TEXT NOT NULL, kind INT,"
    " exported INT, line INT, end_line INT);"
    "CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);"
    "CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);" /* impact: who defines N */
    "CREATE TABLE IF NOT EXISTS imports(file_id INT NOT NULL, spec TEXT NOT NULL, target INT);"
    "CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);"
    "CREATE TABLE IF NOT EXISTS calls(file_id INT NOT NULL, name TEXT NOT NULL, line INT);"
    "CREATE INDEX IF NOT EXISTS calls_file ON calls(file_id);"
    "CREATE INDEX IF NOT EXISTS calls_name ON calls(name);" /* impact: who calls N */
    /* the content field of a file, counted at build time: its distinct
     * words in byte order, each NUL-terminated and followed by its count
     * (LEB128); n = the number of words with repeats (the field length) */
    "CREATE TABLE IF NOT EXISTS words(file_id INTEGER PRIMARY KEY, n INT, data BLOB);"
    /* co-change: per file, the commits (n) and their decayed weight (w);
     * per pair a < b, the commits touching both and their decayed weight */
    "CREATE TABLE IF NOT EXISTS commit_files(path TEXT PRIMARY KEY, n INT, w REAL) WITHOUT ROWID;"
    "CREATE TABLE IF NOT EXISTS cochange(a TEXT NOT NULL, b TEXT NOT NULL, n INT, w REAL,"
    " PRIMARY KEY(a, b)) WITHOUT ROWID;"
    "CREATE INDEX IF NOT EXISTS cochange_b ON cochange(b);";

char *graph_db_path(const char *repo)
{
    return util_format("%s/.clarity/graph.db", repo);
}

/* A .gitignore of "*" in the cache's directory, unless there is one: the
 * cache files are not for version control, and `git status` stays clean.
 * Best effort (a directory that cannot take it still holds the cache). */
static void ignore_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *gi = slash ? util_format("%.*s/.gitignore", (int)(slash - path), path) : NULL;
    struct stat sb;
    if (gi && stat(gi, &sb) != 0 && errno == ENOENT) {
        FILE *f = fopen(gi, "wx");
        if (f) {
            fputs("# clarity's caches (graph.db and its snapshot): not for version control\n*\n", f);
            fclose(f);
        }
    }
    free(gi);
}

int graph_db_open(const char *path, int create, sqlite3 **out, char **err)
{
    *out = NULL;
    if (create && util_mkdir_parents(path, 0755) != 0) {
        char m[600];
        snprintf(m, sizeof m, "cannot create the directory of %s: %s", path, strerror(errno));
        *err = util_strdup(m);
        return -1;
    }
    if (create) ignore_dir(path);
    sqlite3 *db;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX | (create ? SQLITE_OPEN_CREATE : 0);
    if (sqlite3_open_v2(path, &db, flags, NULL) != SQLITE_OK) {
        char m[600];
        snprintf(m, sizeof m, "%s: %s", path, db ? sqlite3_errmsg(db) : "cannot open");
        *err = util_strdup(m);
        sqlite3_close(db);
        return -1;
    }
    sqlite3_busy_timeout(db, 5000);
    char *e = NULL;
    if (sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, &e) !=
            SQLITE_OK ||
        (create && sqlite3_exec(db, schema, NULL, NULL, &e) != SQLITE_OK)) {
        char m[600];
        snprintf(m, sizeof m, "%s: %s", path, e ? e : "schema");
        *err = util_strdup(m);
        sqlite3_free(e);
        sqlite3_close(db);
        return -1;
    }
    *out = db;
    return 0;
}

char *graph_db_meta(sqlite3 *db, const char *key)
{
    char *v = NULL;
    return graph_db_metas(db, &key, 1, &v) == 0 ? v : NULL;
}

int graph_db_metas(sqlite3 *db, const char *const *keys, size_t n, char **out)
{
    for (size_t i = 0; i < n; i++) out[i] = NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1, &st, NULL) != SQLITE_OK) return -1;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        sqlite3_bind_text(st, 1, keys[i], -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        const unsigned char *v = r == SQLITE_ROW ? sqlite3_column_text(st, 0) : NULL;
        if (v && !(out[i] = util_strdup((const char *)v))) rc = -1;
        else if (r != SQLITE_ROW && r != SQLITE_DONE) rc = -1;
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (rc != 0)
        for (size_t i = 0; i < n; i++) free(out[i]), out[i] = NULL;
    return rc;
}

int graph_db_set_meta(sqlite3 *db, const char *key, const char *value)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", -1, &st,
                           NULL) != SQLITE_OK)
        return -1;
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
    sqlite3_finalize(st);
    return rc;
}
