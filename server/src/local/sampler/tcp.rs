//! TCP bytes per socket from the kernel's socket diagnostics
//! (`NETLINK_SOCK_DIAG`), and the sockets a process has open: a replica's
//! network use is the sum over its tree's own sockets.

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::AsRawFd;

/// One TCP socket's byte counters from `struct tcp_info`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct TcpBytes {
    /// `tcpi_bytes_acked`: sent and acknowledged by the peer.
    pub(super) sent: u64,
    /// `tcpi_bytes_received`.
    pub(super) received: u64,
}

/// Adds the inodes of the sockets `pid` has open (`socket:[inode]` links in
/// `/proc/<pid>/fd`) to `out`.
pub(super) fn socket_inodes(pid: i32, out: &mut HashSet<u64>) {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return;
    };
    for entry in dir.flatten() {
        let Ok(target) = std::fs::read_link(entry.path()) else {
            continue;
        };
        let inode = target
            .to_str()
            .and_then(|t| t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok());
        if let Some(inode) = inode {
            out.insert(inode);
        }
    }
}

/// Every TCP socket of the host (IPv4 and IPv6, all states but listening)
/// with its byte counters, by inode, from the kernel's socket diagnostics
/// (`NETLINK_SOCK_DIAG`, `SOCK_DIAG_BY_FAMILY` dumps asking for
/// `INET_DIAG_INFO`, i.e. `struct tcp_info`; see sock_diag(7)). The structs
/// are laid out by hand from `<linux/inet_diag.h>`, `<linux/tcp.h>` and
/// `<linux/netlink.h>`: they are stable kernel ABI.
pub(super) fn tcp_table() -> io::Result<HashMap<u64, TcpBytes>> {
    use nix::sys::socket::{
        recv, sendto, socket, AddressFamily, MsgFlags, NetlinkAddr, SockFlag, SockProtocol,
        SockType,
    };

    const NLM_F_REQUEST: u16 = 0x1;
    const NLM_F_DUMP: u16 = 0x300;
    const NLMSG_ERROR: u16 = 2;
    const NLMSG_DONE: u16 = 3;
    const NLMSG_HDRLEN: usize = 16;
    /// `sizeof(struct inet_diag_req_v2)`.
    const REQ_LEN: usize = 56;
    /// `sizeof(struct inet_diag_msg)`; `idiag_inode` is its last field.
    const MSG_LEN: usize = 72;
    const MSG_INODE: usize = 68;
    /// Every TCP state but `TCP_LISTEN` (10): a listener moves no bytes.
    const STATES: u32 = 0xfff & !(1 << 10);

    let fd = socket(
        AddressFamily::Netlink,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        SockProtocol::NetlinkSockDiag,
    )?;
    let kernel = NetlinkAddr::new(0, 0);
    let mut table = HashMap::new();
    let mut buf = vec![0u8; 64 * 1024];
    // AF_INET and AF_INET6 as Linux numbers them.
    for (seq, family) in [(1u32, 2u8), (2, 10)] {
        let mut req = [0u8; NLMSG_HDRLEN + REQ_LEN];
        req[0..4].copy_from_slice(&((NLMSG_HDRLEN + REQ_LEN) as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&seq.to_ne_bytes());
        // struct inet_diag_req_v2: family, protocol, extensions, pad, states; the
        // socket id (all zero) matches any socket in a dump.
        req[16] = family;
        req[17] = 6; // IPPROTO_TCP
        req[18] = 1 << (INET_DIAG_INFO - 1);
        req[20..24].copy_from_slice(&STATES.to_ne_bytes());
        sendto(fd.as_raw_fd(), &req, &kernel, MsgFlags::empty())?;

        'dump: loop {
            let n = recv(fd.as_raw_fd(), &mut buf, MsgFlags::empty())?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "sock_diag dump ended early",
                ));
            }
            let mut off = 0;
            while off + NLMSG_HDRLEN <= n {
                let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap()) as usize;
                let kind = u16::from_ne_bytes(buf[off + 4..off + 6].try_into().unwrap());
                if len < NLMSG_HDRLEN || off + len > n {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        "malformed netlink message",
                    ));
                }
                let body = &buf[off + NLMSG_HDRLEN..off + len];
                match kind {
                    NLMSG_DONE => break 'dump,
                    NLMSG_ERROR => {
                        let errno = body
                            .get(..4)
                            .map_or(0, |b| i32::from_ne_bytes(b.try_into().unwrap()));
                        if errno != 0 {
                            return Err(io::Error::from_raw_os_error(-errno));
                        }
                    }
                    SOCK_DIAG_BY_FAMILY if body.len() >= MSG_LEN => {
                        let inode =
                            u32::from_ne_bytes(body[MSG_INODE..MSG_INODE + 4].try_into().unwrap());
                        if let Some(bytes) = tcp_info_bytes(&body[MSG_LEN..]) {
                            table.insert(u64::from(inode), bytes);
                        }
                    }
                    _ => {}
                }
                off += align4(len);
            }
        }
    }
    Ok(table)
}

/// `SOCK_DIAG_BY_FAMILY` of `<linux/sock_diag.h>`: the request and answer type.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// The `inet_diag` attribute (and, minus one, the extension bit) of `struct tcp_info`.
const INET_DIAG_INFO: u16 = 2;
/// Offsets of `tcpi_bytes_acked` and `tcpi_bytes_received` in `struct
/// tcp_info` (Linux 4.1+; older kernels send a shorter one, whose sockets are
/// skipped).
const TCPI_BYTES_ACKED: usize = 120;
const TCPI_BYTES_RECEIVED: usize = 128;

/// The byte counters in the `INET_DIAG_INFO` attribute among a sock_diag
/// answer's attributes, if there is one.
fn tcp_info_bytes(mut attrs: &[u8]) -> Option<TcpBytes> {
    while attrs.len() >= 4 {
        let len = u16::from_ne_bytes([attrs[0], attrs[1]]) as usize;
        let kind = u16::from_ne_bytes([attrs[2], attrs[3]]);
        if len < 4 || len > attrs.len() {
            return None;
        }
        let info = &attrs[4..len];
        if kind == INET_DIAG_INFO && info.len() >= TCPI_BYTES_RECEIVED + 8 {
            let u64_at = |at: usize| u64::from_ne_bytes(info[at..at + 8].try_into().unwrap());
            return Some(TcpBytes {
                sent: u64_at(TCPI_BYTES_ACKED),
                received: u64_at(TCPI_BYTES_RECEIVED),
            });
        }
        attrs = &attrs[align4(len).min(attrs.len())..];
    }
    None
}

/// Netlink messages and attributes start on 4-byte boundaries.
fn align4(len: usize) -> usize {
    (len + 3) & !3
}
