/* The SQLite store checkpoints its WAL in the background: the WAL stays
 * bounded over many commits, and what was committed is all there. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../store/store.h"
#include "testhost.h"

Test(store_ckpt, wal_stays_bounded_over_many_commits, .timeout = 120)
{
    char db[256], wal[300];
    snprintf(db, sizeof db, "%s", th_tmp_path(".db"));
    snprintf(wal, sizeof wal, "%s-wal", db);
    store *s = NULL;
    char *err = NULL;
    cr_assert_eq(store_open_sqlite(db, 0, &s, &err), CLARITY_OK, "%s", err ? err : "");
    char val[3000], key[32];
    memset(val, 'v', sizeof val);
    off_t biggest = 0;
    /* ~3 pages a commit: 8000 commits would leave a ~96 MB WAL unchecked */
    for (int t = 0; t < 8000; t++) {
        cr_assert_eq(store_begin(s), CLARITY_OK);
        for (int k = 0; k < 3; k++) {
            snprintf(key, sizeof key, "i:%d", (t * 3 + k) % 600);
            val[0] = (char)('a' + t % 26);
            cr_assert_eq(store_put(s, "ns", key, val, sizeof val), CLARITY_OK);
        }
        cr_assert_eq(store_commit(s), CLARITY_OK);
        if (t % 500 == 0) {
            struct stat st;
            if (stat(wal, &st) == 0 && st.st_size > biggest) biggest = st.st_size;
        }
    }
    struct stat st;
    cr_assert_eq(stat(wal, &st), 0);
    if (st.st_size > biggest) biggest = st.st_size;
    cr_assert_lt(biggest, 40 << 20, "WAL grew to %lld bytes: checkpoints are not running",
                 (long long)biggest);
    /* the last value written to a key is the one read back */
    char *v = NULL;
    size_t n = 0;
    cr_assert_eq(store_get(s, "ns", "i:599", &v, &n), CLARITY_OK);
    cr_assert_eq(n, sizeof val);
    cr_assert_eq(v[0], (char)('a' + 7999 % 26));
    free(v);
    store_close(s);
    unlink(db);
    unlink(wal);
    char shm[300];
    snprintf(shm, sizeof shm, "%s-shm", db);
    unlink(shm);
}
