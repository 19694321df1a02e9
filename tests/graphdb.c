/* graphdb.c: see graphdb.h. */
#include "graphdb.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static sqlite3_stmt *prepare(const char *repo, const char *sql, sqlite3 **h)
{
    char db[4300];
    snprintf(db, sizeof db, "%s/.clarity/graph.db", repo);
    cr_assert_eq(sqlite3_open(db, h), SQLITE_OK, "%s", db);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(*h, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(*h));
    return st;
}

long long graphdb_int(const char *repo, const char *sql)
{
    sqlite3 *h;
    sqlite3_stmt *st = prepare(repo, sql, &h);
    long long v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

char *graphdb_meta(const char *repo, const char *key)
{
    sqlite3 *h;
    sqlite3_stmt *st = prepare(repo, "SELECT value FROM meta WHERE key = ?", &h);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    char *v = NULL;
    if (sqlite3_step(st) == SQLITE_ROW) v = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

void graphdb_set_meta(const char *repo, const char *key, const char *value)
{
    sqlite3 *h;
    sqlite3_stmt *st =
        prepare(repo, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", &h);
    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, value, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(h);
}

void graphdb_exec(const char *repo, const char *sql)
{
    char db[4300];
    snprintf(db, sizeof db, "%s/.clarity/graph.db", repo);
    sqlite3 *h;
    cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK, "%s", db);
    char *msg = NULL;
    int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
    cr_assert_eq(rc, SQLITE_OK, "%s: %s", sql, msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(h);
}
