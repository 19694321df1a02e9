/* prompt.c: the part of a prompt the ranking reads.
 *
 * Bug reports pasted into a prompt carry boilerplate that names modules by
 * accident: the HTML comments of issue templates ("Please include a
 * minimal example ..."), and environment dumps (show_versions(), pip
 * freeze, `pkg: 1.2.3` lists) whose package names match backend and
 * compatibility modules (netCDF4 -> backends/netCDF4_.py).  Both are
 * blanked out, keeping the text's length and line structure.
 */
#include <ctype.h>
#include <string.h>

#include "internal.h"

static int name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '[' || c == ']';
}

/* A line of an environment dump: NAME (":" | "==" | ">=" | spaces) VALUE,
 * VALUE a version (starts with a digit, then version characters) or
 * "None", optionally followed by a parenthesized remark. */
static int version_line(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '-' || s[i] == '*')) i++;
    size_t a = i;
    while (i < n && name_char(s[i])) i++;
    if (i == a || i - a > 40 || !isalpha((unsigned char)s[a])) return 0;
    size_t sep = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i < n && s[i] == ':') i++;
    else if (i + 1 < n && (s[i] == '=' || s[i] == '>') && s[i + 1] == '=') i += 2;
    else if (i == sep) return 0; /* no separator at all */
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (i + 4 <= n && strncmp(s + i, "None", 4) == 0) {
        i += 4;
    } else {
        if (i >= n || !isdigit((unsigned char)s[i])) return 0;
        while (i < n && (isalnum((unsigned char)s[i]) || strchr(".+-_", s[i]))) i++;
    }
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
    return i == n || s[i] == '(' || s[i] == '|';
}

size_t graph_prompt_clean(const char *s, size_t len, char *out)
{
    memcpy(out, s, len);
    /* HTML comments */
    for (char *p = out; (p = memmem(p, len - (size_t)(p - out), "<!--", 4)) != NULL;) {
        char *e = memmem(p + 4, len - (size_t)(p + 4 - out), "-->", 3);
        char *end = e ? e + 3 : out + len;
        for (char *q = p; q < end; q++)
            if (*q != '\n') *q = ' ';
        p = end;
    }
    /* environment dump lines */
    for (size_t i = 0; i < len;) {
        const char *nl = memchr(out + i, '\n', len - i);
        size_t e = nl ? (size_t)(nl - out) : len;
        if (version_line(out + i, e - i)) memset(out + i, ' ', e - i);
        i = e + 1;
    }
    return len;
}
