import Testing

// Replaced as the LabTests suite lands.
@Test func labTestsBuild() { #expect(Bool(true)) }
