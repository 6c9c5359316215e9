// Writing the arrivals trace (format: Trace.swift), row by row, for
// `remolo simulate --write-trace` and `remolo receive --record-arrivals`.

internal import Glibc
import Foundation

public struct TraceWriteError: Error, CustomStringConvertible, Equatable, Sendable {
    public let path: String
    public let errno: Int32
    public let message: String
    public var description: String { message }

    init(path: String, errno e: Int32, creating: Bool) {
        self.path = path
        self.errno = e
        var m = "cannot \(creating ? "create" : "write") the trace file '\(path)': \(String(cString: strerror(e)))"
        switch e {
        case ENOENT: m += ". Fix: create its directory first, or give a path in an existing one."
        case EACCES, EPERM: m += ". Fix: pick a directory you can write to (e.g. the current one or /tmp), or fix its permissions."
        case EISDIR: m += ". Fix: that is a directory; give a file name (e.g. \(path)/arrivals.csv)."
        case EROFS: m += ". Fix: that file system is read-only; pick a path on a writable one."
        case ENOSPC, EDQUOT: m += ". Fix: free some space, or record to another disk."
        default: m += "."
        }
        message = m
    }
}

/// A trace written as it comes: the same comments, header line and rows as
/// `Trace.csv()`, appended one row at a time (for a recording that is still
/// going on), buffered, and flushed by `close()`. Not thread-safe: one
/// writer thread at a time.
public final class TraceWriter {
    public let path: String
    /// Rows appended so far.
    public private(set) var rows = 0
    private var fd: Int32
    private var buffer: [UInt8] = []
    /// Buffered bytes that trigger a write.
    static let flushBytes = 64 << 10

    /// Creates (or truncates) the file and writes the leading comments and
    /// the header line.
    public init(path: String, notes: [String] = [], clock: TraceClock? = nil,
                frameUs: Double? = nil) throws(TraceWriteError) {
        self.path = path
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw TraceWriteError(path: path, errno: errno, creating: true) }
        buffer.reserveCapacity(Self.flushBytes + 256)
        buffer += Trace.headerText(notes: notes, clock: clock, frameUs: frameUs).utf8
        do { try flush() } catch {
            Glibc.close(fd)
            fd = -1
            throw error
        }
    }

    deinit { if fd >= 0 { Glibc.close(fd) } }

    /// One row, as `Trace.row` formats it.
    public func append(_ r: TraceRecord) throws(TraceWriteError) {
        buffer += Trace.row(r).utf8
        buffer.append(UInt8(ascii: "\n"))
        rows += 1
        if buffer.count >= Self.flushBytes { try flush() }
    }

    /// A `#` comment line (allowed anywhere in a trace).
    public func comment(_ text: String) throws(TraceWriteError) {
        buffer += "# \(text)\n".utf8
        if buffer.count >= Self.flushBytes { try flush() }
    }

    /// Writes what is buffered.
    public func flush() throws(TraceWriteError) {
        guard fd >= 0 else { return }
        var off = 0
        while off < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + off, $0.count - off) }
            if n < 0 {
                if errno == EINTR { continue }
                throw TraceWriteError(path: path, errno: errno, creating: false)
            }
            off += n
        }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes and closes the file. Idempotent.
    public func close() throws(TraceWriteError) {
        guard fd >= 0 else { return }
        defer { Glibc.close(fd); fd = -1 }
        try flush()
    }
}
