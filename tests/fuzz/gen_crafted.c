/* gen_crafted OUTDIR - the crafted traces of the hardening tests, written
 * from the test encoder (too big or too regular to commit):
 *   strings.zst  1.1 M distinct 1000-byte strings in ~2.5 MB: a memory bomb
 *                for the definition tables (report once took 2 GB on it);
 *   chain.zst    a 1 M-deep stack chain: dump once took half an hour. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt_event.h"
#include "vt_testenc.h"

static int save(const char *dir, const char *name, vt_tenc *e)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    size_t n;
    const uint8_t *d = vt_tenc_data(e, &n);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(d, 1, n, f) != n || fclose(f)) {
        perror(path);
        return 1;
    }
    printf("%s: %zu bytes\n", path, n);
    return 0;
}

static vt_tenc *start(void)
{
    vt_tenc *e = vt_tenc_new(1);
    vt_tenc_header(e, VT_FORMAT_MAGIC, VT_FORMAT_VERSION);
    vt_tenc_sync(e, 0, 1000, 500);
    return e;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: gen_crafted OUTDIR\n");
        return 2;
    }
    int rc = 0;
    vt_tenc *e = start();
    char s[1001];
    memset(s, 'x', 1000);
    s[1000] = 0;
    for (uint32_t id = 1; id <= 1100000; id++) {
        snprintf(s, 11, "%010u", id);
        s[10] = 'x';
        vt_tenc_string(e, id, s);
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    rc |= save(argv[1], "strings.zst", e);
    vt_tenc_free(e);

    e = start();
    Vramtrace__Frame f = VRAMTRACE__FRAME__INIT;
    f.id = 1;
    f.kind = VRAMTRACE__FRAME_KIND__FRAME_NATIVE;
    f.ip = 0x1000;
    vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_FRAME, &f);
    uint32_t one[] = {1};
    for (uint32_t id = 1; id <= 1000000; id++) {
        Vramtrace__Stack st = VRAMTRACE__STACK__INIT;
        st.id = id;
        st.parent = id - 1;
        st.n_frame = 1;
        st.frame = one;
        vt_tenc_add(e, 0, VRAMTRACE__RECORD__BODY_STACK, &st);
    }
    vt_tenc_end(e, 0);
    vt_tenc_end_frame(e);
    rc |= save(argv[1], "chain.zst", e);
    vt_tenc_free(e);
    return rc;
}
