//! After start, the console unmaps the pages of its own binary that only
//! starting it touched.
//!
//! Starting runs code that never runs again (flags, migrations, the router
//! and the OpenAPI document, the shipped templates and environments), spread
//! over most of the binary's 40 MB of code. The kernel maps file pages
//! around each fault, and with large page-cache folios (read-ahead, or the
//! file just written by the linker) a fault maps a whole folio: a fresh
//! console had 23–29 MB of its binary resident, RSS it would keep while
//! idle. The pages are clean copies of the file: dropping the mapping loses
//! nothing, they stay in the page cache, and code that runs again maps its
//! pages back with a minor fault. Only mappings that cannot hold a private
//! copy of a page (not writable, no anonymous pages) are dropped: never the
//! data the loader relocated.

use std::ffi::{c_int, c_void};

unsafe extern "C" {
    fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
}

/// `MADV_DONTNEED` on Linux.
const MADV_DONTNEED: c_int = 4;

/// A mapping of the binary that holds only clean file pages.
#[derive(Debug, PartialEq, Eq)]
struct Clean {
    start: usize,
    end: usize,
}

/// The binary's read-only mappings without anonymous pages, from
/// `/proc/self/smaps` text, where `exe` is the binary's path.
fn clean_mappings(smaps: &str, exe: &str) -> Vec<Clean> {
    let mut out = Vec::new();
    let mut current: Option<(Clean, bool)> = None;
    for line in smaps.lines() {
        let mut fields = line.split_whitespace();
        let first = fields.next().unwrap_or_default();
        if let Some((start, end)) = first.split_once('-').filter(|_| !first.ends_with(':')) {
            // A mapping's header: `start-end perms offset dev inode path`.
            let (Ok(start), Ok(end)) = (
                usize::from_str_radix(start, 16),
                usize::from_str_radix(end, 16),
            ) else {
                current = None;
                continue;
            };
            let perms = fields.next().unwrap_or_default();
            let path = fields.nth(3).unwrap_or_default();
            current = (path == exe && perms.starts_with('r') && !perms.contains('w'))
                .then_some((Clean { start, end }, false));
        } else if first == "Anonymous:" {
            if let Some((_, dirty)) = current.as_mut() {
                *dirty = fields.next() != Some("0");
            }
        } else if first == "VmFlags:" {
            // The last line of a mapping's block.
            if let Some((clean, false)) = current.take() {
                out.push(clean);
            }
        }
    }
    out
}

/// Unmaps the clean pages of the binary; returns how many bytes of mappings
/// it asked the kernel to drop (0 where `/proc` cannot be read).
pub fn drop_startup_pages() -> usize {
    let (Ok(exe), Ok(smaps)) = (
        std::fs::read_link("/proc/self/exe"),
        std::fs::read_to_string("/proc/self/smaps"),
    ) else {
        return 0;
    };
    let mut dropped = 0;
    for m in clean_mappings(&smaps, &exe.to_string_lossy()) {
        // SAFETY: the range is a whole mapping of the binary that is not
        // writable and holds no anonymous (private, changed) page, so every
        // page in it is the file's content; MADV_DONTNEED only drops the
        // page table entries, and the next access maps the file's page again.
        if unsafe { madvise(m.start as *mut c_void, m.end - m.start, MADV_DONTNEED) } == 0 {
            dropped += m.end - m.start;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMAPS: &str = "\
5600-5700 r--p 00000000 fe:00 42 /opt/paddlecloud
Rss:                 100 kB
Anonymous:             0 kB
VmFlags: rd mr mw me
5700-5900 r-xp 00001000 fe:00 42 /opt/paddlecloud
Anonymous:             0 kB
VmFlags: rd ex mr mw me
5900-5a00 r--p 00003000 fe:00 42 /opt/paddlecloud
Anonymous:             8 kB
VmFlags: rd mr mw me ac
5a00-5b00 rw-p 00004000 fe:00 42 /opt/paddlecloud
Anonymous:             0 kB
VmFlags: rd wr mr mw me ac
7f00-7f10 r-xp 00000000 fe:00 7 /usr/lib/libc.so.6
Anonymous:             0 kB
VmFlags: rd ex mr mw me
";

    #[test]
    fn only_the_binarys_read_only_mappings_without_private_pages_are_dropped() {
        assert_eq!(
            clean_mappings(SMAPS, "/opt/paddlecloud"),
            [
                Clean {
                    start: 0x5600,
                    end: 0x5700
                },
                Clean {
                    start: 0x5700,
                    end: 0x5900
                }
            ]
        );
    }

    #[test]
    fn dropping_the_pages_of_the_running_binary_keeps_it_running() {
        // The test binary's own code: it goes on running after the drop,
        // and a second drop finds the same mappings to drop.
        let dropped = drop_startup_pages();
        assert!(dropped > 0, "nothing dropped");
        assert_eq!(drop_startup_pages(), dropped);
    }
}
