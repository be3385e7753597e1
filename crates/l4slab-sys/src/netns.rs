//! Network namespaces (network_namespaces(7)): switching the calling
//! thread into one with `setns(2)`.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::cvt;

/// Switch the calling thread into the network namespace of `ns`.
pub fn setns_net(ns: &impl AsRawFd) -> io::Result<()> {
    // SAFETY: plain call with integer arguments.
    cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) }).map(|_| ())
}

/// An fd of the calling thread's current network namespace.
pub fn current_netns() -> io::Result<File> {
    File::open("/proc/thread-self/ns/net")
}

/// Run `f` with the calling thread inside the network namespace `ns`, then
/// switch back (even if `f` fails).
pub fn in_netns<T>(ns: &impl AsRawFd, f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    let home = current_netns()?;
    setns_net(ns)?;
    let r = f();
    setns_net(&home).expect("cannot return to the original network namespace");
    r
}
