// The restore token's file and the list of desktop backends, without a
// desktop (these run in every `swift test`).
import Foundation
@testable import RemoloPlayout
@testable import RemoloDesktop
import Testing

struct PortalFileTests {
    @Test("the restore token is written 0600 (whatever the umask), replaced atomically, read back trimmed")
    func tokenFile() throws {
        let dir = NSTemporaryDirectory() + "remolo-token-\(getpid())/config"
        defer { try? FileManager.default.removeItem(atPath: (dir as NSString).deletingLastPathComponent) }
        let file = dir + "/" + PortalBackend.tokenFileName
        let old = umask(0o022)
        defer { umask(old) }
        #expect(PortalToken.read(file) == nil)
        try PortalToken.write("first-token", to: file)
        try PortalToken.write("second-token", to: file)
        #expect(PortalToken.read(file) == "second-token")
        var st = stat()
        #expect(stat(file, &st) == 0 && st.st_mode & 0o777 == 0o600)
        #expect(stat(dir, &st) == 0 && st.st_mode & 0o777 == 0o700)
        let left = try FileManager.default.contentsOfDirectory(atPath: dir)
        #expect(left == [PortalBackend.tokenFileName], "no temporary file left: \(left)")
    }

    @Test("the desktop backends that implement RemoteDesktop are read from the *.portal files")
    func backends() throws {
        let dir = NSTemporaryDirectory() + "remolo-portals-\(getpid())"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try "[portal]\nDBusName=org.freedesktop.impl.portal.desktop.gnome\nInterfaces=org.freedesktop.impl.portal.Screenshot;org.freedesktop.impl.portal.RemoteDesktop;\nUseIn=gnome\n"
            .write(toFile: dir + "/gnome.portal", atomically: true, encoding: .utf8)
        try "[portal]\nDBusName=org.freedesktop.impl.portal.desktop.gtk\nInterfaces=org.freedesktop.impl.portal.FileChooser;\n"
            .write(toFile: dir + "/gtk.portal", atomically: true, encoding: .utf8)
        try "not a portal file".write(toFile: dir + "/notes.txt", atomically: true, encoding: .utf8)
        #expect(Portal.remoteDesktopBackends(directory: dir) == ["org.freedesktop.impl.portal.desktop.gnome"])
    }

    @Test("a notch of wheel is the 30 px of finger travel the sender made it from")
    func scrollUnits() {
        #expect(120 * PortalBackend.pixelsPerWheelUnit == 30)
    }
}
