//! pcap capture files of the network's queues, one definition for both
//! backends: per queue (the bottleneck's two directions, each host's access
//! link), one file at its ingress (`in`: each packet as it reaches the
//! queue, dropped ones included) and one at its egress (`out`: each packet as
//! it leaves the link, after serialization and the link's propagation
//! delay, with the ECN field the queue and the path left it), under
//! `<results>/pcap/`, e.g. `pcap/bottleneck.down.in.pcap`,
//! `pcap/access.laptop.up.out.pcap`. Which packet passes which point when
//! is the bottleneck runtime's (`l4slab_bottleneck::QueueEventKind`
//! `Arrive` and `Leave`); a backend only builds the record's bytes.
//!
//! The files are classic pcap (libpcap 2.4, nanosecond timestamps, little
//! endian), link type `RAW` (101: each record is an IPv4 or IPv6 packet),
//! readable by Wireshark, tshark, tcpdump and tcptrace. A record holds the
//! packet's IP and TCP/UDP headers (its `caplen`) and states its full length
//! (`origlen`), as `tcpdump -s` with a headers-only snap length would: the
//! files stay small and the payload, which l4slab does not carry, is not
//! invented. Timestamps are the run's time since its start (simulated time
//! in the simulator, so the same seed gives byte-identical files).
//!
//! Writing streams through a buffer: a capture holds 64 KiB per file
//! however long the run. The first I/O error stops the writing and is
//! reported by [`Captures::finish`], so the hot path returns nothing.
//! A capture may be given a size limit ([`Captures::limit`]): a run with
//! no end (the emulator's shell, `l4slab gateway`) then cannot fill the
//! disk. At the limit the files stay valid and stop growing, as `tcpdump
//! -C` without rotation would; the records left out are counted
//! ([`Captures::skipped`]) and the run's report says so.
//!
//! A real-time caller (the emulator's forwarder) makes its captures
//! [`Captures::spooled`]: the buffered chunks go to a [`spool::Spool`]'s
//! thread, which alone waits for the disk.

pub mod spool;

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use l4slab_core::Dur;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::{DataLink, Endianness, TsResolution};

/// The folder of the capture files, inside a run's results.
pub const DIR: &str = "pcap";

/// The snap length the files declare: a record is never cut by it (each
/// holds its packet's headers only, see the module documentation).
pub const SNAPLEN: u32 = 65_535;

/// Buffer per file.
const BUFFER: usize = 64 << 10;

/// Bytes of a pcap file's header and of a record's header (libpcap's
/// `pcap_file_header`, `pcap_pkthdr` on disk).
const FILE_HEADER: usize = 24;
const RECORD_HEADER: usize = 16;

/// Where on its way through a queue a packet is captured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    /// Arriving at the queue.
    In,
    /// Leaving the link, at the far end of its propagation delay.
    Out,
}

impl Point {
    pub const ALL: [Point; 2] = [Point::In, Point::Out];

    pub const fn name(self) -> &'static str {
        match self {
            Point::In => "in",
            Point::Out => "out",
        }
    }
}

/// The capture file of `queue` at `point`, e.g. `bottleneck.down.in.pcap`.
pub fn file_name(queue: &str, point: Point) -> String {
    format!("{queue}.{}.pcap", point.name())
}

/// Creating or writing a capture file failed.
#[derive(Debug, thiserror::Error)]
#[error("pcap capture {path}: {message}")]
pub struct CaptureError {
    pub path: PathBuf,
    pub message: String,
}

/// Where a capture file's buffered bytes go.
enum Sink {
    File(File),
    Spool(spool::SpoolWriter),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Sink::File(f) => f.write(buf),
            Sink::Spool(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Sink::File(f) => f.flush(),
            Sink::Spool(s) => s.flush(),
        }
    }
}

struct File1 {
    path: PathBuf,
    writer: PcapWriter<BufWriter<Sink>>,
}

/// The open capture files of a run: two per queue (`in`, `out`).
pub struct Captures {
    files: Vec<File1>,
    error: Option<CaptureError>,
    records: u64,
    /// Bytes in the files (headers and records), and the most they may hold.
    bytes: u64,
    limit: Option<u64>,
    skipped: u64,
    /// The spool writing the files, and their numbers there.
    spool: Option<(spool::SpoolSender, Vec<spool::FileId>)>,
}

impl Captures {
    /// Create `<results>/pcap/` and a file per queue (`queues`, the names
    /// indexed by queue id: `Bottleneck::queue_names`) and [`Point`], each
    /// with its pcap header.
    ///
    /// # Errors
    /// [`CaptureError`] naming the folder or file that could not be made.
    pub fn create<N: AsRef<str>>(results: &Path, queues: &[N]) -> Result<Captures, CaptureError> {
        Captures::open(results, queues, None)
    }

    /// As [`Captures::create`], with the files written by `spool`'s thread:
    /// [`Captures::write`] never waits for the disk (unless the spool is
    /// [`spool::DEPTH`] chunks behind).
    ///
    /// # Errors
    /// [`CaptureError`] naming the folder or file that could not be made.
    pub fn spooled<N: AsRef<str>>(
        results: &Path,
        queues: &[N],
        spool: &spool::SpoolSender,
    ) -> Result<Captures, CaptureError> {
        Captures::open(results, queues, Some(spool))
    }

    fn open<N: AsRef<str>>(
        results: &Path,
        queues: &[N],
        spool: Option<&spool::SpoolSender>,
    ) -> Result<Captures, CaptureError> {
        let dir = results.join(DIR);
        let failed = |path: &Path, e: &dyn std::fmt::Display| CaptureError {
            path: path.to_owned(),
            message: e.to_string(),
        };
        fs::create_dir_all(&dir).map_err(|e| failed(&dir, &e))?;
        let header = PcapHeader {
            version_major: 2,
            version_minor: 4,
            ts_correction: 0,
            ts_accuracy: 0,
            snaplen: SNAPLEN,
            datalink: DataLink::RAW,
            ts_resolution: TsResolution::NanoSecond,
            // Fixed, not the machine's: the same bytes everywhere.
            endianness: Endianness::Little,
        };
        let mut files = Vec::with_capacity(queues.len() * Point::ALL.len());
        let mut ids = Vec::new();
        for queue in queues {
            for point in Point::ALL {
                let path = dir.join(file_name(queue.as_ref(), point));
                let file = File::create(&path).map_err(|e| failed(&path, &e))?;
                let sink = match spool {
                    None => Sink::File(file),
                    Some(s) => {
                        let id = s.open(path.clone(), file).map_err(|e| failed(&path, &e))?;
                        ids.push(id);
                        Sink::Spool(s.writer(id))
                    }
                };
                let writer =
                    PcapWriter::with_header(BufWriter::with_capacity(BUFFER, sink), header)
                        .map_err(|e| failed(&path, &e))?;
                files.push(File1 { path, writer });
            }
        }
        let bytes = (files.len() * FILE_HEADER) as u64;
        Ok(Captures {
            files,
            error: None,
            records: 0,
            bytes,
            limit: None,
            skipped: 0,
            spool: spool.map(|s| (s.clone(), ids)),
        })
    }

    /// Stop writing once the files would hold more than `bytes` in all
    /// (file and record headers included); later records are counted in
    /// [`Captures::skipped`]. `None`: no limit.
    #[must_use]
    pub fn limit(mut self, bytes: Option<u64>) -> Captures {
        self.limit = bytes;
        self
    }

    /// Append one record to the file of queue `queue` at `point`: the
    /// packet seen at `t` (since the run's start), `orig_len` bytes long,
    /// of which `data` (its headers) is captured. After an error nothing
    /// more is written ([`Captures::finish`] reports it).
    pub fn write(&mut self, queue: usize, point: Point, t: Dur, orig_len: u32, data: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let size = (RECORD_HEADER + data.len()) as u64;
        if self.limit.is_some_and(|max| self.bytes + size > max) {
            self.skipped += 1;
            return;
        }
        self.bytes += size;
        let f = &mut self.files[queue * Point::ALL.len() + point as usize];
        let record = PcapPacket::new(Duration::from_nanos(t.as_nanos()), orig_len, data);
        match f.writer.write_packet(&record) {
            Ok(_) => self.records += 1,
            Err(e) => {
                self.error = Some(CaptureError {
                    path: f.path.clone(),
                    message: e.to_string(),
                });
            }
        }
    }

    /// Records written so far.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// Records left out because the files reached their limit.
    pub fn skipped(&self) -> u64 {
        self.skipped
    }

    /// Bytes in the files so far, and their limit.
    pub fn bytes(&self) -> (u64, Option<u64>) {
        (self.bytes, self.limit)
    }

    /// Flush and close every file; their paths.
    ///
    /// # Errors
    /// The first [`CaptureError`] of the run, or of flushing.
    pub fn finish(self) -> Result<Vec<PathBuf>, CaptureError> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut paths = Vec::with_capacity(self.files.len());
        for f in self.files {
            let mut w = f.writer.into_writer();
            w.flush().map_err(|e| CaptureError {
                path: f.path.clone(),
                message: e.to_string(),
            })?;
            paths.push(f.path);
        }
        if let Some((spool, ids)) = self.spool {
            let errors = spool.sync_and_close(ids).map_err(|e| CaptureError {
                path: paths.first().cloned().unwrap_or_default(),
                message: e.to_string(),
            })?;
            if let Some((path, message)) = errors.into_iter().next() {
                return Err(CaptureError { path, message });
            }
        }
        Ok(paths)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("l4slab-pcap-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn files_have_a_fixed_header_and_headers_only_records() {
        let d = scratch("layout");
        let mut c = Captures::create(&d, &["bottleneck.down", "bottleneck.up"]).unwrap();
        // 1.5 s + 7 ns, a 1500-byte packet of which 52 header bytes are kept.
        let t = Dur::from_nanos(1_500_000_007);
        c.write(1, Point::Out, t, 1500, &[0x45; 52]);
        assert_eq!(c.records(), 1);
        let paths = c.finish().unwrap();
        let names: Vec<String> = paths
            .iter()
            .map(|p| p.strip_prefix(&d).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "pcap/bottleneck.down.in.pcap",
                "pcap/bottleneck.down.out.pcap",
                "pcap/bottleneck.up.in.pcap",
                "pcap/bottleneck.up.out.pcap"
            ]
        );
        let empty = fs::read(&paths[0]).unwrap();
        // libpcap's nanosecond magic, little endian; version 2.4; snaplen; RAW.
        assert_eq!(empty.len(), 24);
        assert_eq!(empty[..4], 0xa1b2_3c4du32.to_le_bytes());
        assert_eq!(empty[4..8], [2, 0, 4, 0]);
        assert_eq!(empty[16..20], SNAPLEN.to_le_bytes());
        assert_eq!(empty[20..24], 101u32.to_le_bytes());
        let one = fs::read(&paths[3]).unwrap();
        assert_eq!(one.len(), 24 + 16 + 52);
        let rec = &one[24..40];
        assert_eq!(rec[..4], 1u32.to_le_bytes(), "seconds");
        assert_eq!(rec[4..8], 500_000_007u32.to_le_bytes(), "nanoseconds");
        assert_eq!(rec[8..12], 52u32.to_le_bytes(), "caplen");
        assert_eq!(rec[12..16], 1500u32.to_le_bytes(), "origlen");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn spooled_files_hold_the_same_bytes_as_written_ones() {
        let (a, b) = (scratch("direct"), scratch("spooled"));
        let spool = spool::Spool::start().unwrap();
        let mut direct = Captures::create(&a, &["q"]).unwrap();
        let mut spooled = Captures::spooled(&b, &["q"], &spool.sender()).unwrap();
        // Enough records for several 64 KiB chunks per file.
        for i in 0..10_000u32 {
            let data = [(i % 251) as u8; 52];
            let point = Point::ALL[(i % 2) as usize];
            direct.write(0, point, Dur::from_nanos(u64::from(i) * 1000), 1500, &data);
            spooled.write(0, point, Dur::from_nanos(u64::from(i) * 1000), 1500, &data);
        }
        let (pa, pb) = (direct.finish().unwrap(), spooled.finish().unwrap());
        for (x, y) in pa.iter().zip(&pb) {
            let (x, y) = (fs::read(x).unwrap(), fs::read(y).unwrap());
            assert_eq!(x.len(), 24 + 5000 * (16 + 52));
            assert!(x == y, "the same bytes");
        }
        spool.finish();
        fs::remove_dir_all(&a).unwrap();
        fs::remove_dir_all(&b).unwrap();
    }

    #[test]
    fn a_limited_capture_stops_growing_at_its_limit_and_counts_what_it_left_out() {
        let d = scratch("limit");
        // Two files (24 bytes each) and room for exactly two 52-byte records (68 each).
        let limit = 2 * 24 + 2 * 68;
        let mut c = Captures::create(&d, &["q"]).unwrap().limit(Some(limit));
        for i in 0..5 {
            c.write(0, Point::In, Dur::from_nanos(i), 1500, &[0x45; 52]);
        }
        assert_eq!((c.records(), c.skipped()), (2, 3));
        assert_eq!(c.bytes(), (limit, Some(limit)));
        let paths = c.finish().unwrap();
        let sizes: u64 = paths.iter().map(|p| fs::metadata(p).unwrap().len()).sum();
        assert_eq!(sizes, limit, "the files hold exactly what was counted");
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_folder_that_cannot_be_made_is_an_error_naming_it() {
        let d = scratch("blocked");
        fs::create_dir_all(&d).unwrap();
        // A file where the folder should be.
        fs::write(d.join(DIR), b"").unwrap();
        let err = Captures::create(&d, &["q"]).err().expect("refused");
        assert_eq!(err.path, d.join(DIR));
        fs::remove_dir_all(&d).unwrap();
    }
}
