//! What a call is matched on besides its arguments as given: the pattern
//! "allow for this session" remembers, and the files a patch names.

/// What "allow for this session" remembers for a command: the program and,
/// for tools with subcommands, the subcommand (`cargo test *`).
pub(super) fn session_pattern(command: &str) -> String {
    const SUBCOMMANDS: &[&str] = &[
        "git", "cargo", "npm", "pnpm", "yarn", "go", "docker", "podman", "kubectl", "pip", "pip3",
        "uv", "poetry", "make", "just", "rustup", "gradle", "mvn", "dotnet", "bun", "deno",
        "composer", "bundle", "rake",
    ];
    let mut words = command.split(' ');
    let first = words.next().unwrap_or("");
    match words.next() {
        Some(second) if SUBCOMMANDS.contains(&first) && !second.starts_with('-') => {
            format!("{first} {second} *")
        }
        _ => format!("{first} *"),
    }
}

/// The files a unified diff names (`+++`/`---` lines, `/dev/null` left out).
pub(super) fn patch_paths(patch: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for line in patch.lines() {
        let Some(rest) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        else {
            continue;
        };
        let named = rest.split('\t').next().unwrap_or(rest).trim();
        if named == "/dev/null" {
            continue;
        }
        let named = named
            .strip_prefix("a/")
            .or_else(|| named.strip_prefix("b/"))
            .unwrap_or(named)
            .to_owned();
        if !paths.contains(&named) {
            paths.push(named);
        }
    }
    paths
}
