import Foundation
import RemoloSession
import RemoloSystem
import RemoloPlayout

// remolo identity: this host's long-term key, created on first use.

let identityUsage = """
usage: remolo identity

Prints this host's fingerprint (compare it with what the other end shows),
creating the identity in the config directory if there is none yet
($REMOLO_CONFIG_DIR, else $XDG_CONFIG_HOME/remolo or ~/.config/remolo).
"""

/// The config directory and this host's identity, or a clear error.
func loadIdentity() -> (ConfigDirectory, Identity) {
    let dir = ConfigDirectory.forUser()
    do {
        return (dir, try Identity.loadOrCreate(in: dir))
    } catch {
        fail("cannot load or create the identity: \(error). Fix the directory's permissions "
             + "(mode 0700, key 0600) or set REMOLO_CONFIG_DIR to another directory.")
    }
}

@Sendable func identityCommand(_ args: [String]) {
    var o = Options(args, usage: identityUsage)
    if o.next() != nil { o.unknown() }
    let (dir, id) = loadIdentity()
    say("fingerprint: \(id.fingerprint)")
    say("public key:  \(id.publicKey.hex)")
    say("directory:   \(dir.path)")
}
