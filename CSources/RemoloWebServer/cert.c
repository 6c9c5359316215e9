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
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key) return remolo_cert_fail(err, err_len, "cannot make a P-256 key%s", NULL);
    X509 *x = X509_new();
    int rc = -1;
    if (remolo_cert_serial(x) != 0) goto out;
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600);            // phones with a slow clock
    X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600); // a pinned exception, not a CA's
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"Remolo receiver", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Remolo (self-signed)", -1, -1, 0);
    X509_set_issuer_name(x, name);
    char san[2048];
    remolo_cert_host_names(san, sizeof san);
    if (remolo_cert_add_ext(x, x, NID_basic_constraints, "critical,CA:FALSE") ||
        remolo_cert_add_ext(x, x, NID_key_usage, "critical,digitalSignature") ||
        remolo_cert_add_ext(x, x, NID_ext_key_usage, "serverAuth") || remolo_cert_add_ext(x, x, NID_subject_alt_name, san) ||
        remolo_cert_add_ext(x, x, NID_subject_key_identifier, "hash"))
        goto out;
    if (X509_sign(x, key, EVP_sha256()) == 0) goto out;
    rc = remolo_cert_write(key, key_path, x, cert_path, err, err_len);
    goto done;
out:
    remolo_cert_fail(err, err_len, "cannot make the web certificate%s", NULL);
done:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
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
