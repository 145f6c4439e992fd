//! The real tools closest to a name a model made up: other agents' names
//! for the same tool (`read_file`, `str_replace`, `run`), then names a
//! few letters away.

/// Names models use for offcode's tools.
const KNOWN: [(&str, &[&str]); 7] = [
    (
        "read",
        &[
            "cat",
            "open",
            "view",
            "read_file",
            "readfile",
            "open_file",
            "show",
        ],
    ),
    (
        "write",
        &[
            "write_file",
            "create_file",
            "create",
            "save",
            "save_file",
            "writefile",
            "new_file",
        ],
    ),
    (
        "edit",
        &[
            "str_replace",
            "replace",
            "edit_file",
            "modify",
            "update",
            "replace_in_file",
            "rename",
            "sed",
            "patch",
            "apply_patch",
            "apply_diff",
        ],
    ),
    (
        "bash",
        &[
            "run",
            "shell",
            "exec",
            "execute",
            "terminal",
            "command",
            "sh",
            "run_command",
            "python",
        ],
    ),
    (
        "grep",
        &["search", "find_in_files", "search_files", "rg", "ripgrep"],
    ),
    (
        "glob",
        &["find", "find_files", "search_file", "file_search"],
    ),
    (
        "list",
        &[
            "ls",
            "dir",
            "list_files",
            "list_dir",
            "list_directory",
            "tree",
        ],
    ),
];

/// Up to three of `names` a model writing `wanted` most likely meant,
/// best first.
pub fn closest<'a>(wanted: &str, names: &[&'a str]) -> Vec<&'a str> {
    let wanted = wanted.trim().to_lowercase();
    let mut found: Vec<&str> = Vec::new();
    for (ours, theirs) in KNOWN {
        if theirs.contains(&wanted.as_str())
            && let Some(name) = names.iter().find(|n| **n == ours)
        {
            found.push(name);
        }
    }
    let mut near: Vec<(usize, &str)> = names
        .iter()
        .map(|name| (distance(&wanted, &name.to_lowercase()), *name))
        .filter(|(d, name)| *d <= 2.max(name.len() / 3) && *d < name.len())
        .collect();
    near.sort_unstable();
    for (_, name) in near {
        if !found.contains(&name) {
            found.push(name);
        }
    }
    found.truncate(3);
    found
}

/// What a model is told after calling `wanted`, which is not a tool:
/// the closest of `names` first.
pub fn no_such_tool(wanted: &str, names: &[&str]) -> String {
    let meant = match closest(wanted, names).as_slice() {
        [] => String::new(),
        [one] => format!(" Did you mean `{one}`?"),
        several => format!(
            " Did you mean {}?",
            several
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    };
    format!(
        "There is no `{wanted}` tool, so nothing was run.{meant} The tools are: {}.",
        names.join(", ")
    )
}

/// Edits (insert, delete, replace) from `a` to `b`, by character.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let here = row[j + 1];
            row[j + 1] = (previous + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(here + 1);
            previous = here;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn a_made_up_name_points_at_the_tool_meant() {
        let names = ["read", "write", "edit", "list", "grep", "glob", "bash"];
        assert_eq!(closest("read_file", &names), ["read"]);
        assert_eq!(closest("rename", &names), ["edit"]);
        assert_eq!(closest("run", &names), ["bash"]);
        assert_eq!(closest("Bash", &names), ["bash"]);
        assert_eq!(closest("wirte", &names), ["write"]);
        assert_eq!(closest("grpe", &names), ["grep"]);
        // A file's name is no tool's.
        assert!(closest("hello.txt", &names).is_empty());
        // Only tools that are offered are named.
        assert!(closest("str_replace", &["read", "bash"]).is_empty());
    }
}
