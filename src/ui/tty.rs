//! The terminal's mode between the editor and the live turn.
//!
//! The editor and the live turn each put the terminal in raw mode while
//! they read keys and give back the mode they found. Left cooked in
//! between (while a `/` command runs, while a turn starts or ends), the
//! terminal would echo keys typed then over the screen, turn their Enter
//! into a newline (Ctrl+J, which the editor inserts rather than sends),
//! and stop offcode outright on a Ctrl+C. So from the first prompt on,
//! the mode they find and give back is a quiet one: keys are held, not
//! echoed, and arrive as typed (Enter as Enter, Ctrl+C as a key), while
//! output is still translated as usual (`\n` starts a new line).
//! [`restore`] puts back the mode offcode started with, on leaving and
//! on a panic.

use std::sync::Mutex;

use rustix::termios::{
    InputModes, LocalModes, OptionalActions, SpecialCodeIndex, Termios, tcgetattr, tcsetattr,
};

/// The mode the terminal had before [`quiet`], once it was set.
static ORIGINAL: Mutex<Option<Termios>> = Mutex::new(None);

/// Puts the terminal on standard input in the quiet mode; false when it
/// is not a terminal (nothing changes).
pub fn quiet() -> bool {
    let stdin = std::io::stdin();
    let Ok(original) = tcgetattr(&stdin) else {
        return false;
    };
    let mut quiet = original.clone();
    quiet.local_modes &=
        !(LocalModes::ECHO | LocalModes::ICANON | LocalModes::ISIG | LocalModes::IEXTEN);
    quiet.input_modes &= !(InputModes::ICRNL | InputModes::INLCR | InputModes::IXON);
    quiet.special_codes[SpecialCodeIndex::VMIN] = 1;
    quiet.special_codes[SpecialCodeIndex::VTIME] = 0;
    let Ok(mut saved) = ORIGINAL.lock() else {
        return false;
    };
    if saved.is_none() {
        *saved = Some(original);
    }
    tcsetattr(&stdin, OptionalActions::Now, &quiet).is_ok()
}

/// Puts back the mode the terminal had before [`quiet`] (if it was
/// called).
pub fn restore() {
    // A panic while the lock was held must not keep the terminal quiet.
    let saved = match ORIGINAL.lock() {
        Ok(mut saved) => saved.take(),
        Err(poisoned) => poisoned.into_inner().take(),
    };
    if let Some(original) = saved {
        let _ = tcsetattr(std::io::stdin(), OptionalActions::Now, &original);
    }
}
