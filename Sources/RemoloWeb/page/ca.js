// The certificate authority's page (ca.html): which of the receiver's two
// downloads fits this phone, and the authority's SHA-256 to compare with
// the one the receiver printed (docs/certificates.md). Served by every
// receiver; only one started with --ca has /ca.crt (404 otherwise).

/**
 * "ios", "android" or "other", for which download comes first. iPadOS
 * reports itself as a Mac (Safari 13+), so a Mac with touch points is an
 * iPad; every iPhone browser is WebKit and installs a profile the same way.
 */
export function platformOf(userAgent = "", maxTouchPoints = 0) {
  if (/iPhone|iPad|iPod/.test(userAgent) || (/Macintosh/.test(userAgent) && maxTouchPoints > 1)) return "ios";
  if (/Android/.test(userAgent)) return "android";
  return "other";
}

/** A digest as the receiver and openssl print it: AB:CD:... */
export function colonHex(bytes) {
  return [...bytes].map((b) => b.toString(16).padStart(2, "0").toUpperCase()).join(":");
}

async function main() {
  const $ = (id) => document.getElementById(id);
  const platform = platformOf(navigator.userAgent, navigator.maxTouchPoints);
  let der;
  try {
    const r = await fetch("ca.crt", { cache: "no-store" });
    if (!r.ok) throw new Error(String(r.status));
    der = new Uint8Array(await r.arrayBuffer());
  } catch {
    $("what").hidden = true;
    $("none").hidden = false;
    return;
  }
  $("fp").textContent = colonHex(new Uint8Array(await crypto.subtle.digest("SHA-256", der)));
  // This phone's steps only; a desktop browser gets both, labelled.
  for (const list of document.querySelectorAll("[data-platform]")) {
    if (platform === "other") list.classList.add("other");
    else list.hidden = list.dataset.platform !== platform;
  }
  $("home").hidden = platform !== "ios";
  $("have").hidden = false;
  document.body.dataset.ready = platform;
}

if (typeof document !== "undefined") main();
