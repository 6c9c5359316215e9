// TEMPORARY (replaced by the keymap branch)
public struct KeyStroke: Equatable, Sendable { public var code: UInt16; public var down: Bool
  public init(code: UInt16, down: Bool) { self.code = code; self.down = down } }
public struct KeymapName: Equatable, Sendable { public var layout: String; public var variant: String }
public final class Keymap: @unchecked Sendable { public init() {}
  public func strokes(for text: String) -> (strokes: [KeyStroke], untypable: Int) { ([], 0) }
}
import RemoloSession
extension ReceiveLoop { var hasKeyboard: Bool { true }; func pushKeys(_ id: SessionID, _ s: [KeyStroke], senderTimeUs: UInt64) -> Bool { true } }
public enum KeyboardDevice { public static func hasKey(_ c: UInt16) -> Bool { c > 0 && c < 0x2ff } }
extension KeymapName: CustomStringConvertible { public var description: String { layout }
  public init(parsing s: String) throws { layout = s; variant = "" }
  public static func systemDefault(file: String = "/etc/default/keyboard") -> (name: KeymapName, source: String) { (KeymapName(layout: "us", variant: ""), "x") } }
extension Keymap { public convenience init(_ n: KeymapName) throws { self.init() } }
