// TEMPORARY (replaced by the keys-core branch)
import RemoloSession
extension ReceiveLoop { var hasKeyboard: Bool { true }; func pushKeys(_ id: SessionID, _ s: [KeyStroke], senderTimeUs: UInt64) -> Bool { true } }
public enum KeyboardDevice { public static func hasKey(_ c: UInt16) -> Bool { c > 0 && c < 0x2ff } }
