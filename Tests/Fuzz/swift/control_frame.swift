// libFuzzer harness for the control-frame parser and message decoder.
//
// Input: one selector byte, then the bytes under test.
//   0: a raw byte stream into a frame opener, fed in chunks
//   1: a plaintext into the message decoder
//   2: the rest sealed with the opener's key (so fuzzing reaches the decoder
//      through a valid tag), followed by raw trailing bytes

private let key = SecretBytes(copying: [UInt8](repeating: 0x42, count: 32))

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzControlFrame(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size >= 2 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let body = Array(bytes[2...])
    switch bytes[0] % 3 {
    case 0:
        let opener = ControlFrameOpener(key: key)
        let chunk = max(1, Int(bytes[1]))
        var i = 0
        while i < body.count {
            let end = min(body.count, i + chunk)
            if (try? opener.feed(body[i..<end])) == nil { break }
            _ = opener.bytesWanted
            i = end
        }
    case 1:
        if let m = try? ControlMessage.decode(body) {
            // A decoded message must re-encode to the same bytes.
            precondition(m.encoded() == body, "decode/encode mismatch")
        }
    default:
        let split = min(body.count, Int(bytes[1]))
        let sealer = ControlFrameSealer(key: key)
        let opener = ControlFrameOpener(key: key)
        guard let frame = try? sealer.seal(plaintext: Array(body[0..<split])) else { return 0 }
        _ = try? opener.feed(frame + body[split...])
    }
    return 0
}
