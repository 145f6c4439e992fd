//! Architecture rules that the compiler does not check: the core never
//! touches the terminal and never prints, the protocol is a leaf, and no
//! import circle spans the crate's top-level modules (docs/architecture.md).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const CORE: &[&str] = &[
    "protocol",
    "agent",
    "client",
    "tools",
    "policy",
    "session",
    "context",
    "config",
    "sandbox",
    "checkpoint",
    "cancel",
    "confine",
    "ids",
    "paths",
    "skills",
    "servers",
    "state_file",
    "trust",
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
    // `confine::sys` and its own sub-modules (`src/confine/sys/`).
    let allowed = src.join("confine/sys.rs");
    let beneath = src.join("confine/sys");
    let mut with_unsafe = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if text.contains("unsafe") && *file != allowed && !file.starts_with(&beneath) {
            with_unsafe.push(file.display().to_string());
        }
    }
    assert_eq!(
        with_unsafe,
        Vec::<String>::new(),
        "only src/confine/sys.rs and src/confine/sys/ may use unsafe"
    );
    assert!(
        std::fs::read_to_string(&allowed)
            .unwrap()
            .contains("unsafe {")
    );
}

/// The top-level modules each top-level module names through `crate::`
/// (in `use` lists too), tests included.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let path = regex::Regex::new(r"crate::(\w+)").unwrap();
    let list = regex::Regex::new(r"crate::\{([^}]*)\}").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&src).unwrap();
        let top = first_name(relative);
        let text = std::fs::read_to_string(file).unwrap();
        let mut named: Vec<String> = path.captures_iter(&text).map(|c| c[1].to_owned()).collect();
        for group in list.captures_iter(&text) {
            named.extend(
                group[1]
                    .split(',')
                    .filter_map(|item| item.trim().split("::").next())
                    .filter(|name| !name.is_empty())
                    .map(str::to_owned),
            );
        }
        let edges = graph.entry(top.clone()).or_default();
        edges.extend(
            named
                .into_iter()
                .filter(|name| *name != top && src.join(format!("{name}.rs")).exists()),
        );
    }
    graph
}

#[test]
fn the_protocol_imports_nothing_of_the_crate() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = vec![src.join("protocol.rs")];
    rust_files(&src.join("protocol"), &mut files);
    assert!(files.len() > 1, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            !text.contains("crate::"),
            "{} must be a leaf",
            file.display()
        );
        // `super::` only inside the protocol's own modules, never up to the
        // crate: not at the top of protocol.rs, never three levels up.
        for line in text.lines().filter(|line| line.contains("super::")) {
            let top = file.ends_with("protocol.rs") && !line.starts_with(' ');
            assert!(
                !top && !line.contains("super::super::super"),
                "{} must be a leaf: {line}",
                file.display()
            );
        }
    }
}

#[test]
fn no_import_circle_spans_modules() {
    let graph = module_graph();
    assert!(
        graph["startup"].contains("agent"),
        "the graph is read: {graph:?}"
    );
    assert_eq!(
        on_circles(&graph),
        Vec::<String>::new(),
        "modules on an import circle; graph: {graph:#?}"
    );
}

/// The module a file belongs to: the first part of its path, less `.rs`.
fn first_name(relative: &Path) -> String {
    relative
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_owned()
}

/// The modules of `graph` that reach themselves.
fn on_circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let mut circles = Vec::new();
    for start in graph.keys() {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&String> = graph[start].iter().collect();
        while let Some(next) = stack.pop() {
            if next == start {
                circles.push(start.clone());
                break;
            }
            if seen.insert(next.clone()) {
                stack.extend(graph.get(next).into_iter().flatten());
            }
        }
    }
    circles
}

/// The modules directly in `src/FOLDER` (a module's own sub-folder counted
/// as it) and the ones of them each names: `super::NAME` from its file,
/// `super::super::NAME` from a file one folder down, `crate::FOLDER::NAME`.
/// Code only: comments and unit tests may name anything.
fn folder_graph(folder: &str) -> BTreeMap<String, BTreeSet<String>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src")
        .join(folder);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let names: BTreeSet<String> = files
        .iter()
        .filter(|f| f.parent() == Some(dir.as_path()))
        .map(|f| f.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    let tests = regex::Regex::new(r"(?s)#\[cfg\(test\)\]\s*mod tests\s*\{.*").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in &files {
        let relative = file.strip_prefix(&dir).unwrap();
        let module = first_name(relative);
        if relative.ends_with("tests.rs") || relative.components().any(|c| c.as_os_str() == "tests")
        {
            continue;
        }
        let depth = relative.components().count() - 1;
        let up = "super::".repeat(depth + 1);
        let sibling =
            regex::Regex::new(&format!(r"(?:(?:^|[^:\w]){up}|crate::{folder}::)(\w+)")).unwrap();
        let text = std::fs::read_to_string(file).unwrap();
        let code: String = tests
            .replace(&text, "")
            .lines()
            .filter(|line| !line.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let edges = graph.entry(module.clone()).or_default();
        for found in sibling.captures_iter(&code) {
            let name = found[1].to_owned();
            if name != module && names.contains(&name) {
                edges.insert(name);
            }
        }
    }
    graph
}

#[test]
fn the_agent_and_ui_folders_have_no_import_circle() {
    for folder in ["agent", "ui"] {
        let graph = folder_graph(folder);
        assert!(
            graph
                .get("turn")
                .or(graph.get("app"))
                .is_some_and(|e| !e.is_empty()),
            "the {folder} graph is read: {graph:?}"
        );
        assert_eq!(
            on_circles(&graph),
            Vec::<String>::new(),
            "{folder}: modules on an import circle; graph: {graph:#?}"
        );
    }
}
