func coreBenches() -> [BenchCase] { [] }
