// What the self-signed certificate (cert.c) and the local certificate
// authority (ca.c) share: error text, extensions, serial numbers, the
// host's names, and files written so that a key is never readable by
// others, not even for a moment.
#ifndef REMOLO_CERTUTIL_H
#define REMOLO_CERTUTIL_H

#include <stddef.h>
#include <sys/stat.h>

#include <openssl/evp.h>
#include <openssl/x509.h>

/// err = fmt (with path for %s) and OpenSSL's or errno's reason; returns -1.
int remolo_cert_fail(char *err, size_t len, const char *fmt, const char *path);

/// Adds an extension written in OpenSSL's config syntax; issuer is the
/// signing certificate (x itself when self-signed). 0, or -1.
int remolo_cert_add_ext(X509 *x, X509 *issuer, int nid, const char *value);

/// A random positive 127-bit serial number (RFC 5280 section 4.1.2.2). 0, or -1.
int remolo_cert_serial(X509 *x);

/// The names a phone may use to reach this machine today, comma-separated
/// in OpenSSL's syntax: "DNS:localhost,IP:127.0.0.1,IP:::1,DNS:HOST,
/// DNS:HOST.local" and every interface address but link-local ones.
void remolo_cert_host_names(char *out, size_t len);

/// Writes the key to path (mode 0600, through a temporary file and a
/// rename) and the certificate to cert_path (PEM, the same way). 0, or -1 with err.
int remolo_cert_write(EVP_PKEY *key, const char *key_path, X509 *x, const char *cert_path, char *err, size_t err_len);

/// Refuses a key readable by others, saying how to fix it (also naming
/// the certificate file to delete instead). 0, or -1 with err.
int remolo_cert_check_mode(const char *key_path, const struct stat *st, const char *cert_name, char *err, size_t err_len);

/// The certificate's SHA-256 as browsers show it, "AB:CD:..." (95 chars).
void remolo_cert_fingerprint(X509 *x, char fingerprint[96]);

/// Makes a P-256 key and a TLS server certificate for names (OpenSSL's
/// subjectAltName syntax), valid for days, signed by issuer's key or, with
/// issuer NULL, self-signed, and writes both (remolo_cert_write). 0, or -1 with err.
int remolo_cert_leaf(X509 *issuer, EVP_PKEY *issuer_key, const char *organization, const char *names, long days,
                     const char *cert_path, const char *key_path, char *err, size_t err_len);

/// The PEM certificate at path, or NULL.
X509 *remolo_cert_read(const char *path);

#endif
