// Helpers shared by cert.c (the self-signed certificate) and ca.c (the
// local certificate authority and the certificates it issues).
#define _GNU_SOURCE
#include "certutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

int remolo_cert_fail(char *err, size_t len, const char *fmt, const char *path) {
    char buf[256] = "";
    unsigned long e = ERR_get_error();
    if (e) ERR_error_string_n(e, buf, sizeof buf);
    else if (errno) snprintf(buf, sizeof buf, "%s", strerror(errno));
    char what[512];
    snprintf(what, sizeof what, fmt, path ? path : "");
    snprintf(err, len, "%s%s%s%s", what, buf[0] ? " (" : "", buf, buf[0] ? ")" : "");
    return -1;
}

int remolo_cert_add_ext(X509 *x, X509 *issuer, int nid, const char *value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext) return -1;
    int ok = X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
    return ok == 1 ? 0 : -1;
}

int remolo_cert_serial(X509 *x) {
    unsigned char serial[16];
    if (RAND_bytes(serial, sizeof serial) != 1) return -1;
    serial[0] &= 0x7f; // a positive INTEGER (RFC 5280 section 4.1.2.2)
    BIGNUM *bn = BN_bin2bn(serial, sizeof serial, NULL);
    int ok = bn && BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
    BN_free(bn);
    return ok ? 0 : -1;
}

// The names a phone may use to reach this machine today: localhost, the
// host name (and .local) and every interface address. A self-signed
// certificate draws a warning whatever its names; matching ones keep the
// warning to the one reason that is true (nobody vouches for it).
void remolo_cert_host_names(char *out, size_t len) {
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

int remolo_cert_write(EVP_PKEY *key, const char *key_path, X509 *x, const char *cert_path, char *err, size_t err_len) {
    char tmp[4096];
    FILE *f = NULL;
    // The key: written to a new 0600 file, then renamed into place, so no
    // moment exists where it is readable by others or half-written.
    snprintf(tmp, sizeof tmp, "%s.tmp", key_path);
    unlink(tmp);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || !(f = fdopen(fd, "w"))) {
        if (fd >= 0) close(fd);
        return remolo_cert_fail(err, err_len, "cannot write %s; check the config directory's owner and mode", tmp);
    }
    if (PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) != 1 || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        return remolo_cert_fail(err, err_len, "cannot write %s", tmp);
    }
    fclose(f);
    if (rename(tmp, key_path) != 0) return remolo_cert_fail(err, err_len, "cannot write %s", key_path);
    snprintf(tmp, sizeof tmp, "%s.tmp", cert_path);
    f = fopen(tmp, "we");
    if (!f) return remolo_cert_fail(err, err_len, "cannot write %s; check the config directory's owner and mode", tmp);
    if (PEM_write_X509(f, x) != 1 || fflush(f) != 0) {
        fclose(f);
        return remolo_cert_fail(err, err_len, "cannot write %s", tmp);
    }
    fclose(f);
    if (rename(tmp, cert_path) != 0) return remolo_cert_fail(err, err_len, "cannot write %s", cert_path);
    return 0;
}

int remolo_cert_check_mode(const char *key_path, const struct stat *st, const char *cert_name, char *err, size_t err_len) {
    // The same rule as identity.key: a key others can read is refused.
    if (st->st_mode & 077) {
        snprintf(err, err_len, "%s is readable by others (mode %03o); fix: chmod 600 %s (or delete it and "
                 "%s to make new ones)", key_path, st->st_mode & 0777, key_path, cert_name);
        return -1;
    }
    return 0;
}

void remolo_cert_fingerprint(X509 *x, char fingerprint[96]) {
    unsigned char md[32];
    unsigned int mdlen = 0;
    X509_digest(x, EVP_sha256(), md, &mdlen);
    fingerprint[0] = 0;
    for (unsigned i = 0; i < mdlen; i++) sprintf(fingerprint + 3 * i, "%02X%s", md[i], i + 1 < mdlen ? ":" : "");
}

X509 *remolo_cert_read(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    X509 *x = PEM_read_X509(f, NULL, NULL, NULL);
    fclose(f);
    return x;
}

int remolo_cert_leaf(X509 *issuer, EVP_PKEY *issuer_key, const char *organization, const char *names, long days,
                     const char *cert_path, const char *key_path, char *err, size_t err_len) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key) return remolo_cert_fail(err, err_len, "cannot make a P-256 key%s", NULL);
    X509 *x = X509_new();
    int rc = -1;
    if (!x || remolo_cert_serial(x) != 0) goto out;
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600); // phones with a slow clock
    X509_gmtime_adj(X509_getm_notAfter(x), days * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)"Remolo receiver", -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)organization, -1, -1, 0);
    X509 *signer = issuer ? issuer : x;
    X509_set_issuer_name(x, X509_get_subject_name(signer));
    // Apple's requirements for a trusted TLS server certificate
    // (support.apple.com/en-us/103769), met by both kinds: the names in
    // subjectAltName (never the CN), id-kp-serverAuth, SHA-2; the issued
    // one also at most 825 days (the caller's days).
    if (remolo_cert_add_ext(x, signer, NID_basic_constraints, "critical,CA:FALSE") ||
        remolo_cert_add_ext(x, signer, NID_key_usage, "critical,digitalSignature") ||
        remolo_cert_add_ext(x, signer, NID_ext_key_usage, "serverAuth") ||
        remolo_cert_add_ext(x, signer, NID_subject_alt_name, names) ||
        remolo_cert_add_ext(x, signer, NID_subject_key_identifier, "hash") ||
        (issuer && remolo_cert_add_ext(x, issuer, NID_authority_key_identifier, "keyid:always")))
        goto out;
    if (X509_sign(x, issuer ? issuer_key : key, EVP_sha256()) == 0) goto out;
    rc = remolo_cert_write(key, key_path, x, cert_path, err, err_len);
    goto done;
out:
    remolo_cert_fail(err, err_len, issuer ? "cannot issue the web certificate%s" : "cannot make the web certificate%s", NULL);
done:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}
