//! TUN devices (Documentation/networking/tuntap.rst): created in a network
//! namespace, with a virtio-net header on every packet (`IFF_VNET_HDR`) so
//! the kernel can hand over GSO packets, and the offloads set explicitly.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::cvt;
use crate::netns::in_netns;

const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const TUNSETOFFLOAD: libc::c_ulong = 0x4004_54d0;
const TUNSETVNETHDRSZ: libc::c_ulong = 0x4004_54d8;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFF_VNET_HDR: libc::c_short = 0x4000;
const IFF_NAPI: libc::c_short = 0x0010;

/// Extra TUNSETIFF flags: `IFF_NAPI` unless `L4SLAB_TUN_NAPI=0` (experiment switch).
fn tun_extra_flags() -> libc::c_short {
    match std::env::var("L4SLAB_TUN_NAPI").as_deref() {
        Ok("0") => 0,
        _ => IFF_NAPI,
    }
}

/// The offloads a TUN may take: `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6`.
pub type Offloads = libc::c_ulong;

/// `TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6`.
pub const TUN_OFFLOADS: Offloads = 0x01 | 0x02 | 0x04;

/// `struct ifreq` as TUNSETIFF reads it (name and flags).
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Create a (non-persistent) TUN device `name` in the network namespace
/// `ns`, with `IFF_VNET_HDR` (a `vnet_hdr_len`-byte header before each
/// packet) and the given offloads; returns the non-blocking fd. The device
/// disappears when the fd is closed, so a crashed emulator never leaves a
/// device behind.
pub fn tun_create(
    ns: &impl AsRawFd,
    name: &str,
    offloads: Offloads,
    vnet_hdr_len: usize,
) -> io::Result<OwnedFd> {
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    // The device is created in the namespace current at open(2).
    let fd = in_netns(ns, || {
        // SAFETY: the path is a NUL-terminated C string literal.
        let fd = cvt(unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `fd` was just opened and is owned by nobody else.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    })?;
    let mut req = IfReq {
        name: [0; libc::IFNAMSIZ],
        flags: IFF_TUN | IFF_NO_PI | IFF_VNET_HDR | tun_extra_flags(),
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`; `req` is one
    // (name, flags, padding to its 40 bytes) that we own.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) })?;
    let sz = vnet_hdr_len as libc::c_int;
    // SAFETY: TUNSETVNETHDRSZ reads one int, `sz`.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETVNETHDRSZ, &sz) })?;
    // Always set the offloads explicitly (emulator-probe.md §6.1).
    // SAFETY: TUNSETOFFLOAD takes the flags by value.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETOFFLOAD, offloads) })?;
    Ok(fd)
}
