import Remolo

print("remolo \(Remolo.version)")
