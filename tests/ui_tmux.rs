//! The interactive UI in a real terminal: the binary runs in tmux, keys
//! are sent as a person types them, and the screen is read back.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::{Workspace, demo_mock, wait_until};

/// A tmux server of its own, so tests never meet each other's sessions.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new(name: &str) -> Self {
        assert!(
            Command::new("tmux").arg("-V").output().is_ok(),
            "tmux is needed for the UI tests: `release/setup.sh` installs it"
        );
        Self {
            socket: format!("offcode-test-{name}-{}", std::process::id()),
        }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Starts offcode in a new 100x30 window; the shell prints `EXITED n`
    /// when it ends.
    fn start(&self, window: &str, ws: &Workspace, url: &str, data: &Path) {
        let command = format!(
            "env -i HOME={home} PATH={path} TERM=xterm-256color LANG=C.UTF-8 \
             OFFCODE_BASE_URL={url} OFFCODE_MODEL=mock-model OFFCODE_DATA_DIR={data} \
             OFFCODE_MANAGED_POLICY={managed} {bin}; echo EXITED $?; sleep 60",
            home = ws.home.display(),
            path = std::env::var("PATH").unwrap_or_default(),
            data = data.display(),
            managed = ws.managed_policy().display(),
            bin = env!("CARGO_BIN_EXE_offcode"),
        );
        let root = ws.root.display().to_string();
        self.tmux(&[
            "new-session",
            "-d",
            "-x",
            "100",
            "-y",
            "30",
            "-s",
            window,
            "-c",
            &root,
            &command,
        ]);
    }

    fn keys(&self, window: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", window];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Types `text` literally (no key names).
    fn type_text(&self, window: &str, text: &str) {
        self.tmux(&["send-keys", "-t", window, "-l", text]);
    }

    fn screen(&self, window: &str) -> String {
        self.tmux(&["capture-pane", "-p", "-t", window])
    }

    fn wait_for(&self, window: &str, text: &str) -> String {
        let found = wait_until(Duration::from_secs(10), || {
            self.screen(window).contains(text)
        });
        let screen = self.screen(window);
        assert!(found, "`{text}` did not appear:\n{screen}");
        screen
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.tmux(&["kill-server"]);
    }
}

#[test]
fn chinese_editing_approval_by_key_and_history_after_restart() {
    let server = demo_mock();
    let ws = Workspace::new();
    let data = ws.home.join("data");
    let tmux = Tmux::new("task");
    tmux.start("one", &ws, &server.base_url(), &data);
    tmux.wait_for("one", "Type a task");
    // Wide characters: two Lefts move over two of them, Backspace deletes
    // one, and the submitted text is exactly what is on the screen.
    tmux.type_text("one", "你好世界");
    tmux.keys("one", &["Left", "Left", "BSpace"]);
    tmux.type_text("one", "X");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "You said: 你X世界");
    // A write asks; `y` and Enter approve it.
    tmux.type_text("one", "write notes.txt");
    tmux.keys("one", &["Enter"]);
    let prompt = tmux.wait_for("one", "answer [y/n] >");
    assert!(prompt.contains("notes.txt  created  +3 -0"), "{prompt}");
    assert!(prompt.contains(" a  allow for this session"), "{prompt}");
    tmux.type_text("one", "y");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "✓ notes.txt: created");
    assert!(ws.root.join("notes.txt").exists());
    // Alt+Enter starts a second line of the same prompt.
    tmux.type_text("one", "line one");
    tmux.keys("one", &["M-Enter"]);
    tmux.type_text("one", "line two");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "You said: line one\nline two");
    // Ctrl+D leaves.
    tmux.keys("one", &["C-d"]);
    tmux.wait_for("one", "EXITED 0");
    // A new process recalls the prompts (not the `y`) with Up.
    tmux.start("two", &ws, &server.base_url(), &data);
    tmux.wait_for("two", "Type a task");
    tmux.keys("two", &["Up"]);
    tmux.wait_for("two", "… line two");
    tmux.keys("two", &["Up"]);
    let screen = tmux.wait_for("two", "> write notes.txt");
    assert!(!screen.contains("> y\n"), "{screen}");
}

#[test]
fn a_dangerous_command_offers_only_once_or_deny() {
    let server = demo_mock();
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("build")).unwrap();
    let tmux = Tmux::new("danger");
    tmux.start("one", &ws, &server.base_url(), &ws.home.join("data"));
    tmux.wait_for("one", "Type a task");
    tmux.type_text("one", "run `rm -rf build`");
    tmux.keys("one", &["Enter"]);
    let prompt = tmux.wait_for("one", "answer [y/n] >");
    assert!(prompt.contains("$ rm -rf build"), "{prompt}");
    assert!(
        prompt.contains("⚠ rm -rf build: `rm` deletes files"),
        "{prompt}"
    );
    assert!(!prompt.contains("allow for this session"), "{prompt}");
    // `a` is not an answer here: it denies.
    tmux.type_text("one", "a");
    tmux.keys("one", &["Enter"]);
    tmux.wait_for("one", "⊘ Permission denied");
    assert!(ws.root.join("build").is_dir());
}
