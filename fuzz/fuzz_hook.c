/* fuzz_hook: the Claude Code adapter's inputs.  The first byte picks:
 *   < 128  the bytes are a hook event (JSON on stdin of `clarity hook`),
 *          with a transcript path that the rest of the bytes fill;
 *   else   the bytes are a transcript (JSONL) read from offset and flags
 *          taken from the next bytes.
 * Invariants: no crash; a hook never fails (exit status 0). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../adapters/claude-code/claude_code.h"
#include "../adapters/claude-code/transcript.h"
#include "inproc.h"

static char transcript[64];

static void remove_transcript(void) { unlink(transcript); }

static void write_transcript(const uint8_t *p, size_t n)
{
    if (!transcript[0]) { /* one file a process, gone when it exits */
        snprintf(transcript, sizeof transcript, "/tmp/clarity-fuzz-tr-%d.jsonl", (int)getpid());
        atexit(remove_transcript);
    }
    FILE *f = fopen(transcript, "wb");
    if (!f) abort();
    if (n && fwrite(p, 1, n, f) != n) abort();
    fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return 0;
    setenv("CLARITY_STOP_WAIT_MS", "0", 1); /* a Stop would poll for its transcript */
    cli *c = fz_cli();
    if (data[0] < 128) {
        /* event, NUL, transcript: the event's "@T@" names the transcript */
        const uint8_t *nul = memchr(data + 1, 0, size - 1);
        size_t ev_len = nul ? (size_t)(nul - data - 1) : size - 1;
        write_transcript(nul ? nul + 1 : data, nul ? size - (size_t)(nul + 1 - data) : 0);
        char *ev = malloc(ev_len + 1);
        if (!ev) return 0;
        memcpy(ev, data + 1, ev_len);
        ev[ev_len] = '\0';
        char *at = strstr(ev, "@T@");
        char *text = ev;
        char *buf = NULL;
        if (at) {
            size_t n = strlen(ev) + strlen(transcript);
            buf = malloc(n + 1);
            if (!buf) abort();
            snprintf(buf, n + 1, "%.*s%s%s", (int)(at - ev), ev, transcript, at + 3);
            text = buf;
        }
        fz_stdin(text, strlen(text));
        if (cli_hook(c) != EXIT_OK) abort();
        free(buf);
        free(ev);
    } else {
        write_transcript(data + 2, size - 2);
        msgvec mv;
        msgvec_init(&mv);
        long long end = 0;
        size_t last = 0;
        char *err = NULL;
        long long start = (data[1] & 0x3f) * 17;
        transcript_collect(transcript, start, data[1] >> 6, &mv, &end, &last, &err);
        free(err);
        msgvec_free(&mv);
    }
    return 0;
}
