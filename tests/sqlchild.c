/* sqlchild.c: SQL run by another process (sqlchild.h).
 *
 * A request:  u8 op ('Q' once on a path, 'O' open, 'S' on a connection,
 *             'C' close), u32 connection, str path, str sql, u32 params,
 *             each param a value;
 * a reply:    u32 length, then i32 rc, str err, u32 cols, u32 rows, and
 *             rows x cols values;
 * a value:    u8 type, then i64 (integer), f64 (float), str (text, blob;
 *             a reply's text with its NUL), nothing (null);
 * str:        u32 length, the bytes.
 * Integers are in this machine's order: both ends are one binary. */
#include "sqlchild.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../util/buf.h"

#define MAX_CONNS 16

static pid_t child_pid;
static int to_child = -1, from_child = -1;

/* ---- both ends ---------------------------------------------------------- */

static void put_u32(buf *b, uint32_t v) { buf_append(b, (const char *)&v, 4); }
static void put_str(buf *b, const void *p, size_t n)
{
    put_u32(b, (uint32_t)n);
    buf_append(b, p, n);
}

static void put_val(buf *b, const th_val *v)
{
    buf_putc(b, (char)v->type);
    if (v->type == SQLITE_INTEGER) buf_append(b, (const char *)&v->i, 8);
    else if (v->type == SQLITE_FLOAT) buf_append(b, (const char *)&v->f, 8);
    else if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) put_str(b, v->p, v->n);
}

static int write_all(int fd, const void *p, size_t n)
{
    for (const char *c = p; n;) {
        ssize_t w = write(fd, c, n);
        if (w <= 0) return -1;
        c += w, n -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, void *p, size_t n)
{
    for (char *c = p; n;) {
        ssize_t r = read(fd, c, n);
        if (r <= 0) return -1;
        c += r, n -= (size_t)r;
    }
    return 0;
}

/* A reader over a received message; a short message sets bad. */
typedef struct rd {
    const unsigned char *p, *end;
    int bad;
} rd;

static const void *take(rd *r, size_t n)
{
    if (r->bad || (size_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const void *at = r->p;
    r->p += n;
    return at;
}

static uint32_t get_u32(rd *r)
{
    uint32_t v = 0;
    const void *p = take(r, 4);
    if (p) memcpy(&v, p, 4);
    return v;
}

static const void *get_str(rd *r, size_t *n)
{
    *n = get_u32(r);
    return take(r, *n);
}

static void get_val(rd *r, th_val *v)
{
    memset(v, 0, sizeof *v);
    const unsigned char *t = take(r, 1);
    v->type = t ? *t : SQLITE_NULL;
    const void *p;
    if (v->type == SQLITE_INTEGER && (p = take(r, 8))) memcpy(&v->i, p, 8);
    else if (v->type == SQLITE_FLOAT && (p = take(r, 8))) memcpy(&v->f, p, 8);
    else if (v->type == SQLITE_TEXT || v->type == SQLITE_BLOB) v->p = get_str(r, &v->n);
}

/* ---- the child ---------------------------------------------------------- */

static int bind_all(sqlite3_stmt *st, rd *params, uint32_t np)
{
    rd r = *params;
    int rc = SQLITE_OK;
    for (uint32_t k = 0; rc == SQLITE_OK && k < np; k++) {
        th_val v;
        get_val(&r, &v);
        if ((int)k >= sqlite3_bind_parameter_count(st)) continue;
        int at = (int)k + 1;
        if (v.type == SQLITE_INTEGER) rc = sqlite3_bind_int64(st, at, v.i);
        else if (v.type == SQLITE_FLOAT) rc = sqlite3_bind_double(st, at, v.f);
        else if (v.type == SQLITE_TEXT) rc = sqlite3_bind_text64(st, at, v.p, v.n, SQLITE_TRANSIENT, SQLITE_UTF8);
        else if (v.type == SQLITE_BLOB) rc = sqlite3_bind_blob64(st, at, v.p, v.n, SQLITE_TRANSIENT);
        else rc = sqlite3_bind_null(st, at);
    }
    return r.bad ? SQLITE_MISUSE : rc;
}

/* Runs the statements of sql on db, their rows into cells (cols, rows
 * counted); SQLite's code, its message in *err. */
static int run(sqlite3 *db, const char *sql, rd *params, uint32_t np, buf *cells, uint32_t *cols,
               uint32_t *rows, const char **err)
{
    int rc = SQLITE_OK;
    *err = "";
    while (rc == SQLITE_OK && sql && *sql) {
        sqlite3_stmt *st = NULL;
        const char *tail = NULL;
        rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
        sql = tail;
        if (rc != SQLITE_OK || !st) break; /* an error, or only blanks left */
        rc = bind_all(st, params, np);
        while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            uint32_t n = (uint32_t)sqlite3_column_count(st);
            if (!*rows) *cols = n;
            if (n != *cols) { /* rows of one width: the tests ask for no more */
                rc = SQLITE_MISUSE;
                break;
            }
            for (uint32_t c = 0; c < n; c++) {
                th_val v = {sqlite3_column_type(st, (int)c), 0, 0, NULL, 0};
                if (v.type == SQLITE_INTEGER) v.i = sqlite3_column_int64(st, (int)c);
                else if (v.type == SQLITE_FLOAT) v.f = sqlite3_column_double(st, (int)c);
                else if (v.type == SQLITE_TEXT || v.type == SQLITE_BLOB) {
                    v.p = v.type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, (int)c)
                                                : sqlite3_column_blob(st, (int)c);
                    /* a text with its NUL (the reader drops it from n) */
                    v.n = (size_t)sqlite3_column_bytes(st, (int)c) + (v.type == SQLITE_TEXT);
                }
                put_val(cells, &v);
            }
            (*rows)++;
            rc = SQLITE_OK;
        }
        if (rc == SQLITE_DONE) rc = SQLITE_OK;
        if (rc != SQLITE_OK) *err = sqlite3_errmsg(db);
        sqlite3_finalize(st);
    }
    if (rc != SQLITE_OK && !**err) *err = sqlite3_errmsg(db);
    return rc;
}

static void reply(buf *out, int rc, const char *err, uint32_t cols, uint32_t rows, const buf *cells)
{
    buf_reset(out);
    put_u32(out, 0); /* the length, set below */
    int32_t r = rc;
    buf_append(out, (const char *)&r, 4);
    put_str(out, err, strlen(err));
    put_u32(out, cols);
    put_u32(out, rows);
    buf_append(out, cells->p ? cells->p : "", cells->len);
    uint32_t len = (uint32_t)(out->len - 4);
    memcpy(out->p, &len, 4);
}

/* One request; 0, or -1 to end (the parent's end, or a bad message). */
static int serve_one(int in, int out_fd, sqlite3 **conns, buf *out, buf *cells)
{
    uint32_t len;
    if (read_all(in, &len, 4) != 0) return -1;
    unsigned char *msg = malloc(len ? len : 1);
    if (!msg || read_all(in, msg, len) != 0) return free(msg), -1;
    rd r = {msg, msg + len, 0};
    const unsigned char *op = take(&r, 1);
    uint32_t conn = get_u32(&r);
    size_t path_n, sql_n;
    const char *path = get_str(&r, &path_n), *sql = get_str(&r, &sql_n);
    uint32_t np = get_u32(&r);
    char *p = path ? strndup(path, path_n) : NULL, *s = sql ? strndup(sql, sql_n) : NULL;
    int rc = SQLITE_OK;
    const char *err = "";
    uint32_t cols = 0, rows = 0;
    buf_reset(cells);
    if (r.bad || !op || !p || !s || conn >= MAX_CONNS) {
        rc = SQLITE_MISUSE, err = "sqlchild: a bad request";
    } else if (*op == 'Q' || *op == 'O') {
        sqlite3 *db = NULL;
        rc = sqlite3_open(p, &db);
        if (rc != SQLITE_OK) err = db ? sqlite3_errmsg(db) : "out of memory";
        else if (*op == 'Q') rc = run(db, s, &r, np, cells, &cols, &rows, &err);
        if (*op == 'O' && rc == SQLITE_OK) {
            uint32_t k = 1;
            while (k < MAX_CONNS && conns[k]) k++;
            if (k == MAX_CONNS) rc = SQLITE_FULL, err = "sqlchild: too many connections";
            else conns[k] = db, db = NULL, cols = k; /* the id, in cols */
        }
        reply(out, rc, err, cols, rows, cells);
        sqlite3_close(db);
    } else if (*op == 'S' && conns[conn]) {
        rc = run(conns[conn], s, &r, np, cells, &cols, &rows, &err);
        reply(out, rc, err, cols, rows, cells);
    } else if (*op == 'C' && conns[conn]) {
        sqlite3_close(conns[conn]);
        conns[conn] = NULL;
        reply(out, rc, err, cols, rows, cells);
    } else {
        reply(out, SQLITE_MISUSE, "sqlchild: no such connection", 0, 0, cells);
    }
    free(p);
    free(s);
    free(msg);
    return write_all(out_fd, out->p, out->len);
}

static void __attribute__((noreturn)) child_main(int in, int out_fd)
{
    /* only its own pipe: a copy of another pipe's end (a test's child
     * process's) would keep that pipe open after its reader's peer died */
    for (int fd = 3; fd < 1024; fd++)
        if (fd != in && fd != out_fd) close(fd);
    sqlite3 *conns[MAX_CONNS] = {0};
    buf out, cells;
    buf_init(&out);
    buf_init(&cells);
    while (serve_one(in, out_fd, conns, &out, &cells) == 0) {}
    for (int k = 0; k < MAX_CONNS; k++) sqlite3_close(conns[k]);
    _exit(0);
}

/* ---- the test's end ------------------------------------------------------ */

static void start_child(void)
{
    if (child_pid > 0) return;
    int down[2], up[2];
    cr_assert(pipe(down) == 0 && pipe(up) == 0, "sqlchild: pipe");
    signal(SIGPIPE, SIG_IGN); /* a dead child is an assertion, not a signal */
    pid_t pid = fork();
    cr_assert(pid >= 0, "sqlchild: fork");
    if (pid == 0) {
        close(down[1]);
        close(up[0]);
        child_main(down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    child_pid = pid, to_child = down[1], from_child = up[0];
}

static th_rows *request(char op, int conn, const char *db, const char *sql, const th_val *params, int np)
{
    start_child();
    buf m;
    buf_init(&m);
    put_u32(&m, 0);
    buf_putc(&m, op);
    put_u32(&m, (uint32_t)conn);
    put_str(&m, db ? db : "", db ? strlen(db) : 0);
    put_str(&m, sql ? sql : "", sql ? strlen(sql) : 0);
    put_u32(&m, (uint32_t)(np > 0 ? np : 0));
    for (int k = 0; k < np; k++) put_val(&m, &params[k]);
    cr_assert(!buf_failed(&m), "sqlchild: out of memory");
    uint32_t len = (uint32_t)(m.len - 4);
    memcpy(m.p, &len, 4);
    int sent = write_all(to_child, m.p, m.len);
    buf_free(&m);
    cr_assert_eq(sent, 0, "sqlchild: the child is gone");
    cr_assert_eq(read_all(from_child, &len, 4), 0, "sqlchild: the child is gone");
    th_rows *rs = calloc(1, sizeof *rs);
    cr_assert(rs && (rs->mem = malloc(len ? len : 1)), "sqlchild: out of memory");
    cr_assert_eq(read_all(from_child, rs->mem, len), 0, "sqlchild: the child is gone");
    rd r = {rs->mem, rs->mem + len, 0};
    int32_t rc = 0;
    const void *p = take(&r, 4);
    if (p) memcpy(&rc, p, 4);
    size_t err_n;
    const char *err = get_str(&r, &err_n);
    rs->rc = rc;
    rs->cols = get_u32(&r);
    rs->n = get_u32(&r);
    cr_assert(!r.bad && (rs->n == 0 || rs->cols > 0), "sqlchild: a bad reply");
    rs->v = calloc(rs->n * rs->cols + 1, sizeof *rs->v);
    cr_assert_not_null(rs->v, "sqlchild: out of memory");
    for (size_t k = 0; k < rs->n * rs->cols; k++) {
        get_val(&r, &rs->v[k]);
        if (rs->v[k].type == SQLITE_TEXT && rs->v[k].n) rs->v[k].n--; /* sent with its NUL */
    }
    cr_assert(!r.bad, "sqlchild: a bad reply");
    char *e = malloc(err_n + 1);
    cr_assert_not_null(e);
    memcpy(e, err, err_n);
    e[err_n] = '\0';
    rs->err = e;
    return rs;
}

th_rows *th_sql_once(const char *db, const char *sql, const th_val *params, int np)
{
    return request('Q', 0, db, sql, params, np);
}

int th_sql_open(const char *db)
{
    th_rows *r = request('O', 0, db, "", NULL, 0);
    cr_assert_eq(r->rc, SQLITE_OK, "sqlchild: open %s: %s", db, r->err);
    int id = (int)r->cols;
    th_rows_free(r);
    return id;
}

th_rows *th_sql_on(int conn, const char *sql, const th_val *params, int np)
{
    return request('S', conn, NULL, sql, params, np);
}

void th_sql_close(int conn)
{
    th_rows *r = request('C', conn, NULL, "", NULL, 0);
    cr_assert_eq(r->rc, SQLITE_OK, "sqlchild: close: %s", r->err);
    th_rows_free(r);
}

void th_rows_free(th_rows *r)
{
    if (!r) return;
    free(r->v);
    free((char *)r->err);
    free(r->mem);
    free(r);
}

void th_sql_do(int conn, const char *db, const char *sql)
{
    th_rows *r = conn ? th_sql_on(conn, sql, NULL, 0) : th_sql_once(db, sql, NULL, 0);
    cr_assert_eq(r->rc, SQLITE_OK, "%s: %s", sql, r->err);
    th_rows_free(r);
}

long long th_sql_int(const char *db, const char *sql)
{
    th_rows *r = th_sql_once(db, sql, NULL, 0);
    cr_assert_eq(r->rc, SQLITE_OK, "%s: %s", sql, r->err);
    long long v = r->n ? th_cell(r, 0, 0)->i : -1;
    th_rows_free(r);
    return v;
}
