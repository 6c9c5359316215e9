// The session benchmarks; filled in as that part lands.
func sessionBenches() -> [BenchCase] { [] }
