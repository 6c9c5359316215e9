// ca.html's script: which download comes first on which phone, and the
// SHA-256 printed as the receiver and openssl print it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { platformOf, colonHex } from "../../Sources/RemoloWeb/page/ca.js";

const cases = [
  // [n, user agent, maxTouchPoints, platform]
  [1, "Mozilla/5.0 (iPhone; CPU iPhone OS 18_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Mobile/15E148 Safari/604.1", 5, "ios"],
  [2, "Mozilla/5.0 (iPhone; CPU iPhone OS 18_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/135.0 Mobile/15E148 Safari/604.1", 5, "ios"],
  [3, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15", 5, "ios"],
  [4, "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.4 Safari/605.1.15", 0, "other"],
  [5, "Mozilla/5.0 (Linux; Android 15; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/135.0 Mobile Safari/537.36", 5, "android"],
  [6, "Mozilla/5.0 (Android 15; Mobile; rv:140.0) Gecko/140.0 Firefox/140.0", 5, "android"],
  [7, "Mozilla/5.0 (X11; Linux x86_64; rv:153.0) Gecko/20100101 Firefox/153.0", 0, "other"],
  [8, "", 0, "other"],
];

for (const [n, ua, touch, want] of cases) {
  test(`${n}: ${want} from ${ua.slice(13, 50) || "no user agent"}`, () => assert.equal(platformOf(ua, touch), want));
}

test("9: colonHex is openssl's -fingerprint form", () => {
  const der = Buffer.from("not a certificate, any bytes");
  const want = createHash("sha256").update(der).digest("hex").toUpperCase().match(/../g).join(":");
  assert.equal(colonHex(createHash("sha256").update(der).digest()), want);
  assert.equal(colonHex(new Uint8Array([0, 10, 255])), "00:0A:FF");
});
