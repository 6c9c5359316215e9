// What the page keeps on the phone. IndexedDB holds the static key pair as
// CryptoKeys (structured clone keeps a non-extractable key
// non-extractable: the secret never reaches script) and the receiver's
// public key once a pairing was confirmed. Settings are plain
// localStorage.
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

/** This phone's identity: made once, non-extractable, kept. */
export async function identity() {
  const kept = await get("identity");
  if (kept?.privateKey && kept.publicKey instanceof Uint8Array) return kept;
  const fresh = await generateKeyPair();
  await put("identity", fresh);
  return fresh;
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
