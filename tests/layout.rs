//! Architecture rules that the compiler does not check: the core never
//! touches the terminal and never prints.

use std::path::Path;

const CORE: &[&str] = &[
    "protocol", "agent", "client", "tools", "policy", "session", "context", "config", "sandbox",
    "cancel", "confine",
];

fn rust_files(path: &Path, out: &mut Vec<std::path::PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|x| x == "rs") {
        out.push(path.to_path_buf());
    }
}

#[test]
fn core_modules_never_use_terminal_crates_or_print() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut checked = 0;
    for module in CORE {
        let root = src.join(format!("{module}.rs"));
        let text = std::fs::read_to_string(&root).unwrap();
        assert!(
            text.contains("#![deny(clippy::print_stdout, clippy::print_stderr)]"),
            "{} must deny printing",
            root.display()
        );
        let mut files = vec![root];
        rust_files(&src.join(module), &mut files);
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            for banned in [
                "ratatui",
                "crossterm",
                "reedline",
                "println!",
                "eprintln!",
                "print!(",
                "dbg!(",
            ] {
                assert!(!text.contains(banned), "{} uses `{banned}`", file.display());
            }
            checked += 1;
        }
    }
    assert!(checked >= CORE.len());
}

#[test]
fn unsafe_code_lives_in_one_module() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let allowed = src.join("confine/sys.rs");
    let mut with_unsafe = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if text.contains("unsafe") && *file != allowed {
            with_unsafe.push(file.display().to_string());
        }
    }
    assert_eq!(
        with_unsafe,
        Vec::<String>::new(),
        "only src/confine/sys.rs may use unsafe"
    );
    assert!(
        std::fs::read_to_string(&allowed)
            .unwrap()
            .contains("unsafe {")
    );
}
