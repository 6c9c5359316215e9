// The receiver's own certificate authority (remolo receive --web --ca): a
// root the user installs on the phone once, and the web port's certificate
// issued by it, so that the phone's browser trusts the page without a
// warning and without an exception (iOS may refuse a WebSocket to a
// certificate it holds only an exception for, OSStatus -9807).
//
// The authority is ECDSA P-256, CA:TRUE with pathLenConstraint 0 (it signs
// end certificates only, RFC 5280 section 4.2.1.9), keyCertSign, valid
// about 10 years; its key stays in the config directory, mode 0600, and
// never leaves it. A root on a phone may vouch for any name it is allowed
// to, so it carries name constraints (RFC 5280 section 4.2.1.10): this
// host's names, .local, and the private, loopback and link-local address
// ranges; a phone then refuses anything else it signs.
//
// The certificate it issues is valid 801 days: Apple refuses a TLS server
// certificate valid more than 825 days even from a root the user installed
// (support.apple.com/en-us/103769). It is issued again when the host's
// names change, when the authority changed, or when it has 30 days left.
#define _GNU_SOURCE
#include "remolo_web.h"
#include "certutil.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

enum {
    CA_DAYS = 3652,   // about 10 years: installed once on each phone
    LEAF_DAYS = 800,  // + the day before now: 801 <= 825 (Apple)
    RENEW_DAYS = 30,  // issue again when fewer remain
};

// What the authority may vouch for besides this host's names: loopback,
// the private ranges (RFC 1918, RFC 6598 shared space as used by
// carrier-grade NAT and overlay VPNs, RFC 4193 unique local) and
// link-local, in OpenSSL's address/mask syntax. No public address: one a
// host has today may be someone else's tomorrow, and the authority lasts
// years.
static const char *const private_ranges[] = {
    "127.0.0.0/255.0.0.0",       "10.0.0.0/255.0.0.0",        "172.16.0.0/255.240.0.0",
    "192.168.0.0/255.255.0.0",   "100.64.0.0/255.192.0.0",    "169.254.0.0/255.255.0.0",
    "::1/ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/fe00::", "fe80::/ffc0::",
};

static void host_name(char *out, size_t len) {
    out[0] = 0;
    gethostname(out, len - 1);
    out[len - 1] = 0;
    // A name OpenSSL's config syntax would split is left out of the constraints.
    if (strpbrk(out, ",;: ")) out[0] = 0;
}

static EVP_PKEY *read_key(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return NULL;
    EVP_PKEY *k = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    return k;
}

static int make_ca(const char *cert_path, const char *key_path, char *err, size_t err_len) {
    EVP_PKEY *key = EVP_EC_gen("P-256");
    if (!key) return remolo_cert_fail(err, err_len, "cannot make a P-256 key%s", NULL);
    X509 *x = X509_new();
    int rc = -1;
    char host[256], cn[320], nc[2048];
    host_name(host, sizeof host);
    snprintf(cn, sizeof cn, "Remolo local CA (%s)", host[0] ? host : "this receiver");
    // RFC 5280 section 4.2.1.10: name constraints MUST be critical, so a
    // client that cannot apply them refuses the authority rather than
    // trusting it for every name.
    int n = snprintf(nc, sizeof nc, "critical,permitted;DNS:localhost,permitted;DNS:local");
    if (host[0]) n += snprintf(nc + n, sizeof nc - (size_t)n, ",permitted;DNS:%s", host);
    for (size_t i = 0; i < sizeof private_ranges / sizeof *private_ranges; i++)
        n += snprintf(nc + n, sizeof nc - (size_t)n, ",permitted;IP:%s", private_ranges[i]);
    if (remolo_cert_serial(x) != 0) goto out;
    X509_set_version(x, 2);
    X509_gmtime_adj(X509_getm_notBefore(x), -24 * 3600); // phones with a slow clock
    X509_gmtime_adj(X509_getm_notAfter(x), (long)CA_DAYS * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME *name = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"Remolo", -1, -1, 0);
    X509_set_issuer_name(x, name);
    if (remolo_cert_add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        remolo_cert_add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        remolo_cert_add_ext(x, x, NID_subject_key_identifier, "hash") ||
        remolo_cert_add_ext(x, x, NID_name_constraints, nc))
        goto out;
    if (X509_sign(x, key, EVP_sha256()) == 0) goto out;
    rc = remolo_cert_write(key, key_path, x, cert_path, err, err_len);
    goto done;
out:
    remolo_cert_fail(err, err_len, "cannot make the local certificate authority%s", NULL);
done:
    X509_free(x);
    EVP_PKEY_free(key);
    return rc;
}

// Whether the authority's name constraints allow one name ("DNS:x",
// "IP:x"): asked of OpenSSL with a certificate holding that name alone,
// the very check a verifier makes.
static int permitted(NAME_CONSTRAINTS *nc, const char *name) {
    if (!nc) return 1;
    X509 *t = X509_new();
    int ok = t && remolo_cert_add_ext(t, t, NID_subject_alt_name, name) == 0;
    // X509_check_purpose caches the extensions NAME_CONSTRAINTS_check reads
    // (it says -1 for this unsigned, keyless certificate: not asked here).
    if (ok) X509_check_purpose(t, -1, 0);
    ok = ok && NAME_CONSTRAINTS_check(t, nc) == X509_V_OK;
    X509_free(t);
    ERR_clear_error();
    return ok;
}

// Splits names (remolo_cert_host_names) into those the authority may
// vouch for (kept) and the others (left_out, without their "DNS:"/"IP:").
static int split_names(X509 *ca, const char *names, char *kept, size_t kept_len, char *left_out, size_t left_len) {
    NAME_CONSTRAINTS *nc = X509_get_ext_d2i(ca, NID_name_constraints, NULL, NULL);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", names);
    size_t k = 0, l = 0;
    int count = 0;
    kept[0] = left_out[0] = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (permitted(nc, tok)) {
            k += (size_t)snprintf(kept + k, kept_len - k, "%s%s", k ? "," : "", tok);
            count++;
        } else {
            l += (size_t)snprintf(left_out + l, left_len - l, "%s%s", l ? ", " : "", strchr(tok, ':') + 1);
        }
        if (k >= kept_len || l >= left_len) break;
    }
    NAME_CONSTRAINTS_free(nc);
    return count;
}

// Whether the certificate at cert_path is one this authority issued for
// the key at key_path, for exactly these names, with more than RENEW_DAYS left.
static int current(X509 *ca, const char *cert_path, const char *key_path, const char *names, int count) {
    X509 *x = remolo_cert_read(cert_path);
    if (!x) return 0;
    EVP_PKEY *key = read_key(key_path);
    int ok = key && X509_check_private_key(x, key) == 1 && X509_check_issued(ca, x) == X509_V_OK &&
             X509_verify(x, X509_get0_pubkey(ca)) == 1;
    EVP_PKEY_free(key);
    time_t renew = time(NULL) + (time_t)RENEW_DAYS * 24 * 3600;
    if (ok) ok = X509_cmp_time(X509_get0_notAfter(x), &renew) > 0;
    GENERAL_NAMES *san = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
    if (ok) ok = san && sk_GENERAL_NAME_num(san) == count;
    GENERAL_NAMES_free(san);
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", names);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); ok && tok; tok = strtok_r(NULL, ",", &save)) {
        if (strncmp(tok, "DNS:", 4) == 0)
            ok = X509_check_host(x, tok + 4, 0, X509_CHECK_FLAG_NO_WILDCARDS, NULL) == 1;
        else
            ok = X509_check_ip_asc(x, tok + 3, 0) == 1;
    }
    X509_free(x);
    ERR_clear_error();
    return ok;
}

static int issue(X509 *ca, EVP_PKEY *ca_key, const char *names, const char *cert_path, const char *key_path,
                 char *err, size_t err_len) {
    return remolo_cert_leaf(ca, ca_key, "Remolo", names, LEAF_DAYS, cert_path, key_path, err, err_len);
}

int remolo_web_ca_certificate(const char *ca_cert_path, const char *ca_key_path, const char *cert_path,
                              const char *key_path, struct remolo_web_ca_result *out, char *err, size_t err_len) {
    memset(out, 0, sizeof *out);
    errno = 0;
    struct stat st;
    int have_key = stat(ca_key_path, &st) == 0, have_cert = access(ca_cert_path, F_OK) == 0;
    if (!have_key || !have_cert) {
        if (make_ca(ca_cert_path, ca_key_path, err, err_len) != 0) return -1;
        out->ca_created = 1;
        if (stat(ca_key_path, &st) != 0) return remolo_cert_fail(err, err_len, "cannot read %s", ca_key_path);
    }
    if (remolo_cert_check_mode(ca_key_path, &st, "web-ca.pem", err, err_len))
        return -1;
    errno = 0;
    X509 *ca = remolo_cert_read(ca_cert_path);
    EVP_PKEY *ca_key = ca ? read_key(ca_key_path) : NULL;
    int rc = -1;
    if (!ca || !ca_key || X509_check_private_key(ca, ca_key) != 1) {
        remolo_cert_fail(err, err_len, "%s and its key are not a PEM certificate and the key that signs it; delete both "
                         "to make a new authority (then install it on the phones again)", ca_cert_path);
        goto done;
    }
    unsigned char *der = out->ca_der;
    int der_len = i2d_X509(ca, NULL);
    if (der_len <= 0 || (size_t)der_len > sizeof out->ca_der) {
        remolo_cert_fail(err, err_len, "%s is larger than an authority this receiver makes; delete it and web-ca-key.pem", ca_cert_path);
        goto done;
    }
    out->ca_der_length = (size_t)i2d_X509(ca, &der);
    remolo_cert_fingerprint(ca, out->ca_fingerprint);
    X509_NAME_get_text_by_NID(X509_get_subject_name(ca), NID_commonName, out->ca_name, sizeof out->ca_name);

    char all[2048], names[2048];
    remolo_cert_host_names(all, sizeof all);
    int count = split_names(ca, all, names, sizeof names, out->left_out, sizeof out->left_out);
    if (stat(key_path, &st) != 0 || !current(ca, cert_path, key_path, names, count)) {
        if (issue(ca, ca_key, names, cert_path, key_path, err, err_len) != 0) goto done;
        out->issued = 1;
        if (stat(key_path, &st) != 0) { remolo_cert_fail(err, err_len, "cannot read %s", key_path); goto done; }
    }
    if (remolo_cert_check_mode(key_path, &st, "web-leaf.pem", err, err_len)) goto done;
    X509 *leaf = remolo_cert_read(cert_path);
    if (!leaf) { remolo_cert_fail(err, err_len, "cannot read %s; delete it to issue a new one", cert_path); goto done; }
    remolo_cert_fingerprint(leaf, out->fingerprint);
    X509_free(leaf);
    rc = 0;
done:
    X509_free(ca);
    EVP_PKEY_free(ca_key);
    return rc;
}
