// The wire benchmarks; filled in as that part lands.
func wireBenches() -> [BenchCase] { [] }
