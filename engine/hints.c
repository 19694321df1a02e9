/* hints.c: after a turn edits a file, the next blocks name the files that
 * change together with it in the repository's history and that the
 * session has not touched yet ("↔ src/b.ts changes with src/a.ts in 7 of 9
 * commits"): implicit contracts the agent may forget.  From the graph's
 * co-change table (graph/intel.c), only when the workspace has a graph;
 * never builds one.  Not persisted: they are about the latest turn. */
#include "hints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../graph/graph.h"

static void free_list(char ***v, size_t *n)
{
    for (size_t i = 0; i < *n; i++) free((*v)[i]);
    free(*v);
    *v = NULL;
    *n = 0;
}

void hints_clear(session *s)
{
    free_list(&s->edited, &s->n_edited);
    free_list(&s->hints, &s->n_hints);
}

static int push(char ***v, size_t *n, char *line)
{
    if (!line) return -1;
    char **g = realloc(*v, (*n + 1) * sizeof *g);
    if (!g) {
        free(line);
        return -1;
    }
    *v = g;
    g[(*n)++] = line;
    return 0;
}

/* path relative to the workspace (absolute paths under it lose it). */
static char *relative(const session *s, const char *path)
{
    size_t wl = s->workspace ? strlen(s->workspace) : 0;
    if (wl && strncmp(path, s->workspace, wl) == 0 && path[wl] == '/') path += wl + 1;
    while (path[0] == '.' && path[1] == '/') path += 2;
    return path[0] == '/' || !*path ? NULL : strdup(path);
}

void hints_note_edit(session *s, const char *args_json)
{
    if (!args_json || s->n_edited >= HINTS_EDITED_MAX) return;
    static const char *const keys[] = {"file_path", "path", "notebook_path", "filePath"};
    buf p;
    buf_init(&p);
    char *rel = extract_json_member(args_json, keys, sizeof keys / sizeof *keys, &p) == 1 ? relative(s, p.p) : NULL;
    buf_free(&p);
    for (size_t i = 0; rel && i < s->n_edited; i++)
        if (strcmp(s->edited[i], rel) == 0) {
            free(rel);
            rel = NULL;
        }
    if (rel) push(&s->edited, &s->n_edited, rel);
}

/* Whether the session already used the file (a reference) or edited it now. */
static int touched(const session *s, const char *path)
{
    char *id = util_format("file:%s", path);
    const item *it = id ? tracker_find((tracker *)&s->t, id) : NULL;
    free(id);
    if (it && it->reference_count > 0) return 1;
    for (size_t i = 0; i < s->n_edited; i++)
        if (strcmp(s->edited[i], path) == 0) return 1;
    return 0;
}

void hints_update(engine *e, session *s)
{
    free_list(&s->hints, &s->n_hints);
    size_t max = (size_t)e->cfg.codeintel.max_hints;
    /* nothing edited (most turns): no graph is looked for */
    if (!s->n_edited || !e->cfg.codeintel.cochange_hints || !s->workspace || !max ||
        !graph_engine_has_graph(e->graphs, s->workspace))
        goto done;
    for (size_t i = 0; i < s->n_edited && s->n_hints < max; i++) {
        graph_partner p[8];
        size_t n = 0;
        if (graph_engine_cochange(e->graphs, s->workspace, s->edited[i], 8, p, &n) != 0) continue;
        for (size_t k = 0; k < n && s->n_hints < max; k++) {
            /* one shared commit says little: at least two, and a tenth of the file's */
            if (p[k].commits < 2 || p[k].score < 0.1 || touched(s, p[k].path)) continue;
            push(&s->hints, &s->n_hints,
                 util_format("\xE2\x86\x94 %s changes with %s in %lld of %lld commits\n", p[k].path,
                             s->edited[i], (long long)p[k].commits, (long long)p[k].of));
        }
    }
done:
    free_list(&s->edited, &s->n_edited);
}

void hints_block_lines(const session *s, buf *out, size_t max_len)
{
    size_t used = 0;
    for (size_t i = 0; i < s->n_hints; i++) {
        size_t l = strlen(s->hints[i]);
        if (used + l > max_len) break;
        buf_append(out, s->hints[i], l);
        used += l;
    }
}
