/* testhost.h: a small host for tests that dlopen()s build/libclarity.so
 * through the public ABI, with an optional in-memory kv store. */
#ifndef TESTS_TESTHOST_H
#define TESTS_TESTHOST_H

#include <jansson.h>

#include "../include/clarity.h"

typedef struct th_host {
    void *dl;
    clarity_host host;
    clarity_plugin p;
    struct th_kv *kv; /* NULL unless created with kv */
    int log_lines;
    int error_lines;        /* lines at CLARITY_LOG_WARN or above */
    char last_error[512];   /* the last of them */
    char count_match[64];   /* when set: log lines containing it are counted... */
    int matched_lines;      /* ...here (any level) */
} th_host;

/* Path of a file in the build directory ($CLARITY_BUILD or "build"). */
const char *th_build_path(const char *file);
/* A fresh temp file path (not created) under /tmp; static buffer per call. */
char *th_tmp_path(const char *suffix);
/* Removes an SQLite file with its -wal and -shm: a new file of the same
 * name (the pid in th_tmp_path's names comes back) would otherwise take
 * up the old WAL, frames and all. */
void th_unlink_db(const char *db);
/* An SQLite file's WAL size in frames (4 KiB pages with their 24-byte
 * headers), rounded down: its 32-byte header is less than a frame. */
long th_wal_frames(const char *db);

/* A test's time limit, as its criterion .init: SIGALRM ends the test's
 * worker after that many seconds (reported as a crash by signal 14).  In
 * place of criterion's .timeout, whose watchdog keeps a request per test
 * until its deadline: the runner that exits before the deadlines of the
 * last tests leaves them behind, and LeakSanitizer fails the ASan build
 * on them (48 bytes each, allocated in libcriterion). */
void th_limit_60(void);
void th_limit_120(void);

/* Loads the plugin with config_json.  with_kv: lend an in-memory kv.
 * Returns 0 or the init error code (errmsg in *err when given). */
int th_open(th_host *h, const char *config_json, int with_kv, char **err);
/* The same for a host with those CLARITY_HOST_* flags. */
int th_open_flags(th_host *h, const char *config_json, int with_kv, uint32_t flags, char **err);
void th_close(th_host *h);
/* Counts keys of a namespace in the host kv. */
size_t th_kv_count(th_host *h, const char *ns);
/* Counts the keys of a namespace that start with prefix. */
size_t th_kv_count_prefix(th_host *h, const char *ns, const char *prefix);
/* A copy of a value of the host kv (malloc()ed; *len its length), or NULL. */
char *th_kv_value(th_host *h, const char *ns, const char *key, size_t *len);

/* Hook helpers; return the plugin's rc.  *out (when given) gets a malloc'ed copy of data. */
int th_before(th_host *h, const char *session, const char *workspace, const char *prompt,
              size_t len, char **out);
int th_end(th_host *h, const char *session, const char *assistant, const char *tool_name,
           const char *tool_args);
/* result.error of this thread's last event ("" when none): per thread, as
 * a th_host may be shared by threads. */
const char *th_event_error(void);
/* agent_end with the turn's messages as given. */
int th_end_msgs(th_host *h, const char *session, const clarity_message *msgs, size_t n);
int th_compact(th_host *h, const char *session, char **out);
int th_session_end(th_host *h, const char *session);
int th_cmd(th_host *h, const char *session, const char *line, char **out, char **err);
/* RPC; *out gets the parsed JSON answer (result or error object). */
int th_rpc(th_host *h, const char *method, const char *params, json_t **out);
/* Finds an item in a clarity.getScores answer. */
json_t *th_item(json_t *scores, const char *id);

#endif
