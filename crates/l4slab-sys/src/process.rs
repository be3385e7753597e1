//! Processes: who we are (`geteuid`, `getppid`), the children we start
//! (what they do between fork and exec, `waitpid`), process groups and the
//! terminal's foreground group.

use std::io;
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::cvt;
use crate::sched::CpuSet;
use crate::signal::{self, Signal, HANDLED_SIGNALS, RUNTIME_IGNORED};

/// Is the effective user root?
pub fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

pub fn getppid() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getppid() }
}

/// `prctl(PR_SET_PDEATHSIG, sig)`: the kernel sends `sig` to this process
/// when the thread that forked it exits (prctl(2); cleared in children by
/// fork). Async-signal-safe.
pub fn set_parent_death_signal(sig: Signal) -> io::Result<()> {
    // SAFETY: plain prctl with integer arguments.
    cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, sig as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

/// The number of threads of this process (the entries of `/proc/self/task`).
pub fn thread_count() -> io::Result<usize> {
    Ok(std::fs::read_dir("/proc/self/task")?.count())
}

/// `waitpid(pid, WNOHANG)`: `Some(wait status)` once the child has exited.
pub fn try_wait(pid: i32) -> Option<i32> {
    let mut status = 0;
    // SAFETY: `status` is a live int for the kernel to fill in.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r == pid).then_some(status)
}

/// Shell-style exit code of a wait status (128 + signal for a kill).
pub fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    }
}

/// `setpgid(pid, pgid)` (0: the calling process / its pid).
pub fn setpgid(pid: i32, pgid: i32) -> io::Result<()> {
    // SAFETY: plain call with integer arguments.
    cvt(unsafe { libc::setpgid(pid, pgid) }).map(|_| ())
}

pub fn getpgrp() -> i32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::getpgrp() }
}

/// Make process group `pgid` the terminal's foreground group (job control).
pub fn set_foreground(pgid: i32) -> io::Result<()> {
    // A background process calling tcsetpgrp gets SIGTTOU unless it blocks it.
    let _ = signal::block(&[signal::SIGTTOU]);
    // SAFETY: plain call with integer arguments.
    cvt(unsafe { libc::tcsetpgrp(0, pgid) }).map(|_| ())
}

/// What a child does between fork and exec, in this order (only
/// async-signal-safe calls, nothing allocates):
///
/// 1. with [`ChildSetup::parent_death`] `(sig, parent)`: ask for `sig` when
///    the forking thread exits (`PR_SET_PDEATHSIG`), and refuse to start
///    (`ESRCH`) if `parent` is already gone (we were re-parented before the
///    call, so no signal would come);
/// 2. its own process group if asked (`setpgid(0, 0)`);
/// 3. always: an empty signal mask, default handlers for the
///    [`HANDLED_SIGNALS`] and the signals a runtime leaves ignored, normal
///    scheduling (`SCHED_OTHER`), then the CPUs [`ChildSetup::cpus`] and
///    the network namespace [`ChildSetup::netns`] if given;
/// 4. a new session if asked (`setsid`);
/// 5. the signals [`ChildSetup::ignore`] ignored.
#[derive(Clone, Default)]
pub struct ChildSetup {
    pub parent_death: Option<(Signal, i32)>,
    pub own_process_group: bool,
    pub cpus: Option<CpuSet>,
    pub netns: Option<RawFd>,
    pub new_session: bool,
    pub ignore: Vec<Signal>,
}

impl ChildSetup {
    /// Have `cmd`'s child run this set-up before it execs.
    pub fn apply_to(self, cmd: &mut Command) {
        // SAFETY: the hook runs in the child between fork and exec, where
        // only async-signal-safe calls are allowed: `run` makes only such
        // calls (prctl, getppid, setpgid, pthread_sigmask, signal,
        // sched_setscheduler, sched_setaffinity, setns, setsid) on data
        // moved into the closure before the fork, and builds its errors
        // from errno without allocating.
        unsafe {
            cmd.pre_exec(move || self.run());
        }
    }

    /// The steps, in the child.
    fn run(&self) -> io::Result<()> {
        if let Some((sig, parent)) = self.parent_death {
            set_parent_death_signal(sig)?;
            if getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
        }
        if self.own_process_group {
            let _ = setpgid(0, 0);
        }
        let empty = signal::sigset(&[]);
        // SAFETY: `empty` is a live sigset_t; the old mask is not requested.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut()) };
        for &s in HANDLED_SIGNALS.iter().chain(&RUNTIME_IGNORED) {
            // SAFETY: SIG_DFL installs no handler of ours.
            unsafe { libc::signal(s, libc::SIG_DFL) };
        }
        let p = libc::sched_param { sched_priority: 0 };
        // SAFETY: `p` is a live sched_param the kernel only reads.
        unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) };
        if let Some(set) = &self.cpus {
            // SAFETY: `set.0` is a live cpu_set_t of the size we pass.
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set.0) };
        }
        if let Some(ns) = self.netns {
            // SAFETY: plain call with integer arguments.
            cvt(unsafe { libc::setns(ns, libc::CLONE_NEWNET) })?;
        }
        if self.new_session {
            // SAFETY: plain call, no arguments.
            unsafe { libc::setsid() };
        }
        for &s in &self.ignore {
            // SAFETY: SIG_IGN installs no handler of ours.
            unsafe { libc::signal(s, libc::SIG_IGN) };
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_are_shell_style() {
        // Wait statuses (wait(2)): exit code in bits 8-15, a signal in 0-6.
        assert_eq!(exit_code(3 << 8), 3);
        assert_eq!(exit_code(libc::SIGTERM), 128 + libc::SIGTERM);
    }

    #[test]
    fn a_child_runs_its_setup_and_ignores_what_it_was_told_to() {
        // `sh -c 'kill -TERM $$'` survives its own SIGTERM only if ignored.
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "kill -TERM $$; exit 7"]);
        ChildSetup {
            parent_death: Some((signal::SIGKILL, std::process::id() as i32)),
            new_session: true,
            ignore: vec![signal::SIGTERM],
            ..ChildSetup::default()
        }
        .apply_to(&mut cmd);
        assert_eq!(cmd.status().unwrap().code(), Some(7));
    }
}
