/* sqlchild.h: SQL run by another process, for tests that read or edit a
 * SQLite file that a plugin instance in their own process has open.
 *
 * libclarity.so carries its own SQLite (the Makefile's STATIC_DEPS), and
 * two copies of SQLite in one process break each other: POSIX locks
 * belong to the process, so the copy that closes the file drops the
 * locks the other holds, and the copy that maps the -shm file first
 * resets the WAL index the other is using.  A child process is what a
 * second process (the CLI, a second gateway) is anyway.  It is started on
 * first use and ends with the test's process (EOF on its pipe).
 *
 * Nothing here asserts in the child; a statement's error comes back in
 * th_rows and the helpers below assert in the test's process. */
#ifndef TESTS_SQLCHILD_H
#define TESTS_SQLCHILD_H

#include <sqlite3.h>
#include <stddef.h>
#include <string.h>

/* A bound parameter or a result cell: type SQLITE_INTEGER (i),
 * SQLITE_BLOB or SQLITE_TEXT (p, n bytes; a text cell is NUL-terminated
 * past n), SQLITE_FLOAT (f), SQLITE_NULL. */
typedef struct th_val {
    int type;
    long long i;
    double f;
    const void *p;
    size_t n;
} th_val;
#define TH_INT(v) ((th_val){SQLITE_INTEGER, (v), 0, NULL, 0})
#define TH_BLOB(b, len) ((th_val){SQLITE_BLOB, 0, 0, (b), (len)})
#define TH_TEXT(s) ((th_val){SQLITE_TEXT, 0, 0, (s), strlen(s)})

/* What a call's statements returned: rows of cols cells (row-major, the
 * columns of the statements that returned rows; cells point into the
 * result, valid until th_rows_free).  rc: SQLITE_OK when every statement
 * ran to its end, else the failing step's code, with SQLite's message in
 * err. */
typedef struct th_rows {
    size_t n, cols;
    th_val *v;
    int rc;
    const char *err;
    unsigned char *mem; /* the reply the cells point into */
} th_rows;

/* Runs sql (one or more statements; params bound to each statement's ?1,
 * ?2...) on a connection to db opened for this call and closed after it,
 * in the child.  Never NULL (a broken child asserts). */
th_rows *th_sql_once(const char *db, const char *sql, const th_val *params, int np);
/* A connection the child holds open for the test (a transaction kept
 * across calls: a write lock, a reader's snapshot): its id. */
int th_sql_open(const char *db);
th_rows *th_sql_on(int conn, const char *sql, const th_val *params, int np);
void th_sql_close(int conn);
void th_rows_free(th_rows *r);

/* The cell at row r, column c. */
static inline const th_val *th_cell(const th_rows *rs, size_t r, size_t c) { return &rs->v[r * rs->cols + c]; }

/* Asserting forms: sql must succeed.  th_sql_do runs it on conn (0: a
 * connection for the call, on db); th_sql_int gives the first column of
 * the first row (-1 without a row). */
void th_sql_do(int conn, const char *db, const char *sql);
long long th_sql_int(const char *db, const char *sql);

#endif
