//! Files written by a thread of their own, for a real-time caller.
//!
//! The emulator's forwarder runs at real-time priority and must not wait
//! for the disk: a `write(2)` or `rename(2)` on a busy filesystem can block
//! for as long as the journal takes to commit (945 ms was seen in CI while
//! other jobs wrote, at 10 Mbit/s a second of the emulated link lost). A
//! [`Spool`] is one thread that does the forwarder's file I/O: the capture
//! files' buffered chunks ([`Captures::spooled`](crate::Captures::spooled))
//! and whole-file replacements (the live view's sample). The forwarder only
//! hands over bytes.
//!
//! Costs are bounded: at most [`DEPTH`] jobs wait (64 KiB chunks: 16 MiB).
//! A replacement that finds the queue full is left out (the next one
//! replaces it anyway) and counted; a capture chunk that finds it full
//! waits for room, as the write would have (a capture must not lose a
//! chunk mid-record), and is counted too.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Jobs that may wait for the thread.
pub const DEPTH: usize = 256;

/// A file the spool writes to, numbered by [`SpoolSender::open`].
pub type FileId = u64;

enum Job {
    Open(FileId, PathBuf, File),
    Append(FileId, Vec<u8>),
    Close(FileId),
    /// Write `data` to `path` atomically (`<path>.tmp`, then rename).
    Replace(PathBuf, Vec<u8>),
    /// Answer once every earlier job is done: the errors of `files` since they were opened.
    Sync(Vec<FileId>, mpsc::Sender<Vec<(PathBuf, String)>>),
    /// The last job: the thread ends (senders still held then get an error).
    Stop,
}

/// What the caller waited or left out because the thread was behind.
#[derive(Debug, Default)]
struct Counters {
    waited: AtomicU64,
    left_out: AtomicU64,
    next_id: AtomicU64,
}

/// The writing thread; dropping it (or [`Spool::finish`]) lets it write
/// what is queued and stop, whatever [`SpoolSender`]s are still held.
pub struct Spool {
    tx: SpoolSender,
    thread: Option<JoinHandle<()>>,
}

/// A handle that queues jobs for a [`Spool`]'s thread (cheap to clone).
#[derive(Clone)]
pub struct SpoolSender {
    tx: SyncSender<Job>,
    counters: Arc<Counters>,
}

impl Spool {
    /// Start the thread.
    ///
    /// # Errors
    /// The thread could not be spawned.
    pub fn start() -> io::Result<Spool> {
        let (tx, rx) = mpsc::sync_channel(DEPTH);
        let thread = std::thread::Builder::new()
            .name("l4slab-spool".into())
            .spawn(move || serve(&rx))?;
        Ok(Spool {
            tx: SpoolSender {
                tx,
                counters: Arc::default(),
            },
            thread: Some(thread),
        })
    }

    pub fn sender(&self) -> SpoolSender {
        self.tx.clone()
    }

    /// Replace `path`'s contents with `data` (atomically, by rename),
    /// unless the thread is behind: then it is left out and counted.
    pub fn replace_lossy(&self, path: PathBuf, data: Vec<u8>) {
        if self.tx.tx.try_send(Job::Replace(path, data)).is_err() {
            self.tx.counters.left_out.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Wait until every job queued so far is done.
    ///
    /// # Errors
    /// The thread has stopped.
    pub fn sync(&self) -> io::Result<()> {
        self.tx.sync_and_close(Vec::new()).map(|_| ())
    }

    /// Times a capture chunk waited for room, and replacements left out.
    pub fn waited_and_left_out(&self) -> (u64, u64) {
        let c = &self.tx.counters;
        (
            c.waited.load(Ordering::Relaxed),
            c.left_out.load(Ordering::Relaxed),
        )
    }

    /// Write everything queued, then stop the thread.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            let _ = self.tx.tx.send(Job::Stop);
            let _ = t.join();
        }
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        self.stop();
    }
}

impl SpoolSender {
    /// Hand `file` (at `path`) to the thread; its number for [`SpoolSender::writer`].
    pub fn open(&self, path: PathBuf, file: File) -> io::Result<FileId> {
        let id = self.counters.next_id.fetch_add(1, Ordering::Relaxed);
        self.send(Job::Open(id, path, file))?;
        Ok(id)
    }

    /// A [`Write`] that appends to file `id` through the thread: each
    /// `write` is one job (wrap it in a `BufWriter` so that a job is a
    /// large chunk).
    pub fn writer(&self, id: FileId) -> SpoolWriter {
        SpoolWriter {
            id,
            tx: self.clone(),
        }
    }

    /// Wait until every job queued so far is done; the errors writing
    /// `files` since they were opened, and close them.
    pub fn sync_and_close(&self, files: Vec<FileId>) -> io::Result<Vec<(PathBuf, String)>> {
        let (reply, answer) = mpsc::channel();
        self.send(Job::Sync(files.clone(), reply))?;
        let errors = answer.recv().map_err(|_| gone())?;
        for id in files {
            self.send(Job::Close(id))?;
        }
        Ok(errors)
    }

    fn send(&self, job: Job) -> io::Result<()> {
        match self.tx.try_send(job) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(job)) => {
                self.counters.waited.fetch_add(1, Ordering::Relaxed);
                self.tx.send(job).map_err(|_| gone())
            }
            Err(TrySendError::Disconnected(_)) => Err(gone()),
        }
    }
}

fn gone() -> io::Error {
    io::Error::new(io::ErrorKind::BrokenPipe, "the spool's thread has stopped")
}

/// Appends to one spooled file (see [`SpoolSender::writer`]).
pub struct SpoolWriter {
    id: FileId,
    tx: SpoolSender,
}

impl Write for SpoolWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if !buf.is_empty() {
            self.tx.send(Job::Append(self.id, buf.to_vec()))?;
        }
        Ok(buf.len())
    }

    /// The thread writes in order; nothing to push here ([`SpoolSender::sync_and_close`]
    /// waits for the disk).
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The thread: each job in order; a file's first error is kept for
/// [`Job::Sync`] and later writes to it are skipped.
fn serve(rx: &Receiver<Job>) {
    struct Open {
        path: PathBuf,
        file: File,
        error: Option<String>,
    }
    let mut files: HashMap<FileId, Open> = HashMap::new();
    while let Ok(job) = rx.recv() {
        match job {
            Job::Open(id, path, file) => {
                files.insert(
                    id,
                    Open {
                        path,
                        file,
                        error: None,
                    },
                );
            }
            Job::Append(id, data) => {
                if let Some(f) = files.get_mut(&id).filter(|f| f.error.is_none()) {
                    if let Err(e) = f.file.write_all(&data) {
                        f.error = Some(e.to_string());
                    }
                }
            }
            Job::Close(id) => {
                files.remove(&id);
            }
            Job::Replace(path, data) => {
                // A view that cannot be written is not worth stopping for.
                let mut tmp = path.as_os_str().to_owned();
                tmp.push(".tmp");
                let _ = std::fs::write(&tmp, data).and_then(|()| std::fs::rename(&tmp, &path));
            }
            Job::Stop => return,
            Job::Sync(ids, reply) => {
                let errors = ids
                    .iter()
                    .filter_map(|id| files.get(id))
                    .filter_map(|f| f.error.clone().map(|e| (f.path.clone(), e)))
                    .collect();
                let _ = reply.send(errors);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::BufWriter;

    #[test]
    fn appends_arrive_in_order_and_replacements_are_whole() {
        let d = std::env::temp_dir().join(format!("l4slab-spool-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let spool = Spool::start().unwrap();
        let tx = spool.sender();
        let path = d.join("a.bin");
        let id = tx.open(path.clone(), File::create(&path).unwrap()).unwrap();
        let mut w = BufWriter::with_capacity(16, tx.writer(id));
        let mut want = Vec::new();
        for i in 0..1000u32 {
            w.write_all(&i.to_le_bytes()).unwrap();
            want.extend_from_slice(&i.to_le_bytes());
        }
        w.flush().unwrap();
        for i in 0..10u8 {
            spool.replace_lossy(d.join("live.json"), vec![b'0' + i; 100]);
        }
        assert_eq!(tx.sync_and_close(vec![id]).unwrap(), Vec::new());
        assert_eq!(std::fs::read(&path).unwrap(), want);
        let live = std::fs::read(d.join("live.json")).unwrap();
        assert_eq!(live.len(), 100);
        assert!(
            live.iter().all(|&b| b == live[0]),
            "never a mix of two replacements"
        );
        assert!(!d.join("live.json.tmp").exists());
        spool.finish();
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failing_file_reports_its_error_at_sync() {
        let spool = Spool::start().unwrap();
        let tx = spool.sender();
        // A file opened read-only: every append fails.
        let path = PathBuf::from("/proc/self/cmdline");
        let id = tx.open(path.clone(), File::open(&path).unwrap()).unwrap();
        tx.writer(id).write_all(b"x").unwrap();
        let errors = tx.sync_and_close(vec![id]).unwrap();
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].0, path);
    }

    #[test]
    fn a_thread_behind_leaves_replacements_out_and_makes_chunks_wait() {
        let d = std::env::temp_dir().join(format!("l4slab-spool-full-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        // A pipe nobody reads stands for a disk that does not answer: the
        // thread blocks on its second 64 KiB.
        let fifo = d.join("stuck");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        let stuck = || {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&fifo)
        };
        let spool = Spool::start().unwrap();
        let tx = spool.sender();
        let id = tx.open(fifo.clone(), stuck().unwrap()).unwrap();
        tx.writer(id).write_all(&vec![0; 256 << 10]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let n = DEPTH + 100;
        for _ in 0..n {
            spool.replace_lossy(d.join("live.json"), b"{}".to_vec());
        }
        let (waited, left_out) = spool.waited_and_left_out();
        assert_eq!((waited, left_out), (0, 100), "the queue holds DEPTH jobs");
        // A chunk finds the queue full: it waits until the disk answers.
        let chunk = std::thread::spawn({
            let tx = tx.clone();
            move || tx.writer(id).write_all(b"x")
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!chunk.is_finished(), "a capture chunk is never dropped");
        let mut reader = stuck().unwrap();
        let drain = std::thread::spawn(move || {
            let mut buf = vec![0; 1 << 16];
            let mut got = 0;
            while got < (256 << 10) + 1 {
                got += std::io::Read::read(&mut reader, &mut buf).unwrap();
            }
            got
        });
        chunk.join().unwrap().unwrap();
        assert_eq!(spool.waited_and_left_out(), (1, 100));
        assert!(tx.sync_and_close(vec![id]).unwrap().is_empty());
        assert_eq!(drain.join().unwrap(), (256 << 10) + 1);
        assert_eq!(std::fs::read(d.join("live.json")).unwrap(), b"{}");
        spool.finish();
        std::fs::remove_dir_all(&d).unwrap();
    }
}
