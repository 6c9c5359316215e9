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
    const r = new TouchpadRecognizer(table.surface, { ...table.config, ...(c.config || {}) });
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
    // Swipes and pinches: begin, the sums of the updates' centroid motion,
    // the last scale and angle, end.
    const gestures = [];
    for (const e of events) {
      if (e.type === "gestureBegin") {
        gestures.push({ kind: e.kind, fingers: e.fingers, t: e.atUs, endT: null, dxMm: 0, dyMm: 0, scale: 1, angle: 0 });
      } else if (e.type === "gestureUpdate" || e.type === "gestureEnd") {
        const g = gestures[gestures.length - 1];
        assert.ok(g && g.endT === null, `${e.type} outside a gesture`);
        if (e.type === "gestureEnd") g.endT = e.atUs;
        else { g.dxMm += e.dx; g.dyMm += e.dy; g.scale = e.scale; g.angle = e.angle; }
      }
    }
    const want = c.expect.gestures || [];
    assert.equal(gestures.length, want.length, `gestures: ${JSON.stringify(gestures)}`);
    gestures.forEach((g, k) => {
      const w = want[k];
      assert.deepEqual([g.kind, g.fingers, g.t, g.endT], [w.kind, w.fingers, w.t, w.endT ?? null], `gesture ${k}`);
      for (const f of ["dxMm", "dyMm", "scale", "angle"]) assert.ok(Math.abs(g[f] - w[f]) <= 1e-6, `gesture ${k} ${f}: ${g[f]} != ${w[f]}`);
    });
  });
}
