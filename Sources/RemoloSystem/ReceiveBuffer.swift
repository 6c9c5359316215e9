// The receiver's UDP receive buffer: sized for a burst, not for the average.
internal import Glibc

/// What a socket's receive buffer was asked to be and what the kernel gave.
public struct ReceiveBuffer: Sendable, Equatable, CustomStringConvertible {
    /// What was asked for (bytes, before the kernel's doubling).
    public var asked: Int
    /// SO_RCVBUF as the kernel reports it: the bytes of skb truesize the
    /// queue may hold (socket(7): the kernel doubles the value set).
    public var bytes: Int
    /// True when SO_RCVBUFFORCE was allowed (root or CAP_NET_ADMIN): no
    /// net.core.rmem_max cap.
    public var forced: Bool
    /// net.core.rmem_max when the ask was capped by it, else nil.
    public var cappedAt: Int?

    /// Bytes of receive-queue accounting one 49-byte datagram takes: its
    /// skb's truesize, measured on Linux 6.x x86_64 (SK_MEMINFO_RMEM_ALLOC
    /// over 100 queued datagrams). Other kernels and architectures differ
    /// by tens of percent, which the sizing below leaves room for.
    public static let datagramTruesize = 832

    /// Datagrams the queue holds.
    public var datagrams: Int { bytes / Self.datagramTruesize }

    public var description: String {
        var s = "UDP receive buffer \(bytes / 1024) KiB (about \(datagrams) datagrams)"
        if forced { s += ", set with SO_RCVBUFFORCE" }
        if let cap = cappedAt {
            s += "; asked for \(asked / 1024) KiB but net.core.rmem_max is \(cap / 1024) KiB: a burst of junk "
                + "can push real datagrams out. Fix: run as root or with CAP_NET_ADMIN, or "
                + "`sysctl -w net.core.rmem_max=\(asked)`"
        }
        return s
    }
}

extension Socket {
    /// What the receiver asks for: 4 MiB, which the kernel doubles to 8 MiB
    /// of accounting, about 10,000 datagrams. A flood on the LAN reaches the
    /// socket at the kernel's pace (about 220,000 datagrams a second on
    /// loopback here); the receive loop takes them in batches of up to
    /// REMOLO_RX_BUFS (256), so what the queue must absorb is the time the
    /// loop's thread is off its core: up to a scheduler period on a busy
    /// machine (sched_latency_ns, 24 ms with 2 or more cores), longer with
    /// a stolen vCPU. 10,000 datagrams are 46 ms of such a flood. The system
    /// default, 208 KiB (about 256 datagrams), is 1.2 ms. The memory is only
    /// used while datagrams wait.
    public static let receiveBufferAsk = 4 << 20

    /// Grows `fd`'s receive buffer toward `bytes`: SO_RCVBUFFORCE where
    /// allowed (root or CAP_NET_ADMIN, no rmem_max cap), else SO_RCVBUF
    /// (capped at net.core.rmem_max). Never fails: a socket keeps the
    /// buffer it had, and the result says what it has.
    public static func growReceiveBuffer(_ fd: Int32, to bytes: Int = receiveBufferAsk) -> ReceiveBuffer {
        var v = Int32(clamping: bytes)
        let len = socklen_t(MemoryLayout<Int32>.size)
        let forced = setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, len) == 0
        if !forced { _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, len) }
        var got: Int32 = 0
        var gl = len
        _ = getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &gl)
        var capped: Int?
        if !forced, let max = rmemMax(), max < bytes { capped = max }
        return ReceiveBuffer(asked: bytes, bytes: Int(got), forced: forced, cappedAt: capped)
    }

    /// Datagrams the kernel dropped at this socket because its queue was
    /// full (SO_MEMINFO's SK_MEMINFO_DROPS, Linux 4.6+), or nil.
    public static func kernelDrops(_ fd: Int32) -> UInt64? {
        // SO_MEMINFO (asm-generic/socket.h) and SK_MEMINFO_VARS, with DROPS
        // the ninth (linux/sock_diag.h).
        let soMeminfo: Int32 = 55, count = 9, drops = 8
        var info = [UInt32](repeating: 0, count: count)
        var len = socklen_t(count * 4)
        let r = info.withUnsafeMutableBytes { getsockopt(fd, SOL_SOCKET, soMeminfo, $0.baseAddress, &len) }
        guard r == 0, Int(len) >= count * 4 else { return nil }
        return UInt64(info[drops])
    }

    static func rmemMax() -> Int? {
        guard let f = fopen("/proc/sys/net/core/rmem_max", "r") else { return nil }
        defer { fclose(f) }
        var buf = [CChar](repeating: 0, count: 32)
        guard fgets(&buf, 32, f) != nil else { return nil }
        let s = buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return Int(s.filter { $0.isNumber })
    }
}
