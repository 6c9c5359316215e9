// The page's files as the bridge serves them: every one has a content type
// in WebBridge.swift (the bridge serves only those), the web app manifest
// says what a Home Screen app needs, its icons are the sizes it claims,
// and index.html links them, with no inline script or style (the bridge's
// Content-Security-Policy is default-src 'self').
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";

const page = new URL("../../Sources/RemoloWeb/page/", import.meta.url);
const read = (name) => readFileSync(new URL(name, page));
const text = (name) => read(name).toString("utf8");

/** WebBridge.contentTypes, read from its source. */
function contentTypes() {
  const src = readFileSync(new URL("../../Sources/RemoloWeb/WebBridge.swift", import.meta.url), "utf8");
  const table = /static let contentTypes = \[([^\]]*)\]/.exec(src)[1];
  return Object.fromEntries([...table.matchAll(/"([\w]+)": "([^"]+)"/g)].map((m) => [m[1], m[2]]));
}

/** Width and height of a PNG, from its IHDR chunk. */
function pngSize(bytes) {
  assert.deepEqual([...bytes.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a], "a PNG signature");
  assert.equal(bytes.subarray(12, 16).toString("latin1"), "IHDR");
  return [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
}

test("1: every page file has a content type the bridge serves it with", () => {
  const types = contentTypes();
  const files = readdirSync(page).filter((f) => f !== "README.md");
  for (const f of files) assert.ok(types[f.split(".").pop()], `${f}: no content type in WebBridge.contentTypes (it would not be served)`);
  assert.equal(types.webmanifest, "application/manifest+json");
  assert.equal(types.png, "image/png");
  assert.equal(types.svg, "image/svg+xml");
  for (const f of ["manifest.webmanifest", "icon.svg", "icon-180.png", "icon-192.png", "icon-512.png"]) assert.ok(files.includes(f), f);
});

test("2: the web app manifest: a standalone app from the stored keys, the page's colours", () => {
  const m = JSON.parse(text("manifest.webmanifest"));
  assert.equal(m.name, "Remolo trackpad");
  assert.equal(m.short_name, "Remolo");
  assert.equal(m.display, "standalone");
  assert.deepEqual(m.display_override, ["fullscreen", "standalone"]);
  assert.equal(m.orientation, "any");
  // Never the pairing fragment: a Home Screen app starts from the stored keys.
  assert.equal(m.start_url, "./");
  assert.equal(m.scope, "./");
  const background = /html, body \{[^}]*background: (#[0-9a-f]{6})/.exec(text("style.css"))[1];
  const theme = /<meta name="theme-color" content="(#[0-9a-f]{6})">/.exec(text("index.html"))[1];
  assert.equal(m.background_color, background, "background_color is style.css's");
  assert.equal(m.theme_color, theme, "theme_color is index.html's theme-color");
});

test("3: the manifest's icons exist and are the sizes they claim; the PNGs are maskable", () => {
  const m = JSON.parse(text("manifest.webmanifest"));
  const types = contentTypes();
  assert.ok(m.icons.length >= 3);
  for (const icon of m.icons) {
    assert.equal(types[icon.src.split(".").pop()], icon.type, `${icon.src}: its type is the one it is served with`);
    const bytes = read(icon.src);
    if (icon.type === "image/png") {
      const [w, h] = pngSize(bytes);
      assert.equal(icon.sizes, `${w}x${h}`, icon.src);
      assert.equal(icon.purpose, "any maskable", icon.src);
    } else {
      assert.equal(icon.sizes, "any");
      assert.match(bytes.toString("utf8"), /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    }
    assert.ok(bytes.length < 16 * 1024, `${icon.src}: ${bytes.length} bytes, kept small`);
  }
  assert.deepEqual(m.icons.filter((i) => i.type === "image/png").map((i) => i.sizes), ["192x192", "512x512"]);
  assert.deepEqual(pngSize(read("icon-180.png")), [180, 180], "the apple-touch-icon is 180x180");
});

test("4: index.html links the manifest and icon and has the Home Screen app tags", () => {
  const html = text("index.html");
  for (const tag of [
    '<link rel="manifest" href="manifest.webmanifest">',
    '<link rel="apple-touch-icon" href="icon-180.png">',
    '<meta name="apple-mobile-web-app-capable" content="yes">',
    '<meta name="mobile-web-app-capable" content="yes">',
    '<meta name="apple-mobile-web-app-status-bar-style" content="black-translucent">',
    '<meta name="apple-mobile-web-app-title" content="Remolo">',
  ]) assert.ok(html.includes(tag), tag);
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, "no inline script");
  assert.doesNotMatch(html, /<style|\bstyle=/, "no inline style");
  assert.doesNotMatch(html, /\bon[a-z]+=/, "no inline handlers");
});
