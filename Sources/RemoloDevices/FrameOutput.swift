/// Where the receive loop's frames go when no uinput device takes them: a
/// pipe whose reader turns the same evdev frames into a desktop's own calls
/// (XTest, the RemoteDesktop portal; RemoloDesktop.OutputAdapter) on a
/// thread of its own. The receiver knows an output only through this, so it
/// never links a desktop's libraries.
public protocol FrameOutput: AnyObject, Sendable {
    /// The pipe's write end: the loop writes its frames here, one write()
    /// per frame, and never blocks on it.
    var writeFD: Int32 { get }
    /// Called once the loop has stopped and written its last releases:
    /// delivers what is left in the pipe and lets go of every key and
    /// button the output holds.
    func finish()
}
