// The hand-over between the drain and a backend that may block: the loop
// writes each tick's frame with one non-blocking write() into a pipe sized
// for REMOLO_OUTPUT_STALL_MS of full frames (remolo_limits.h); this thread
// reads whatever is there, sums it into batches (FrameDecoder) and calls the
// backend. A backend that stalls fills the pipe, not the tick: past the
// pipe's size the loop's write fails with EAGAIN (counted as a write error,
// the frame's motion lost, its buttons restored by ptrdev on the next write).

internal import Glibc
internal import RemoloCore
import RemoloDevices
internal import RemoloPlayoutCore
import Foundation
import Synchronization

/// An output adapter's counters.
public struct OutputAdapterStats: Sendable, Equatable {
    /// The backend in use now ("x11", or "uinput" after a fall-back).
    public var backend: String
    /// Bytes and evdev records read from the pipe, frames among them.
    public var bytes: UInt64
    public var records: UInt64
    public var frames: UInt64
    /// Batches applied, and those the backend refused (`.failed`).
    public var batches: UInt64
    public var failedBatches: UInt64
    /// Batches dropped after the backend was lost with no fall-back.
    public var droppedBatches: UInt64
    /// Times the backend was replaced by the fall-back.
    public var fallbacks: UInt64
    /// The pipe's capacity in bytes.
    public var pipeBytes: Int
    /// Why the adapter stopped delivering, if it did.
    public var stopped: String?
}

/// Runs a backend on a thread of its own, fed by the receive loop through a
/// pipe: `ReceiverOutput.adapter(_:)`. The backend is made on that thread
/// and used only there (an Xlib Display stays on one thread).
public final class OutputAdapter: FrameOutput, @unchecked Sendable {
    // @unchecked Sendable: the fds are immutable; the backend lives only on
    // the adapter's thread; the counters are behind a Mutex.
    /// The pipe's write end, non-blocking: where the loop writes its frames.
    /// Open as long as the adapter lives.
    public let writeFD: Int32
    private let readFD: Int32
    private let wakeFD: Int32
    private let wakeWrite: Int32
    private let state: Mutex<OutputAdapterStats>
    private let finished = DispatchSemaphore(value: 0)
    private let finishing = Mutex(false)
    private let threadDone = Mutex(false)

    /// fcntl(2) F_SETPIPE_SZ / F_GETPIPE_SZ (F_LINUX_SPECIFIC_BASE + 7, + 8;
    /// Linux 2.6.35), which Glibc's Swift module does not export.
    static let setPipeSize: Int32 = 1031
    static let getPipeSize: Int32 = 1032

    /// How long `finish` waits for a backend that is stuck in a call.
    public static let finishTimeout = 2.0

    /// Makes the pipe and the thread, and the backend on that thread.
    /// - Parameters:
    ///   - make: creates the backend (on the adapter's thread); its error is
    ///     thrown from here.
    ///   - fallback: creates the replacement when the backend is lost
    ///     (`.disconnected`); nil, or a failure of its own, stops delivery
    ///     and calls `onStop`.
    ///   - onEvent: one line for the log when the backend changes.
    ///   - onStop: once, with a sentence saying why nothing is delivered any
    ///     more and what to do.
    public init(make: @escaping @Sendable () throws(OutputBackendError) -> any OutputBackend,
                fallback: (@Sendable () throws(OutputBackendError) -> any OutputBackend)? = nil,
                onEvent: @escaping @Sendable (String) -> Void = { _ in },
                onStop: @escaping @Sendable (String) -> Void = { _ in }) throws(OutputBackendError) {
        var p: [Int32] = [-1, -1], w: [Int32] = [-1, -1]
        guard pipe(&p) == 0 else {
            throw OutputBackendError(.failed, "cannot make the output pipe: \(String(cString: strerror(errno)))")
        }
        guard pipe(&w) == 0 else {
            close(p[0]); close(p[1])
            throw OutputBackendError(.failed, "cannot make the output adapter's wake pipe: \(String(cString: strerror(errno)))")
        }
        for fd in p + w {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        // A larger pipe than the default 64 KiB when allowed; the default
        // still holds REMOLO_OUTPUT_STALL_MS of full frames (96 x 528 bytes),
        // so a refusal (fs.pipe-user-pages-soft exhausted) is not fatal.
        _ = fcntl(p[1], Self.setPipeSize, Int32(REMOLO_OUTPUT_PIPE_BYTES))
        let size = Int(fcntl(p[1], Self.getPipeSize))
        wakeWrite = w[1]
        let wake = w[0]
        readFD = p[0]
        writeFD = p[1]
        wakeFD = wake
        state = Mutex(OutputAdapterStats(backend: "", bytes: 0, records: 0, frames: 0, batches: 0, failedBatches: 0,
                                         droppedBatches: 0, fallbacks: 0, pipeBytes: size, stopped: nil))
        let ready = DispatchSemaphore(value: 0)
        let startError = Mutex<OutputBackendError?>(nil)
        let t = Thread { [self] in
            let backend: any OutputBackend
            do {
                backend = try make()
            } catch {
                startError.withLock { $0 = error as? OutputBackendError ?? OutputBackendError(.failed, "\(error)") }
                ready.signal()
                threadDone.withLock { $0 = true }
                finished.signal()
                return
            }
            state.withLock { $0.backend = backend.name }
            ready.signal()
            run(backend, fallback: fallback, onEvent: onEvent, onStop: onStop)
            threadDone.withLock { $0 = true }
            finished.signal()
        }
        t.name = "remolo-output"
        t.start()
        ready.wait()
        if let e = startError.withLock({ $0 }) {
            // deinit runs for an init that throws once every property is
            // set, and closes the fds: closing them here too would close,
            // the second time, numbers other threads may have been given
            // meanwhile (their sockets, their pipes).
            throw e
        }
    }

    deinit {
        finish()
        // A backend stuck past the timeout still holds the read end: leave
        // the fds to the process rather than close them under it.
        if threadDone.withLock({ $0 }) {
            close(readFD)
            close(wakeFD)
        }
        close(wakeWrite)
        close(writeFD)
    }

    public var stats: OutputAdapterStats { state.withLock { $0 } }

    /// Delivers what is still in the pipe, releases every key and button the
    /// backend holds, and ends the thread (waiting at most `finishTimeout`
    /// for a backend stuck in a call). Call after the loop has stopped.
    /// Idempotent.
    public func finish() {
        let first = finishing.withLock { f -> Bool in defer { f = true }; return !f }
        guard first else { return }
        var one: UInt8 = 1
        _ = write(wakeWrite, &one, 1)
        if finished.wait(timeout: .now() + Self.finishTimeout) == .timedOut {
            let name = stats.backend
            FileHandle.standardError.write(Data(("remolo: the \(name) output did not finish within "
                + "\(Self.finishTimeout) s (its peer is stuck); leaving it\n").utf8))
        }
    }

    // ---- the adapter's thread ----------------------------------------------

    private func run(_ first: any OutputBackend,
                     fallback: (@Sendable () throws(OutputBackendError) -> any OutputBackend)?,
                     onEvent: @Sendable (String) -> Void, onStop: @Sendable (String) -> Void) {
        var backend: (any OutputBackend)? = first
        var decoder = FrameDecoder()
        var batches: [OutputBatch] = []
        batches.reserveCapacity(64)
        // Large enough to take a full pipe in a few reads.
        var buf = [UInt8](repeating: 0, count: 65536)
        var fds = [pollfd(fd: readFD, events: Int16(POLLIN), revents: 0),
                   pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        var stopping = false
        while !stopping {
            fds[0].revents = 0
            fds[1].revents = 0
            if poll(&fds, 2, -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            stopping = fds[1].revents != 0
            // Everything there now, then one delivery: a backend that was
            // stalled gets the sum of what it missed, not a replay in time.
            var got: UInt64 = 0
            while true {
                let n = buf.withUnsafeMutableBytes { read(readFD, $0.baseAddress, $0.count) }
                if n > 0 {
                    got += UInt64(n)
                    buf.withUnsafeBytes { decoder.feed(UnsafeRawBufferPointer(rebasing: $0.prefix(n)), into: &batches) }
                    continue
                }
                if n < 0 && errno == EINTR { continue }
                // 0: every write end closed (cannot happen while we hold it).
                if n == 0 { stopping = true }
                break
            }
            decoder.flush(into: &batches)
            let (records, frames) = (decoder.records, decoder.frames)
            state.withLock { s in
                s.bytes += got
                s.records = records
                s.frames = frames
            }
            for b in batches {
                guard let be = backend else {
                    state.withLock { $0.droppedBatches += 1 }
                    continue
                }
                do throws(OutputBackendError) {
                    try be.apply(b)
                    state.withLock { $0.batches += 1 }
                } catch {
                    if error.kind == .failed {
                        state.withLock { $0.failedBatches += 1 }
                        continue
                    }
                    // Lost: what it had pressed went with it, but say so to
                    // it anyway. The failed batch is not replayed: part of it
                    // may have reached the peer, and a doubled motion is worse
                    // than a lost one.
                    be.releaseAll()
                    backend = replace(be, after: error, fallback: fallback, onEvent: onEvent, onStop: onStop)
                }
            }
            batches.removeAll(keepingCapacity: true)
        }
        backend?.releaseAll()
    }

    /// The fall-back backend after `lost` went away, or nil (stopped).
    private func replace(_ lost: any OutputBackend, after error: OutputBackendError,
                         fallback: (@Sendable () throws(OutputBackendError) -> any OutputBackend)?,
                         onEvent: @Sendable (String) -> Void, onStop: @Sendable (String) -> Void) -> (any OutputBackend)? {
        let why = "the \(lost.name) output was lost: \(error.message)"
        if let fallback {
            do throws(OutputBackendError) {
                let next = try fallback()
                state.withLock { s in
                    s.backend = next.name
                    s.fallbacks += 1
                }
                onEvent("\(why); continuing on \(next.name) (a button held at that moment is released)")
                return next
            } catch {
                let message = "\(why), and the fall-back failed too: \(error.message)"
                state.withLock { $0.stopped = message }
                onStop(message)
                return nil
            }
        }
        let message = "\(why); no fall-back was allowed, so the pointer stops here. Restart the receiver "
            + "(`remolo receive --output \(lost.name)` once the peer is back, or `--output uinput`)"
        state.withLock { $0.stopped = message }
        onStop(message)
        return nil
    }
}
