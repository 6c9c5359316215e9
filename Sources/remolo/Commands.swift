// The command table: each command registers here with its own file.
let commands: [String: @Sendable ([String]) -> Void] = ["simulate": simulateCommand, "relay": relayCommand,
                                                         "identity": identityCommand, "pair": pairCommand,
                                                         "receive": receiveCommand, "send": sendCommand]
