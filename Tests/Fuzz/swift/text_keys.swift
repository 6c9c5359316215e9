// libFuzzer harness for typed text: the bytes of a text message, as a
// sender may send them, through the receiver's UTF-8 check and the keymap
// (us, then de), and the strokes read back through the same layout.
//
// Properties: any input at all is handled; valid text gives strokes in which
// every release follows its press and nothing stays held; every typable
// character reads back, in order, and untypable ones are counted, never
// typed as something else.

private let maps = [try! Keymap(KeymapName(layout: "us")), try! Keymap(KeymapName(layout: "de"))]

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzTextKeys(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count <= 256, let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    for map in maps {
        let (strokes, untypable) = map.strokes(for: text)
        var held = Set<UInt16>()
        for s in strokes {
            if s.down {
                precondition(held.insert(s.code).inserted, "\(s) pressed twice in \(strokes)")
            } else {
                precondition(held.remove(s.code) != nil, "\(s) released unpressed in \(strokes)")
            }
        }
        precondition(held.isEmpty, "keys left held: \(held)")
        let typed = map.text(typedBy: strokes)
        // "\r\n" and "\r" are Enter, read back as "\n" (by scalars: a
        // "\r" followed by a combining mark is still a "\r").
        var want = String.UnicodeScalarView()
        var prevCR = false
        for u in text.unicodeScalars {
            if u == "\n" && prevCR { prevCR = false; continue }
            prevCR = u == "\r"
            want.append(u == "\r" ? "\n" : u)
        }
        precondition(typed.unicodeScalars.count + untypable == want.count,
                     "\(typed.debugDescription) + \(untypable) untypable for \(String(want).debugDescription)")
        // What was typed is the text with the untypable characters left out.
        var it = typed.unicodeScalars.makeIterator()
        var next = it.next()
        for u in want where u == next { next = it.next() }
        precondition(next == nil, "\(typed.debugDescription) is not \(String(want).debugDescription) less untypable characters")
    }
    return 0
}
