// Known transcripts shared by the Noise and known-answer tests: the
// cacophony key set and vectors exactly as NoiseVectorTests.swift has them.
import { HandshakeState, PATTERNS } from "../../../Sources/RemoloWeb/page/noise.js";
import { importPrivateKey } from "../../../Sources/RemoloWeb/page/x25519.js";
import { fromHex } from "../../../Sources/RemoloWeb/page/bytes.js";

// The cacophony key set (cacophony.txt, shared by all 25519 vectors).
export const initStatic = "e61ef9919cde45dd5f82166404bd08e38bceb5dfdfded0a34c8df7ed542214d1";
export const initEphemeral = "893e28b9dc6ca8d611ab664754b8ceb7bac5117349a4439a6b0569da977c464a";
export const respStatic = "4a3acbfdb163dec651dfa3194dece676d437029c62a408b4c5ea9114246e4893";
export const respEphemeral = "bbdb4cdbd309f1a1f2e1456967fe288cadd6f712d65dc7b7793d5e63da6b375b";
export const prologue = fromHex("4a6f686e2047616c74"); // "John Galt"
export const payloads = ["4c756477696720766f6e204d69736573", "4d757272617920526f746862617264",
  "462e20412e20486179656b", "4361726c204d656e676572",
  "4a65616e2d426170746973746520536179", "457567656e2042f6686d20766f6e2042617765726b"].map(fromHex);

export const vectors = {
  IK: {
    pattern: PATTERNS.IK, psk: undefined,
    ciphertexts: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c7944ba83a447b38c83e327ad936929812f624884847b7831e95e197b2f797088efdd2f88f1db7e1fb0e99c64419097af91cee64e470f4b6fcd9298ce0b56fe20f86e13bf70439c538e3602a7127af71a29cc",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f1448088439f069b267a06b3de3ecb1043bcb098e9af91d9c64748d998c7b47890871571",
      "cd54383060e7a28434cca27fb1cc524cfbabeb18181589df219d07",
      "a856d3bf0246bfc476c655009cd1ed677b8dcc5b349ae8ef2a05f2",
      "49063084b2c51f098337cb8a13739ac848f907e67cfb2cc8a8b60586467aa02fc7",
      "8b9709d23b47e4639df7678d7a21741eba4ef1e9c60383001c7435549c20f9d56f30e935d3",
    ],
    handshakeHash: "1c8fa891cb414fedba6daa7c6f4ae0a6d98e5f9768cc9cecd27e805614943ee9c8a1b27fbfb76dc197255c8aa69f6b4285c423840b8bedf45e652ca64f797d81",
  },
  XXpsk3: {
    pattern: PATTERNS.XXpsk3, psk: Uint8Array.from({ length: 32 }, (_, i) => i),
    ciphertexts: [
      "ca35def5ae56cec33dc2036731ab14896bc4c75dbb07a61f879f8e3afa4c79440aa831d1e3bbd16bd7ffda87e9f7b6eeca2510006499a573ac27af3392ed1b69",
      "95ebc60d2b1fa672c1f46a8aa265ef51bfe38e7ccb39ec5be34069f14480884381a78489d56c9e2ac962826f25684980b25244dbfd505b7d903a94d4f4fd84004a1c7fbe94d686bc4c1f67259364f6f2a41cb40bf5198b9b3975be2cdd49d3e065a554e12c477d82029fabc6555bc1",
      "291dfeff6eff386e29adb0bdbd5a1ae9e09de4449c8695d109adcb63e80e489555792a3e9150eff75d6d45571f824ed23fbb6b147e16261207bb663cde9287589c608bac51a8a2f9b06ca8",
      "f951ee9dc0a4c0c69145096895b8360ab618256f6cd404f34fea95",
      "8f5bf4db08bd9f8b3aee23272468c64592c2eea1ac4d2317855fd07731b9d6b8ec",
      "520439dda571637467d70bc9680b351906afa9e541255bcfca8373aea4e3e213bf81ee0a08",
    ],
    handshakeHash: "c25ca67acae99c52ef9655c813bf6f2e9a68a07b570255363da68882bbd107f80eaf2e6c0565ca97fd7694ce8861c7623352ac61d06f661ab0f50aad87aa480f",
  },
};

export const kp = (hex) => importPrivateKey(fromHex(hex));

export async function pair(v, p = prologue) {
  const rs = await kp(respStatic);
  const i = new HandshakeState({ pattern: v.pattern, initiator: true, prologue: p, staticKey: await kp(initStatic),
    remoteStatic: v.pattern === PATTERNS.IK ? rs.publicKey : undefined, psk: v.psk, ephemeral: await kp(initEphemeral) });
  const r = new HandshakeState({ pattern: v.pattern, initiator: false, prologue: p, staticKey: rs,
    psk: v.psk, ephemeral: await kp(respEphemeral) });
  return [i, r];
}

