/* jsonconv.c: jansson values <-> clarity_message arrays and results. */
#include "jsonconv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"

void msgvec_init(msgvec *m) { memset(m, 0, sizeof *m); }

void msgvec_clear(msgvec *m)
{
    for (size_t i = 0; i < m->n; i++) {
        json_decref(m->refs[i]);
        free(m->args[i]);
    }
    m->n = 0;
}

void msgvec_free(msgvec *m)
{
    msgvec_clear(m);
    free(m->v);
    free(m->refs);
    free(m->args);
    msgvec_init(m);
}

void msgvec_swap(msgvec *a, msgvec *b)
{
    msgvec t = *a;
    *a = *b;
    *b = t;
}

static int grow(msgvec *m)
{
    if (m->n < m->cap) return 0;
    size_t nc = m->cap ? m->cap * 2 : 8;
    clarity_message *v = realloc(m->v, nc * sizeof *v);
    if (!v) return -1;
    m->v = v;
    json_t **r = realloc(m->refs, nc * sizeof *r);
    if (!r) return -1;
    m->refs = r;
    char **a = realloc(m->args, nc * sizeof *a);
    if (!a) return -1;
    m->args = a;
    m->cap = nc;
    return 0;
}

static int valid_role(const char *r)
{
    return strcmp(r, "user") == 0 || strcmp(r, "assistant") == 0 || strcmp(r, "tool") == 0 ||
           strcmp(r, "system") == 0;
}

int msgvec_push_json(msgvec *m, json_t *msg, const char **err)
{
    *err = NULL;
    if (!json_is_object(msg)) {
        *err = "message: must be an object";
        return -1;
    }
    json_t *role = json_object_get(msg, "role");
    json_t *text = json_object_get(msg, "text");
    json_t *tname = json_object_get(msg, "tool_name");
    json_t *targs = json_object_get(msg, "tool_args");
    if (!json_is_string(role) || !valid_role(json_string_value(role))) {
        *err = "role: must be one of \"user\", \"assistant\", \"tool\", \"system\"";
        return -1;
    }
    if (text && !json_is_string(text) && !json_is_null(text)) {
        *err = "text: must be a string";
        return -1;
    }
    if (tname && !json_is_string(tname) && !json_is_null(tname)) {
        *err = "tool_name: must be a string";
        return -1;
    }
    if (grow(m) != 0) return -1;
    char *args = NULL;
    if (json_is_string(targs)) {
        args = util_strdup(json_string_value(targs));
        if (!args) return -1;
    } else if (targs && !json_is_null(targs)) {
        args = json_compact(targs);
        if (!args) return -1;
    }
    clarity_message *c = &m->v[m->n];
    memset(c, 0, sizeof *c);
    c->struct_size = sizeof *c;
    c->role = json_string_value(role);
    if (json_is_string(text)) {
        c->text = json_string_value(text);
        c->text_len = json_string_length(text);
    } else {
        c->text = "";
        c->text_len = 0;
    }
    c->tool_name = json_is_string(tname) ? json_string_value(tname) : NULL;
    c->tool_args_json = args;
    m->refs[m->n] = json_incref(msg);
    m->args[m->n] = args;
    m->n++;
    return 0;
}

int msgvec_push_from(msgvec *m, const msgvec *src, size_t i)
{
    if (i >= src->n || grow(m) != 0) return -1;
    char *args = NULL;
    if (src->args[i]) {
        args = util_strdup(src->args[i]);
        if (!args) return -1;
    }
    m->v[m->n] = src->v[i];
    m->v[m->n].tool_args_json = args;
    m->refs[m->n] = json_incref(src->refs[i]);
    m->args[m->n] = args;
    m->n++;
    return 0;
}

int msgvec_push_array(msgvec *m, json_t *arr, size_t *err_index, const char **err)
{
    *err = NULL;
    *err_index = 0;
    if (!json_is_array(arr)) {
        *err = "must be an array of messages";
        return -1;
    }
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (msgvec_push_json(m, v, err) != 0) {
            *err_index = i;
            return -1;
        }
    }
    return 0;
}

json_t *json_string_lossy(const char *s, size_t n)
{
    if (!s) return json_string("");
    json_t *j = json_stringn(s, n);
    if (j) return j;
    /* Replace every byte that does not start a valid UTF-8 sequence. */
    buf b;
    buf_init(&b);
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned c = p[i];
        size_t len = 0;
        unsigned cp = 0;
        if (c < 0x80) len = 1, cp = c;
        else if (c >= 0xc2 && c <= 0xdf) len = 2, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) len = 3, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) len = 4, cp = c & 0x07;
        int ok = len > 0 && i + len <= n;
        for (size_t k = 1; ok && k < len; k++) {
            if ((p[i + k] & 0xc0) != 0x80) ok = 0;
            else cp = (cp << 6) | (p[i + k] & 0x3f);
        }
        if (ok && ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
                   (len == 4 && (cp < 0x10000 || cp > 0x10ffff))))
            ok = 0;
        if (ok) {
            buf_append(&b, s + i, len);
            i += len;
        } else {
            buf_append(&b, "\xef\xbf\xbd", 3);
            i++;
        }
    }
    j = buf_failed(&b) ? NULL : json_stringn(b.p ? b.p : "", b.len);
    buf_free(&b);
    return j;
}

json_t *msgs_to_json(const clarity_message *v, size_t n)
{
    json_t *arr = json_array();
    if (!arr) return NULL;
    for (size_t i = 0; i < n; i++) {
        const clarity_message *c = &v[i];
        json_t *o = json_object();
        if (!o || json_array_append_new(arr, o) != 0) {
            json_decref(arr);
            return NULL;
        }
        json_object_set_new(o, "role", json_string_lossy(c->role, c->role ? strlen(c->role) : 0));
        json_object_set_new(o, "text", json_string_lossy(c->text, c->text ? c->text_len : 0));
        if (c->tool_name)
            json_object_set_new(o, "tool_name", json_string_lossy(c->tool_name, strlen(c->tool_name)));
        if (c->tool_args_json) {
            json_t *a = json_loads(c->tool_args_json, JSON_DECODE_ANY, NULL);
            json_object_set_new(o, "tool_args",
                                a ? a : json_string_lossy(c->tool_args_json, strlen(c->tool_args_json)));
        }
    }
    return arr;
}

json_t *result_json(const clarity_result *r)
{
    if (!r || !r->data) return NULL;
    return json_loadb(r->data, r->len, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
}

json_t *rpc_error_object(const loader *L, int rc, const clarity_result *r)
{
    json_t *d = result_json(r);
    if (json_is_object(d) && json_is_integer(json_object_get(d, "code")) &&
        json_is_string(json_object_get(d, "message")))
        return d;
    json_decref(d);
    const char *msg = loader_errtext(L, rc, r);
    json_t *e = json_object();
    if (!e) return NULL;
    json_object_set_new(e, "code", json_integer(rc == CLARITY_DECLINED ? -32601 : -32000));
    json_object_set_new(e, "message", json_string_lossy(msg, strlen(msg)));
    return e;
}

char *json_compact(const json_t *v)
{
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

json_t *jsonrpc_response(json_t *id, json_t *result, json_t *error)
{
    json_t *r = json_object();
    if (!r) {
        json_decref(result);
        json_decref(error);
        return NULL;
    }
    json_object_set_new(r, "jsonrpc", json_string("2.0"));
    json_object_set(r, "id", id ? id : json_null());
    if (error) {
        json_object_set_new(r, "error", error);
        json_decref(result);
    } else {
        json_object_set_new(r, "result", result ? result : json_null());
    }
    return r;
}

int jsonrpc_emit(json_t *resp)
{
    char *s = json_dumps(resp, JSON_COMPACT);
    if (!s) return -1;
    int rc = fputs(s, stdout) == EOF || fputc('\n', stdout) == EOF || fflush(stdout) != 0 ? -1 : 0;
    free(s);
    return rc;
}
