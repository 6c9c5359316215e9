import Testing

// Replaced as the WireTests suite lands.
@Test func WireTestsBuilds() { #expect(Bool(true)) }
