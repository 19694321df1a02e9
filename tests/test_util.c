/* test_util.c: what the plugin and the CLI share through util/: the names
 * of the return codes and the default state database. */
#include <criterion/criterion.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../include/clarity.h"
#include "../util/buf.h"
#include "../util/errors.h"
#include "../util/endian.h"
#include "../util/memfind.h"
#include "../util/namefilter.h"
#include "../util/radix.h"
#include "runproc.h"

Test(util, every_return_code_has_one_name)
{
    const int codes[] = {CLARITY_OK,        CLARITY_ERR,      CLARITY_EINVAL,
                         CLARITY_ENOMEM,    CLARITY_ENOTFOUND, CLARITY_DECLINED,
                         CLARITY_EVERSION,  CLARITY_ESTORE,   CLARITY_ECONFIG};
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++) {
        const char *n = util_rc_name(codes[i]);
        cr_assert(n && *n && strcmp(n, "unknown error") != 0, "code %d has no name", codes[i]);
        for (size_t j = 0; j < i; j++)
            cr_assert_str_neq(n, util_rc_name(codes[j]), "codes %d and %d share a name", codes[i],
                              codes[j]);
    }
    cr_assert_str_eq(util_rc_name(CLARITY_ESTORE), "store error");
    cr_assert_str_eq(util_rc_name(-99), "unknown error");
}

static char *state_path(void)
{
    char *err = NULL, *p = util_default_state_path(&err);
    cr_assert_not_null(p, "%s", err ? err : "");
    cr_assert_null(err);
    return p;
}

Test(util, default_state_path_follows_the_documented_order)
{
    char *tmp = runproc_mkdtemp("clarity-util-test");
    char *home = runproc_join(tmp, "home"), *xdg = runproc_join(tmp, "xdg");
    setenv("CLARITY_STATE", "/tmp/explicit.db", 1);
    setenv("XDG_STATE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    char *p = state_path();
    cr_assert_str_eq(p, "/tmp/explicit.db");
    free(p);
    unsetenv("CLARITY_STATE");
    p = state_path();
    char want[4200];
    snprintf(want, sizeof want, "%s/clarity/clarity.db", xdg);
    cr_assert_str_eq(p, want);
    struct stat st;
    char *made = runproc_join(xdg, "clarity");
    cr_assert_eq(stat(made, &st), 0, "the directory was not made");
    free(made);
    free(p);
    setenv("XDG_STATE_HOME", "relative/dir", 1); /* not absolute: ignored */
    p = state_path();
    snprintf(want, sizeof want, "%s/.local/state/clarity/clarity.db", home);
    cr_assert_str_eq(p, want);
    free(p);
    runproc_rmtree(tmp);
    free(tmp), free(home), free(xdg);
}

/* HOME unset: the password database's home, as the CLI always did and the
 * plugin now does too (it fell back to ./clarity.db). */
Test(util, default_state_path_without_home_uses_the_password_database)
{
    unsetenv("CLARITY_STATE");
    unsetenv("XDG_STATE_HOME");
    unsetenv("HOME");
    struct passwd *pw = getpwuid(getuid());
    char *err = NULL, *p = util_default_state_path(&err);
    if (pw && pw->pw_dir && pw->pw_dir[0] == '/' && access(pw->pw_dir, W_OK) == 0) {
        char want[4200];
        snprintf(want, sizeof want, "%s/.local/state/clarity/clarity.db", pw->pw_dir);
        cr_assert_not_null(p, "%s", err ? err : "");
        cr_assert_str_eq(p, want);
    } else {
        cr_assert_null(p);
        cr_assert_not_null(err);
    }
    free(p);
    free(err);
}

/* util_memfind finds what memmem finds, on texts dense with the needle's
 * first byte and its prefixes, at both ends of exact-size buffers. */
Test(util, memfind_equals_memmem)
{
    static const char *const needles[] = {"[CLARITY CONTEXT]", "[/CLARITY CONTEXT]", "[", "[[", "ab", "x"};
    srand(5);
    for (int round = 0; round < 3000; round++) {
        size_t n = (size_t)(rand() % 200);
        char *h = malloc(n ? n : 1);
        for (size_t i = 0; i < n; i++) {
            static const char alpha[] = "[[/CLARITY CONTEXT]ab x";
            h[i] = alpha[rand() % (sizeof alpha - 1)];
        }
        const char *nd = needles[rand() % 6];
        size_t m = strlen(nd);
        if (n >= m && rand() % 3 == 0) memcpy(h + (size_t)rand() % (n - m + 1), nd, m);
        cr_assert_eq(util_memfind(h, n, nd, m), memmem(h, n, nd, m), "round %d", round);
        free(h);
    }
}

/* A tail of 0..7 bytes read with two overlapping loads is the value the
 * byte-by-byte loop builds (the hashes of names and ids depend on it). */
Test(util, tail_load_equals_the_byte_loop)
{
    unsigned char b[16];
    srand(9);
    for (int round = 0; round < 2000; round++) {
        for (size_t i = 0; i < sizeof b; i++) b[i] = (unsigned char)rand();
        size_t at = (size_t)rand() % 8, r = (size_t)round % 8;
        uint64_t want = 0;
        for (size_t k = 0; k < r; k++) want |= (uint64_t)b[at + k] << (8 * k);
        cr_assert_eq(util_load_le_tail(b + at, r), want, "r = %zu", r);
    }
}

/* A word's project, tool and keyword ids hash as its name hash and the
 * form (so a scanner tests them without building them), other ids as
 * themselves; a filter holding an id passes it by either route. */
Test(util, id_hash_of_a_word_form_is_its_name_hash_and_form)
{
    static const char *const words[] = {"x", "parser", "word0012", "a_b", "configurationsxyz", "q1"};
    char id[64];
    name_filter f = {0};
    cr_assert_eq(name_filter_reset(&f, 16), 0);
    for (size_t i = 0; i < sizeof words / sizeof *words; i++) {
        const char *w = words[i];
        size_t n = strlen(w);
        uint64_t h = name_hash(w, n);
        cr_assert_eq(name_id_hash(w, n), name_id_mix(h, NAME_FORM_OTHER), "%s", w);
        snprintf(id, sizeof id, "tool:%s", w);
        cr_assert_eq(name_id_hash(id, strlen(id)), name_id_mix(h, NAME_FORM_TOOL), "%s", id);
        snprintf(id, sizeof id, "keyword:%s", w);
        cr_assert_eq(name_id_hash(id, strlen(id)), name_id_mix(h, NAME_FORM_KEYWORD), "%s", id);
        cr_assert_neq(name_id_mix(h, NAME_FORM_TOOL), name_id_mix(h, NAME_FORM_KEYWORD));
        name_filter_add(&f, w, n, id, strlen(id));
        cr_assert(name_filter_test_id(&f, id, strlen(id)));
        cr_assert(name_filter_test_idhash(&f, name_id_mix(h, NAME_FORM_KEYWORD)));
    }
    /* a prefix alone is an ordinary id; a file id is hashed whole */
    cr_assert_eq(name_id_hash("tool:", 5), name_id_mix(name_hash("tool:", 5), NAME_FORM_OTHER));
    cr_assert_eq(name_id_hash("file:src/a.ts", 13), name_id_mix(name_hash("file:src/a.ts", 13), NAME_FORM_OTHER));
    int passed = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(id, sizeof id, "tool:other%d", i);
        passed += name_filter_test_id(&f, id, strlen(id));
    }
    cr_assert_lt(passed, 40, "false positives %d/2000", passed);
    name_filter_free(&f);
}

/* The first test of a lone word: a word the name hash folds to a name
 * (any case, '_' for the name's '-') always passes, whatever follows it in
 * the text; most other words do not. */
Test(util, word_test_passes_every_word_a_name_folds_to)
{
    static const struct {
        const char *name, *word;
    } pairs[] = {{"parser", "parser"},     {"parser", "Parser"},   {"parser", "PARSER"},
                 {"focus-engine", "focus_engine"}, {"a-b", "A_b"}, {"q1", "Q1"},
                 {"x", "X"},               {"word0012", "WORD0012"}, {"ab", "aB"},
                 {"snake_case_name", "Snake_Case_Name"}};
    name_filter f = {0};
    cr_assert_eq(name_filter_reset(&f, 64), 0);
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++)
        name_filter_add(&f, pairs[i].name, strlen(pairs[i].name), pairs[i].name, strlen(pairs[i].name));
    char text[64];
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
        size_t n = strlen(pairs[i].word);
        /* the eight bytes read from the word's start hold what follows it */
        snprintf(text, sizeof text, "%s.,;xyzzy?!", pairs[i].word);
        cr_assert(name_filter_word_may(&f, name_load8(text), n), "%s (name %s)", pairs[i].word, pairs[i].name);
        cr_assert(name_filter_test(&f, pairs[i].word, n), "%s", pairs[i].word); /* the full hash agrees */
    }
    int passed = 0;
    for (int i = 0; i < 2000; i++) {
        snprintf(text, sizeof text, "w%dother           ", i);
        passed += name_filter_word_may(&f, name_load8(text), strlen(text) - 11);
    }
    cr_assert_lt(passed, 100, "false passes %d/2000", passed);
    name_filter_free(&f);
}

/* The byte masks find the first byte equal to c, or below c, as a byte
 * loop does: over every position of every byte value in words of other
 * bytes, and two such bytes in one word (the lower one wins). */
Test(util, byte_masks_find_the_first_byte_as_a_loop_does)
{
    static const unsigned char fill[] = {' ', 'a', 0x7f, 0x80, 0xff, 0x21};
    static const unsigned char cs[] = {0, 0x1b, '\r', '"', '\\', 0x20, 0x80};
    for (size_t f = 0; f < sizeof fill; f++)
        for (size_t ci = 0; ci < sizeof cs; ci++)
            for (unsigned v = 0; v < 256; v++)
                for (int at = 0; at < 8; at++)
                    for (int at2 = at; at2 < 8; at2++) {
                        unsigned char b[8];
                        memset(b, fill[f], 8);
                        b[at2] = (unsigned char)(v ^ 0x55);
                        b[at] = (unsigned char)v;
                        unsigned char c = cs[ci];
                        uint64_t x = util_load_le64(b), eq = util_bytes_eq(x, c);
                        int want = -1;
                        for (int i = 0; i < 8 && want < 0; i++)
                            if (b[i] == c) want = i;
                        cr_assert_eq(eq ? __builtin_ctzll(eq) / 8 : -1, want, "eq %02x in %016llx", c,
                                     (unsigned long long)x);
                        if (c > 0x80) continue;
                        uint64_t lt = util_bytes_below(x, c);
                        want = -1;
                        for (int i = 0; i < 8 && want < 0; i++)
                            if (b[i] < c) want = i;
                        cr_assert_eq(lt ? __builtin_ctzll(lt) / 8 : -1, want, "below %02x in %016llx", c,
                                     (unsigned long long)x);
                    }
}

/* util_radix_order against the definition: indices by key ascending, equal
 * keys in index order; keys alike in some bytes (packed keys), in none,
 * all equal, and the empty and one-key cases. */
Test(util, radix_order_is_a_stable_sort_by_key)
{
    uint64_t rng = 0x243f6a8885a308d3ull;
    static const uint64_t masks[] = {~(uint64_t)0, 0xffffull, 0xff00ff0000ull, 0x7ull << 40, 0};
    for (size_t m = 0; m < sizeof masks / sizeof *masks; m++)
        for (size_t n = 0; n <= 3000; n = n ? n * 3 + 1 : 1) {
            uint64_t *k = malloc((n ? n : 1) * sizeof *k);
            uint32_t *x = malloc(2 * (n ? n : 1) * sizeof *x);
            cr_assert(k && x);
            for (size_t i = 0; i < n; i++) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                k[i] = (rng & masks[m]) | 0x0100000000000000ull; /* a byte alike in every key */
            }
            uint32_t *o = util_radix_order(k, x, n);
            cr_assert_not_null(o);
            for (size_t i = 1; i < n; i++) {
                uint32_t a = o[i - 1], b = o[i];
                cr_assert(k[a] < k[b] || (k[a] == k[b] && a < b), "mask %zu, n %zu, at %zu: %u then %u", m, n,
                          i, a, b);
            }
            /* a permutation of 0..n-1 */
            uint8_t *seen = calloc(n ? n : 1, 1);
            for (size_t i = 0; i < n; i++) {
                cr_assert_lt(o[i], n);
                cr_assert_not(seen[o[i]]);
                seen[o[i]] = 1;
            }
            free(seen);
            free(k);
            free(x);
        }
}

/* The printf-free decimals (buf_put_i64, buf_put_u64) print what %lld and
 * %llu print, the extremes included. */
Test(util, decimals_print_as_printf_does)
{
    const long long is[] = {0, 1, -1, 9, 10, -10, 1234567890123LL, LLONG_MAX, LLONG_MIN};
    const unsigned long long us[] = {0, 7, 100, 18446744073709551615ULL, 9223372036854775808ULL};
    char want[32];
    buf b;
    buf_init(&b);
    for (size_t i = 0; i < sizeof is / sizeof *is; i++) {
        buf_reset(&b);
        buf_put_i64(&b, is[i]);
        snprintf(want, sizeof want, "%lld", is[i]);
        cr_assert_str_eq(b.p, want);
    }
    for (size_t i = 0; i < sizeof us / sizeof *us; i++) {
        buf_reset(&b);
        buf_put_u64(&b, us[i]);
        snprintf(want, sizeof want, "%llu", us[i]);
        cr_assert_str_eq(b.p, want);
    }
    buf_free(&b);
}

/* buf_put_f3 prints what "%.3f" prints: halves of the last place exactly
 * and near, the neighbours of every thousandth, scores' usual values,
 * random doubles of every magnitude, and what it hands to printf
 * (negative, infinite, NaN, 10^6 and above). */
Test(util, three_decimals_print_as_printf_does)
{
    const double edge[] = {0, -0.0, 0.0005, 0.0015, 0.0025, 0.0625, 0.1875, 1.0005, 2.5, 999999.9995,
                           999999.999, 1e6, 1e6 + 0.0005, 1e300, -1.5, -0.0004, 1e-300, 5e-324,
                           HUGE_VAL, -HUGE_VAL, NAN, 0.1, 0.7, 12.345, 12.3455, 123.4565};
    char want[400];
    buf b;
    buf_init(&b);
    unsigned seed = 7;
    for (size_t i = 0; i < 400000; i++) {
        double v;
        if (i < sizeof edge / sizeof *edge) v = edge[i];
        else if (i % 4 == 0) v = nextafter((double)(i / 4 % 2000000) / 2000.0, i % 8 ? HUGE_VAL : -HUGE_VAL);
        else if (i % 4 == 1) v = (double)rand_r(&seed) / RAND_MAX * 100.0;
        else if (i % 4 == 2) v = (double)(i % 1000003) / 1000.0;
        else v = ldexp((double)rand_r(&seed) / RAND_MAX, (int)(i % 60) - 30);
        buf_reset(&b);
        buf_put_f3(&b, v);
        snprintf(want, sizeof want, "%.3f", v);
        cr_assert_str_eq(b.p, want, "%.17g", v);
    }
    buf_free(&b);
}

/* buf_printf grows for a text longer than the room it tries first, and
 * appends after what is there. */
Test(util, printf_appends_texts_of_any_length)
{
    buf b;
    buf_init(&b);
    char want[3000] = "";
    for (int n = 0; n < 2000; n += 37) {
        buf_printf(&b, "[%*d]", n, n);
        snprintf(want + strlen(want), sizeof want - strlen(want), "[%*d]", n, n);
        if (strlen(want) > 2500) break;
    }
    cr_assert(!buf_failed(&b));
    cr_assert_eq(b.len, strlen(want));
    cr_assert_str_eq(b.p, want);
    buf_free(&b);
}

/* util_bytes_eq_each marks every byte equal to c and no other, for every
 * pair of byte values in every pair of positions (util_bytes_eq is exact
 * for the lowest mark only). */
Test(util, bytes_eq_each_marks_exactly_the_equal_bytes)
{
    static const unsigned char cs[] = {'/', '-', 0, 0x7f, 0x80, 0xff};
    for (size_t ci = 0; ci < sizeof cs; ci++)
        for (unsigned a = 0; a < 256; a += 3)
            for (unsigned b = 0; b < 256; b++)
                for (unsigned pa = 0; pa < 8; pa += 3)
                    for (unsigned pb = 0; pb < 8; pb++) {
                        unsigned char v[8];
                        memset(v, cs[ci] ^ 1, sizeof v);
                        v[pa] = (unsigned char)a;
                        v[pb] = (unsigned char)b;
                        uint64_t m = util_bytes_eq_each(util_load_le64(v), cs[ci]), want = 0;
                        for (unsigned i = 0; i < 8; i++)
                            if (v[i] == cs[ci]) want |= (uint64_t)0x80 << (8 * i);
                        cr_assert_eq(m, want, "c 0x%02x, bytes 0x%02x at %u, 0x%02x at %u", cs[ci], a, pa, b, pb);
                    }
}
