// The shared table of touchpad gesture cases (Tests/Shared/gesture-cases.json,
// the same one the native sender's rules run) against the page's
// TouchpadRecognizer: button changes with their times, motion and scroll
// sums in finger space, and whether momentum starts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { TouchpadRecognizer } from "../../Sources/RemoloWeb/page/touchpad.js";

const root = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const table = JSON.parse(readFileSync(join(root, "Tests", "Shared", "gesture-cases.json"), "utf8"));

for (const c of table.cases) {
  test(`gesture case ${c.id}: ${c.name}`, () => {
    const r = new TouchpadRecognizer(table.surface, table.config);
    const events = [];
    for (const s of c.steps) {
      if ("click" in s) events.push(...r.physicalButton(s.click, s.t));
      else events.push(...r.contact({ slot: s.slot, x: s.x, y: s.y, touching: !s.up, t: s.t }));
    }
    events.push(...r.advance(c.untilUs));
    const buttons = events.filter((e) => e.type === "button").map((e) => ({ button: e.button, down: e.down, t: e.atUs }));
    assert.deepEqual(buttons, c.expect.buttons);
    const sum = (type) => events.filter((e) => e.type === type).reduce((a, e) => [a[0] + e.dx, a[1] + e.dy], [0, 0]);
    const close = (got, want, what) => {
      assert.ok(Math.abs(got[0] - want[0]) <= 1e-6 && Math.abs(got[1] - want[1]) <= 1e-6, `${what} ${got} != ${want}`);
    };
    close(sum("motion"), c.expect.motionMm, "motion (mm)");
    close(sum("scroll"), c.expect.scrollMm, "scroll (mm)");
    assert.equal(events.some((e) => e.type === "glide"), c.expect.glide, "momentum");
  });
}
