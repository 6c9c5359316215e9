// The web port's certificate: self-signed ECDSA P-256, made on first start
// and kept in the config directory beside identity.key. Browsers require
// TLS before a page gets WebCrypto; the certificate only has to stay the
// same so that the exception the user accepts once keeps applying (and so
// that its fingerprint, printed by `remolo receive --web`, can be compared
// in the browser's certificate viewer). With --ca the certificate is
// issued by the receiver's own authority instead (ca.c).
#define _GNU_SOURCE
#include "remolo_web.h"
#include "certutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/x509v3.h>

static int make(const char *cert_path, const char *key_path, char *err, size_t err_len) {
    char san[2048];
    remolo_cert_host_names(san, sizeof san);
    // Ten years: a pinned exception, not a CA's leaf (no 825-day rule).
    return remolo_cert_leaf(NULL, NULL, "Remolo (self-signed)", san, 10L * 365, cert_path, key_path, err, err_len);
}

int remolo_web_certificate(const char *cert_path, const char *key_path, int *created, char fingerprint[96],
                           char *err, size_t err_len) {
    errno = 0;
    *created = 0;
    struct stat st;
    int have_key = stat(key_path, &st) == 0, have_cert = access(cert_path, F_OK) == 0;
    if (!have_key || !have_cert) {
        if (make(cert_path, key_path, err, err_len) != 0) return -1;
        *created = 1;
        if (stat(key_path, &st) != 0) return remolo_cert_fail(err, err_len, "cannot read %s", key_path);
    }
    if (remolo_cert_check_mode(key_path, &st, "web-cert.pem", err, err_len) != 0) return -1;
    errno = 0;
    X509 *x = remolo_cert_read(cert_path);
    if (!x) return remolo_cert_fail(err, err_len, "cannot read %s as a PEM certificate; delete it and web-key.pem to make new ones", cert_path);
    remolo_cert_fingerprint(x, fingerprint);
    X509_free(x);
    return 0;
}
