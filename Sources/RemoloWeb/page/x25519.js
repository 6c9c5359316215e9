// X25519 (RFC 7748) through WebCrypto, the only Diffie-Hellman Noise needs.
//
// A key pair here is { privateKey: CryptoKey, publicKey: Uint8Array(32) }.
// Noise only ever calls deriveBits on a private key and reads the raw
// public bytes, so the page's static key can be generated non-extractable
// and kept as a CryptoKey in IndexedDB: its secret never reaches script.

const ALGORITHM = { name: "X25519" };
const subtle = globalThis.crypto?.subtle;

// RFC 7748 section 4.1: the base point has u = 9.
const BASE_POINT = new Uint8Array(32);
BASE_POINT[0] = 9;

// PKCS#8 for an X25519 private key (RFC 8410 section 7): a fixed 16-byte
// prefix, then the 32 raw scalar bytes.
const PKCS8_PREFIX = Uint8Array.from([
  0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x6e, 0x04, 0x22, 0x04, 0x20,
]);

function requireSubtle() {
  if (!subtle) {
    throw new Error("WebCrypto is unavailable: open the page over https:// or from localhost " +
      "(crypto.subtle exists only in secure contexts)");
  }
}

function checkRaw(name, bytes) {
  if (!(bytes instanceof Uint8Array) || bytes.length !== 32) {
    throw new TypeError(`${name} must be a Uint8Array of 32 bytes`);
  }
}

async function unsupported(promise) {
  try {
    return await promise;
  } catch (e) {
    if (e?.name === "NotSupportedError") {
      throw new Error("this browser's WebCrypto has no X25519; use Chrome 133+, Firefox 130+ or Safari 17+");
    }
    throw e;
  }
}

/**
 * A fresh key pair. Non-extractable by default: the static identity key and
 * every ephemeral key only need deriveBits.
 */
export async function generateKeyPair({ extractable = false } = {}) {
  requireSubtle();
  const pair = await unsupported(subtle.generateKey(ALGORITHM, extractable, ["deriveBits"]));
  const publicKey = new Uint8Array(await subtle.exportKey("raw", pair.publicKey));
  return { privateKey: pair.privateKey, publicKey };
}

/**
 * A key pair from a 32-byte raw private scalar (test vectors, and a key
 * kept elsewhere as bytes). The public key is X25519(k, 9) (RFC 7748
 * section 6.1), computed with deriveBits so the private key can stay
 * non-extractable.
 */
export async function importPrivateKey(raw, { extractable = false } = {}) {
  requireSubtle();
  checkRaw("an X25519 private key", raw);
  const pkcs8 = new Uint8Array(PKCS8_PREFIX.length + 32);
  pkcs8.set(PKCS8_PREFIX);
  pkcs8.set(raw, PKCS8_PREFIX.length);
  try {
    const privateKey = await unsupported(subtle.importKey("pkcs8", pkcs8, ALGORITHM, extractable, ["deriveBits"]));
    return { privateKey, publicKey: await dh(privateKey, BASE_POINT) };
  } finally {
    pkcs8.fill(0);
  }
}

/** A WebCrypto public key from its 32 raw bytes. */
export async function importPublicKey(raw) {
  requireSubtle();
  checkRaw("an X25519 public key", raw);
  return unsupported(subtle.importKey("raw", raw, ALGORITHM, true, []));
}

/**
 * DH(private key, peer's raw public key): the 32-byte shared secret.
 * An all-zero result (a low-order peer point) is refused, as docs/protocol.md's
 * Primitives table requires and Noise revision 34 section 12.1 allows;
 * WebCrypto implementations either throw or return zeros for it, and both
 * end up as this one error.
 */
export async function dh(privateKey, peerPublic) {
  const peer = await importPublicKey(peerPublic);
  let shared;
  try {
    shared = new Uint8Array(await subtle.deriveBits({ name: "X25519", public: peer }, privateKey, 256));
  } catch (e) {
    throw new X25519Error("the peer's public key is a low-order point (X25519 gave all zeros, or WebCrypto refused it)", { cause: e });
  }
  let acc = 0;
  for (const b of shared) acc |= b;
  if (acc === 0) throw new X25519Error("the peer's public key is a low-order point (X25519 gave all zeros)");
  return shared;
}

/** A refused Diffie-Hellman: the handshake must stop. */
export class X25519Error extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = "X25519Error";
  }
}
