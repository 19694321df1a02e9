/* Runs a fuzz target over files (a corpus) without libFuzzer, so `make
 * check` can replay the seed corpus with any compiler. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
    int n = 0;
    for (int i = 1; i < argc; i++) {
        FILE *f = fopen(argv[i], "rb");
        if (!f) {
            perror(argv[i]);
            return 1;
        }
        uint8_t *buf = NULL;
        size_t len = 0, cap = 0, got;
        do {
            if (len == cap) {
                cap = cap ? cap * 2 : 4096;
                uint8_t *nb = realloc(buf, cap);
                if (!nb) return 1;
                buf = nb;
            }
            got = fread(buf + len, 1, cap - len, f);
            len += got;
        } while (got > 0);
        fclose(f);
        LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        n++;
    }
    printf("replayed %d inputs\n", n);
    return 0;
}
