//! A panic in any of the emulator's threads is written to the file
//! `L4SLAB_EMU_PANIC_FILE` names (the Python side reads it: a panic's exit
//! code cannot be told from COMMAND's). Its own test binary: the panic hook
//! is process-wide.

use l4slab_emu::cli::{report_panics, PANIC_FILE_ENV};

#[test]
fn a_panic_in_any_thread_is_written_to_the_panic_file() {
    let dir = std::env::temp_dir().join(format!("l4slab-panic-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("panics");
    std::fs::write(&file, b"").unwrap();
    std::env::set_var(PANIC_FILE_ENV, &file);
    report_panics();
    // Nothing the emulator starts inherits it.
    assert!(std::env::var_os(PANIC_FILE_ENV).is_none());
    let joined = std::thread::Builder::new()
        .name("forwarder".into())
        .spawn(|| panic!("queue index out of range"))
        .unwrap()
        .join();
    assert!(joined.is_err());
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(text.starts_with("thread 'forwarder' panicked at"), "{text}");
    assert!(text.contains("queue index out of range"), "{text}");
}
