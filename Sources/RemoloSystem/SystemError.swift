// One error type for every system call, in the style of swift-system's
// `Errno`: the errno value and what was being done, and one helper that
// makes a call, retries it on EINTR and throws on failure.

internal import Glibc

/// A failed system call: which operation, and the errno it returned.
public struct SystemError: Error, Equatable, Sendable, CustomStringConvertible {
    public let errno: Int32
    public let operation: String

    public init(_ operation: String, errno: Int32) {
        self.operation = operation
        self.errno = errno
    }

    /// The calling thread's current errno.
    public static func current(_ operation: String) -> SystemError { SystemError(operation, errno: Glibc.errno) }

    public var message: String { String(cString: strerror(errno)) }
    public var description: String { "\(operation): \(message)" }
}

/// Runs `call` until it does not fail with EINTR; throws its errno if it
/// returns -1. For calls that return a count or a descriptor.
@discardableResult
public func syscall<T: FixedWidthInteger>(_ operation: @autoclosure () -> String, _ call: () -> T) throws(SystemError) -> T {
    while true {
        let r = call()
        if r != -1 { return r }
        let e = Glibc.errno
        if e == EINTR { continue }
        throw SystemError(operation(), errno: e)
    }
}

/// Writes all of `bytes` to a blocking descriptor, across short writes and
/// EINTR.
public func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, operation: String = "write") throws(SystemError) {
    var off = 0
    while off < bytes.count {
        let n = try syscall(operation) { write(fd, bytes.baseAddress! + off, bytes.count - off) }
        if n == 0 { throw SystemError(operation, errno: EIO) }
        off += n
    }
}
