// The pairing URL as a QR code in the terminal (libqrencode), drawn with
// Unicode half blocks so one character cell holds two modules.
#include "remolo_web.h"

#include <qrencode.h>
#include <stdlib.h>
#include <string.h>

char *remolo_web_qr(const char *text) {
    // Level M: the URL is short, and a phone camera on a screen's glare
    // benefits from the margin.
    QRcode *q = QRcode_encodeString(text, 0, QR_ECLEVEL_M, QR_MODE_8, 1);
    if (!q) return NULL;
    const int quiet = 4, w = q->width, size = w + 2 * quiet;
    // Each cell is at most 3 bytes of UTF-8; one newline per row pair.
    size_t cap = (size_t)((size + 1) / 2) * ((size_t)size * 3 + 1) + 1;
    char *out = malloc(cap), *p = out;
    if (!out) { QRcode_free(q); return NULL; }
    // A dark module is bit 0 of its byte. Light modules are drawn as the
    // terminal's foreground (blocks), dark ones as its background, which is
    // right on the usual dark terminal; phone scanners read either way.
#define DARK(x, y) ((x) >= quiet && (y) >= quiet && (x) < quiet + w && (y) < quiet + w && \
                    (q->data[((y) - quiet) * w + (x) - quiet] & 1))
    for (int y = 0; y < size; y += 2) {
        for (int x = 0; x < size; x++) {
            int top = !DARK(x, y), bottom = y + 1 < size ? !DARK(x, y + 1) : 0;
            const char *s = top && bottom ? "\xe2\x96\x88" : top ? "\xe2\x96\x80" : bottom ? "\xe2\x96\x84" : " ";
            size_t l = strlen(s);
            memcpy(p, s, l);
            p += l;
        }
        *p++ = '\n';
    }
    *p = 0;
#undef DARK
    QRcode_free(q);
    return out;
}
