// The known answers of KnownAnswerTests.swift, reproduced by the page's
// modules: fingerprints, pairing codes and PSKs, TAI64N, the datagram key,
// and whole sender handshakes (IK session, XXpsk3 pairing) byte for byte
// with every derived key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fingerprint, decodePairingCode, displayPairingCode, pairingPsk, PairingCodeError } from "../../Sources/RemoloWeb/page/pairing.js";
import { tai64n, SenderHandshake, MessageType, HandshakeMessageReader, encodeHandshakeMessage, DATAGRAM_KEY_LABEL } from "../../Sources/RemoloWeb/page/handshake.js";
import { DatagramSealer, openDatagram, motion } from "../../Sources/RemoloWeb/page/datagram.js";
import { toHex, fromHex, utf8 } from "../../Sources/RemoloWeb/page/bytes.js";
import { vectors, pair, payloads, kp, initStatic, initEphemeral, respStatic } from "./support/vectors.mjs";

test("fingerprint: BLAKE2b-160(\"remolo fingerprint v1\" || key), Crockford base32 in fours", () => {
  const cases = [
    ["000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", "PN71-8X67-NEWK-J5QX-261B-QBR9-Y0D7-4CSA"],
    ["0000000000000000000000000000000000000000000000000000000000000000", "TJD6-MTT7-7J3V-T8E8-QQ5Q-569S-M3YP-12GX"],
    ["e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1", "TRJ7-GJ0F-9R8Q-GT53-X002-6K0X-W9CY-SK3S"],
  ];
  for (const [key, fp] of cases) assert.equal(fingerprint(fromHex(key)), fp, key);
});

test("fingerprint of an identity from its stored secret (the cacophony initiator)", async () => {
  const id = await kp(initStatic);
  assert.equal(toHex(id.publicKey), "6bc3822a2aa7f4e6981d6538692b3cdf3e6df9eea6ed269eb41d93c22757b75a");
  assert.equal(fingerprint(id.publicKey), "6M64-JKQ1-QSKQ-KQB0-58HT-0GEE-774Z-E4XE");
});

test("pairing code display and PSK: BLAKE2b-256(\"remolo pairing psk v1\" || 15 code bytes)", () => {
  const cases = [
    [new Uint8Array(15), "0000-0000-0000-0000-0000-0000", "249102bbc61388d522b203eb5565b8c4377143d39b64a2384f2d28f1f85ca5af"],
    [Uint8Array.from({ length: 15 }, (_, i) => i + 1), "0410-6105-0R3G-G28A-1C60-T3GF", "df7b3ea05e63cce8f229b7e5c2c9353a51e02041cf7711ce52391725afcf02f4"],
    [new Uint8Array(15).fill(0xff), "ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ-ZZZZ", "1484a7008c53d4b3a3dc9bd59d7ab8f5699aad7235bd0e190e735aff3f0c608e"],
  ];
  for (const [code, display, psk] of cases) {
    assert.equal(displayPairingCode(code), display);
    assert.deepEqual(decodePairingCode(display), code);
    assert.equal(toHex(pairingPsk(decodePairingCode(display))), psk, display);
  }
});

test("typed codes: case, spaces and look-alikes are forgiven; wrong lengths and symbols say what to do", () => {
  const code = Uint8Array.from({ length: 15 }, (_, i) => i + 1);
  assert.deepEqual(decodePairingCode("o41o 61o5 or3g g28a ic6o t3gf"), code);
  assert.throws(() => decodePairingCode("0410-6105-0R3G-G28A-1C60-T3G"), PairingCodeError);
  assert.throws(() => decodePairingCode("0410-6105-0R3G-G28A-1C60-T3GFF"), /24 symbols/);
  assert.throws(() => decodePairingCode("U410-6105-0R3G-G28A-1C60-T3GF"), /"U" is not in a pairing code/);
});

test("TAI64N labels: u64 BE (0x400000000000000a + Unix seconds) || u32 BE nanoseconds", () => {
  assert.equal(toHex(tai64n(0)), "400000000000000a00000000");
  assert.equal(toHex(tai64n(1.5)), "400000000000000b1dcd6500");
  assert.equal(toHex(tai64n(1_700_000_000.25)), "400000006553f10a0ee6b280");
  assert.equal(toHex(tai64n(-5)), "400000000000000a00000000"); // before 1970: clamped to the epoch
});

test("datagram key: output 1 of HKDF(ck, \"remolo datagram key v1\", 2), from the cacophony transcripts' final ck", async () => {
  const cases = [
    [vectors.IK, "e2fb0fa51ce9901668a0320953f2f0dd3484f8edc74980de22811cafbe3811110ba6452338ff352d4d66137a6599850d8a6bfd194670cab5ce9a861bc91136b9",
      "a200e6c86b86fbdbc232dc314934728f7e866fc93f9a7438bfad15c40fd81fd6"],
    [vectors.XXpsk3, "e5020c18594b172c0de824a801e44ba12b7ceb7e56c70b70d1b5c46c3e45c6d1be0a920ecc24f97c6ffe93c3754e2f9abbafa6df60e946235e6d8de058bb2f23",
      "e65e2848d4148badf9f37755a60573a0edbb3ab6a36c743597342053d78b1786"],
  ];
  for (const [v, ck, key] of cases) {
    const [i, r] = await pair(v);
    for (let m = 0; m < v.pattern.messages.length; m++) {
      const [w, rd] = m % 2 === 0 ? [i, r] : [r, i];
      await rd.readMessage(await w.writeMessage(payloads[m]));
    }
    assert.equal(toHex(i.symmetric.ck), ck);
    assert.equal(toHex(i.symmetric.deriveExtraKey(DATAGRAM_KEY_LABEL)), key);
    assert.equal(toHex(r.symmetric.deriveExtraKey(DATAGRAM_KEY_LABEL)), key);
  }
});

// Sender static/ephemeral = cacophony initiator keys, receiver = cacophony
// responder keys, prologue "Remolo handshake v1", sender clock 1.5 s,
// session id "remolo-A", pairing code of 15 zero bytes.
const transcripts = [
  {
    name: "IK session", pairing: false, messages: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd3367f752754e594c600bd28404803a77ab7b23782208ede4fcbde67e977ce607b83980fbc6b56e9479c953a85d",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f144808843d3018c397413fca110e5d219acdef6f8337ead977ab83129cb",
    ],
    datagramKey: "a200e6c86b86fbdbc232dc314934728f7e866fc93f9a7438bfad15c40fd81fd6",
    k1: "e5a7ef420e26421734c82df62522251fa2f56a6626d64039756ffec438b2883f",
    k2: "065bc21e75d5ac1c0d227dcd158cc9e1979fc30efeb558622535b4b84eb6c80a",
    handshakeHash: "737ea4997a45ba70ff292b7fa352fbd3de15b08d6537e27a3d1e1ea635e8e4f38265abf9cf5d6e69ca460988b6b2e4ceeac374feeb5999f1b5607fc7763d7234",
  },
  {
    name: "XXpsk3 pairing", pairing: true, messages: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944be76eda322491c8f83a6311ef552c41a",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381a78489d56c9e2ac962826f25684980b25244dbfd505b7d903a94d4f4fd8400a00a9e6cc392b79053bcafde5900aafee81ba314fb0cc4e4172a280e4d8a75a4b7c534eae63e858da8",
      "291dfeff6eff386e29adb0bdbd5a1ae9e09de4449c8695d109adcb63e80e4895a2c24dda1f94d812cebb4d624f8b8286c5b4cbd55ed398b4e415b328f51f7cba1da5a9eec57136a56449bd6615",
    ],
    datagramKey: "91dd1960d94159699fe3d8537da84f56bc49fbfc3862f0643e28ce89bf153039",
    k1: "71dad7872e815cf97e919c6cb57e3b16d8127857898538459a564440283cfb1e",
    k2: "7e12dcc6a02d79d11431f1e8dc5a27e6c100cbaba4d7d652dd07525d3260bd94",
    handshakeHash: "19a1a944cea522294b8382109c2096aa59bd2b1aea1ef2583f5eb4797614a5c5e55aa8cfe262efc15063a3fde62bb604c6fb4fa0b9168ee6686e7777b0541af1",
  },
];

for (const t of transcripts) {
  test(`whole sender handshake, ${t.name}: wire bytes and every key as KnownAnswerTests.swift`, async () => {
    const receiver = await kp(respStatic);
    const common = { identity: await kp(initStatic), clock: () => 1.5, ephemeral: await kp(initEphemeral) };
    const s = t.pairing
      ? SenderHandshake.pairing({ ...common, psk: pairingPsk(new Uint8Array(15)) })
      : SenderHandshake.session({ ...common, receiverPublicKey: receiver.publicKey });
    const m1 = await s.start();
    const m1Type = t.pairing ? MessageType.pairInit : MessageType.sessionInit;
    assert.equal(toHex(m1), toHex(encodeHandshakeMessage(m1Type, fromHex(t.messages[0]))), "message 1, framed");
    assert.equal(m1.length, t.pairing ? 51 : 112); // u16 L, type, 48 or 109 bytes
    // The receiver's reply as it arrives: framed, in two chunks.
    const reader = new HandshakeMessageReader();
    const framed = encodeHandshakeMessage(t.pairing ? MessageType.pairResponse : MessageType.sessionResponse, fromHex(t.messages[1]));
    assert.equal(reader.feed(framed.subarray(0, 5)), null);
    const m3 = await s.receive(reader.feed(framed.subarray(5)));
    if (t.pairing) {
      assert.equal(toHex(m3), toHex(encodeHandshakeMessage(MessageType.pairFinish, fromHex(t.messages[2]))), "message 3, framed");
    } else {
      assert.equal(m3, null);
    }
    const r = s.result;
    assert.equal(toHex(r.sessionId), toHex(utf8("remolo-A")));
    assert.equal(toHex(r.peer), toHex(receiver.publicKey));
    assert.equal(toHex(r.datagramKey), t.datagramKey);
    assert.equal(toHex(r.senderToReceiver), t.k1);
    assert.equal(toHex(r.receiverToSender), t.k2);
    assert.equal(toHex(r.handshakeHash), t.handshakeHash);
    assert.equal(r.isPairing, t.pairing);
    // The datagram layer takes the result's key and session id as they are.
    const d = new DatagramSealer(r.datagramKey, r.sessionId).seal(motion(785, -1280), 1_000_000);
    assert.deepEqual(openDatagram(fromHex(t.datagramKey), d), {
      sessionId: utf8("remolo-A"), counter: 0n, kind: 1, a: 785, b: -1280, txMicros: 1_000_000n,
    });
  });
}
