// The web port's certificate: self-signed ECDSA P-256, made on first start
// and kept in the config directory beside identity.key. Browsers require
// TLS before a page gets WebCrypto; the certificate only has to stay the
// same so that the exception the user accepts once keeps applying (and so
// that its fingerprint, printed by `remolo receive --web`, can be compared
// in the browser's certificate viewer).
#define _GNU_SOURCE
#include "remolo_web.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

static int fail(char *err, size_t len, const char *fmt, const char *path) {
    char buf[256] = "";
    unsigned long e = ERR_get_error();
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    else if (errno) snprintf(buf, sizeof buf, "%s", strerror(errno));
    char what[512];
    snprintf(what, sizeof what, fmt, path ? path : "");
    snprintf(err, len, "%s%s%s%s", what, buf[0] ? " (" : "", buf, buf[0] ? ")" : "");
    return -1;
}

static int add_ext(X509 *x, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

// The names a phone may use to reach this machine today: localhost, the
// host name (and .local) and every interface address. A self-signed
// certificate draws a warning whatever its names; matching ones keep the
// warning to the one reason that is true (nobody vouches for it).
static void subject_alt_names(char *out, size_t len) {
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    int n = snprintf(out, len, "DNS:localhost,IP:127.0.0.1,IP:::1");
    if (host[0] && strchr(host, ',') == NULL)
        n += snprintf(out + n, len - (size_t)n, ",DNS:%s,DNS:%s.local", host, host);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0) return;
    for (struct ifaddrs *i = ifs; i && (size_t)n + 64 < len; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        char a[INET6_ADDRSTRLEN];
        if (i->ifa_addr->sa_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, a, sizeof a);
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            struct in6_addr *a6 = &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
            if (IN6_IS_ADDR_LINKLOCAL(a6) || IN6_IS_ADDR_LOOPBACK(a6)) continue;
            inet_ntop(AF_INET6, a6, a, sizeof a);
        } else {
            continue;
        }
        if (strcmp(a, "127.0.0.1") == 0) continue;
        n += snprintf(out + n, len - (size_t)n, ",IP:%s", a);
    }
    freeifaddrs(ifs);
}

static int make(const char *cert_path, const char *key_path, char *err, size_t err_len) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key) return fail(err, err_len, "cannot make a P-256 key%s", NULL);
    X509 *x = X509_new();
    int rc = -1;
    char tmp[4096];
    FILE *f = NULL;
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) goto out;
    serial[0] &= 0x7f; // a positive INTEGER (RFC 5280 section 4.1.2.2)
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x));
    BN_free(bn);
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600);            // phones with a slow clock
    X509_gmtime_adj(X509_getm_notAfter(x), 10L * 365 * 24 * 3600); // a pinned exception, not a CA's
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"Remolo receiver", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Remolo (self-signed)", -1, -1, 0);
    X509_set_issuer_name(x, name);
    char san[2048];
    subject_alt_names(san, sizeof san);
    if (add_ext(x, NID_basic_constraints, "critical,CA:FALSE") || add_ext(x, NID_key_usage, "critical,digitalSignature") ||
        add_ext(x, NID_ext_key_usage, "serverAuth") || add_ext(x, NID_subject_alt_name, san) ||
        add_ext(x, NID_subject_key_identifier, "hash"))
        goto out;
    if (X509_sign(x, key, EVP_sha256()) == 0) goto out;

    // The key: written to a new 0600 file, then renamed into place, so no
    // moment exists where it is readable by others or half-written.
    snprintf(tmp, sizeof tmp, "%s.tmp", key_path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || !(f = fdopen(fd, "w"))) { if (fd >= 0) close(fd); fail(err, err_len, "cannot write %s", tmp); goto done; }
    if (PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1 || fflush(f) != 0 || fsync(fileno(f)) != 0) goto out;
    fclose(f);
    f = NULL;
    if (rename(tmp, key_path) != 0) { fail(err, err_len, "cannot write %s", key_path); goto done; }
    snprintf(tmp, sizeof tmp, "%s.tmp", cert_path);
    f = fopen(tmp, "we");
    if (!f) { fail(err, err_len, "cannot write %s", tmp); goto done; }
    if (PEM_write_X509(f, x) != 1 || fflush(f) != 0) goto out;
    fclose(f);
    f = NULL;
    if (rename(tmp, cert_path) != 0) { fail(err, err_len, "cannot write %s", cert_path); goto done; }
    rc = 0;
    goto done;
out:
    fail(err, err_len, "cannot make the web certificate%s", NULL);
done:
    if (f) fclose(f);
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
        if (stat(key_path, &st) != 0) return fail(err, err_len, "cannot read %s", key_path);
    }
    // The same rule as identity.key: a key others can read is refused.
    if (st.st_mode & 077) {
        snprintf(err, err_len, "%s is readable by others (mode %03o); fix: chmod 600 %s (or delete it and "
                 "web-cert.pem to make new ones)", key_path, st.st_mode & 0777, key_path);
        return -1;
    }
    FILE *f = fopen(cert_path, "re");
    if (!f) return fail(err, err_len, "cannot read %s", cert_path);
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    if (!x) return fail(err, err_len, "%s is not a PEM certificate; delete it and web-key.pem to make new ones", cert_path);
    unsigned char md[32];
    unsigned int mdlen = 0;
    X509_digest(x, EVP_sha256(), md, &mdlen);
    X509_free(x);
    for (unsigned i = 0; i < mdlen; i++) sprintf(fingerprint + 3 * i, "%02X%s", md[i], i + 1 < mdlen ? ":" : "");
    return 0;
}
