import Testing
@Test func coreBuilds() { #expect(Bool(true)) }
