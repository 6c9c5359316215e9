// What people type and compare (docs/protocol.md, "Identity" and "Pairing
// code"): Crockford base32, the pairing code and the PSK it stands for,
// and the fingerprint of a public key.

import { blake2b } from "./blake2b.js";
import { concat, utf8, wipe } from "./bytes.js";

// Crockford's base32 (https://www.crockford.com/base32.html): no I, L, O, U.
const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
export const PAIRING_CODE_BYTES = 15;
const PSK_LABEL = utf8("remolo pairing psk v1");
const FINGERPRINT_LABEL = utf8("remolo fingerprint v1");

/** Crockford base32, most significant bit first, the last symbol zero-padded. */
export function crockfordEncode(bytes) {
  let out = "", acc = 0, bits = 0;
  for (const b of bytes) {
    acc = (acc << 8) | b;
    bits += 8;
    while (bits >= 5) {
      bits -= 5;
      out += ALPHABET[(acc >>> bits) & 31];
    }
    acc &= (1 << bits) - 1;
  }
  if (bits > 0) out += ALPHABET[(acc << (5 - bits)) & 31];
  return out;
}

/** Symbols in groups joined by "-" (four for codes and fingerprints). */
export function grouped(s, size = 4) {
  return s.match(new RegExp(`.{1,${size}}`, "g"))?.join("-") ?? "";
}

// Decoding reads O as 0 and I/L as 1, any case, so a code read off a
// screen still works.
function symbolValue(c) {
  const u = c.toUpperCase();
  if (u === "O") return 0;
  if (u === "I" || u === "L") return 1;
  const v = ALPHABET.indexOf(u);
  return v < 0 ? null : v;
}

/**
 * The 15 bytes of a typed pairing code. Ignores case, "-" and spaces;
 * exactly 24 symbols (120 bits, no padding) are required.
 */
export function decodePairingCode(typed) {
  const symbols = [...String(typed)].filter((c) => c !== "-" && c !== " ");
  const wanted = Math.ceil((PAIRING_CODE_BYTES * 8) / 5);
  if (symbols.length !== wanted) {
    throw new PairingCodeError(`a pairing code has ${wanted} symbols (like 7KQ2-M9XD-...), this one has ${symbols.length}; ` +
      "type it again as the receiver shows it");
  }
  const out = new Uint8Array(PAIRING_CODE_BYTES);
  let acc = 0, bits = 0, n = 0;
  for (const c of symbols) {
    const v = symbolValue(c);
    if (v === null) {
      throw new PairingCodeError(`"${c}" is not in a pairing code (digits and letters except U); type it again as the receiver shows it`);
    }
    acc = (acc << 5) | v;
    bits += 5;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = (acc >>> bits) & 0xff;
    }
    acc &= (1 << bits) - 1;
  }
  return out;
}

/** A pairing code's display form: 24 symbols in six groups of four. */
export function displayPairingCode(codeBytes) {
  return grouped(crockfordEncode(codeBytes));
}

/** The Noise PSK: BLAKE2b-256("remolo pairing psk v1" || 15 code bytes). */
export function pairingPsk(codeBytes) {
  if (!(codeBytes instanceof Uint8Array) || codeBytes.length !== PAIRING_CODE_BYTES) {
    throw new TypeError(`a pairing code is ${PAIRING_CODE_BYTES} bytes; decode the typed text with decodePairingCode`);
  }
  const input = concat(PSK_LABEL, codeBytes);
  const psk = blake2b(input, { outLength: 32 });
  wipe(input);
  return psk;
}

/**
 * A public key's fingerprint for people to compare:
 * BLAKE2b-160("remolo fingerprint v1" || key), Crockford base32 in groups of four.
 */
export function fingerprint(publicKey) {
  if (!(publicKey instanceof Uint8Array) || publicKey.length !== 32) {
    throw new TypeError("a fingerprint is of a 32-byte X25519 public key");
  }
  return grouped(crockfordEncode(blake2b([FINGERPRINT_LABEL, publicKey], { outLength: 20 })));
}

/** A pairing code that cannot be decoded; the message says what to type. */
export class PairingCodeError extends Error {
  constructor(message) {
    super(message);
    this.name = "PairingCodeError";
  }
}
