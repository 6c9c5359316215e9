// What the page keeps on the phone. IndexedDB holds the static key pair as
// CryptoKeys (structured clone keeps a non-extractable key
// non-extractable: the secret never reaches script) and the receiver's
// public key once a pairing was confirmed. Settings are plain
// localStorage.
//
// An engine that cannot keep an X25519 CryptoKey (WebKitGTK 2.50: its
// serializer refuses the key, and IndexedDB hands back null) gets the
// same secret wrapped instead: WebCrypto encrypts its PKCS#8 under an
// AES-GCM key that is itself a non-extractable CryptoKey (those it keeps),
// and unwraps it at each load as a non-extractable X25519 key. Script
// never sees the secret in the clear, and at rest it is as safe as the
// browser keeps CryptoKeys. What that form gives up: a script running in
// this page's origin could unwrap it as extractable, where the plain form
// only lets such a script use the key while the page is open (the page's
// Content-Security-Policy admits no script but its own).
import { generateKeyPair } from "./x25519.js";

const DB = "remolo";
const STORE = "keys";

function open() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(new Error(`IndexedDB is unavailable (${req.error}); a private window may block it`));
  });
}

function run(mode, fn) {
  return open().then((db) => new Promise((resolve, reject) => {
    const tx = db.transaction(STORE, mode);
    const req = fn(tx.objectStore(STORE));
    tx.oncomplete = () => { db.close(); resolve(req?.result); };
    tx.onerror = () => { db.close(); reject(tx.error); };
  }));
}

const get = (key) => run("readonly", (s) => s.get(key));
const put = (key, value) => run("readwrite", (s) => s.put(value, key));

const X25519 = { name: "X25519" };
const usable = (r) => r?.privateKey instanceof CryptoKey && r.publicKey instanceof Uint8Array;

async function unwrapIdentity(r) {
  const privateKey = await crypto.subtle.unwrapKey("pkcs8", r.wrapped, r.wrappingKey, { name: "AES-GCM", iv: r.iv },
    X25519, false, ["deriveBits"]);
  return { privateKey, publicKey: r.publicKey };
}

async function wrappedIdentity() {
  const wrappingKey = await crypto.subtle.generateKey({ name: "AES-GCM", length: 256 }, false, ["wrapKey", "unwrapKey"]);
  const pair = await generateKeyPair({ extractable: true });
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const wrapped = new Uint8Array(await crypto.subtle.wrapKey("pkcs8", pair.privateKey, wrappingKey, { name: "AES-GCM", iv }));
  return { wrappingKey, iv, wrapped, publicKey: pair.publicKey };
}

/**
 * This phone's identity: made once, non-extractable, kept. The key pair
 * is stored as it is and read back; where the engine loses it, wrapped.
 * `identity.stored` says which: "key" or "wrapped".
 */
export async function identity() {
  const kept = await get("identity");
  if (usable(kept)) return { ...kept, stored: "key" };
  if (kept?.wrappingKey instanceof CryptoKey && kept.wrapped) return { ...(await unwrapIdentity(kept)), stored: "wrapped" };
  const fresh = await generateKeyPair();
  await put("identity", fresh);
  if (usable(await get("identity"))) return { ...fresh, stored: "key" };
  const record = await wrappedIdentity();
  await put("identity", record);
  const back = await get("identity");
  if (!(back?.wrappingKey instanceof CryptoKey)) {
    throw new Error("this browser keeps no key in IndexedDB (a private window?): the phone would have to pair again after every reload");
  }
  return { ...(await unwrapIdentity(back)), stored: "wrapped" };
}

/** The paired receiver's public key (Uint8Array) or undefined. */
export const receiverKey = () => get("receiver");
export const setReceiverKey = (key) => put("receiver", key);

export function loadSettings(defaults) {
  try {
    return { ...defaults, ...JSON.parse(localStorage.getItem("remolo.settings") ?? "{}") };
  } catch {
    return { ...defaults };
  }
}

export function saveSettings(s) {
  localStorage.setItem("remolo.settings", JSON.stringify(s));
}

/** Whether a one-time tip (capabilities.js) was dismissed on this phone. */
export function tipDismissed(id) {
  try { return localStorage.getItem(`remolo.tip.${id}`) === "dismissed"; } catch { return false; }
}

export function dismissTip(id) {
  try { localStorage.setItem(`remolo.tip.${id}`, "dismissed"); } catch { /* storage off: shown again next time */ }
}
