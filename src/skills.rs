//! Skills: `SKILL.md` files the model can load when a task needs them.
//! Only their index (name and description) is in the context; the `skill`
//! tool returns a body on request.
//!
//! Found in the project's `.offcode/skills/<name>/SKILL.md` and
//! `.agents/skills/<name>/SKILL.md` (read through the sandbox), and in
//! `~/.config/offcode/skills/<name>/SKILL.md` for the global skills the
//! config's `skills` list names.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

use crate::sandbox::Sandbox;

/// Characters of a description kept for the index.
const MAX_DESCRIPTION: usize = 300;
/// Bytes of one SKILL.md read.
const MAX_SKILL_BYTES: usize = 64 * 1024;

/// One skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (frontmatter `name`, else the folder's).
    pub name: String,
    /// What it is for (frontmatter `description`, else the first paragraph).
    pub description: String,
    /// Where it was found, for messages.
    pub source: String,
    /// The instructions, without the frontmatter.
    pub body: String,
}

/// The skills found, and what was wrong with the rest.
#[derive(Debug, Default)]
pub struct Found {
    /// Usable skills, in discovery order.
    pub skills: Vec<Skill>,
    /// Problems: duplicate names, unreadable files, missing global skills.
    pub warnings: Vec<String>,
}

/// Finds the project's skills in `sandbox` and the global ones `enabled`
/// names in `config_dir`.
pub fn discover(sandbox: &Sandbox, config_dir: Option<&Path>, enabled: &[String]) -> Found {
    let mut found = Found::default();
    for base in [".offcode/skills", ".agents/skills"] {
        let Ok(entries) = std::fs::read_dir(sandbox.root().join(base)) else {
            continue;
        };
        let mut folders: Vec<String> = entries
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .collect();
        folders.sort();
        for folder in folders {
            let path = format!("{base}/{folder}/SKILL.md");
            match sandbox.read(&path) {
                Ok(bytes) => add(&mut found, parse(&bytes, &folder, path)),
                Err(crate::sandbox::Error::NotFound { .. }) => {}
                Err(error) => found.warnings.push(format!("skill `{path}`: {error}")),
            }
        }
    }
    for name in enabled {
        let Some(dir) = config_dir else {
            continue;
        };
        let path = dir.join("skills").join(name).join("SKILL.md");
        match std::fs::read(&path) {
            Ok(bytes) => add(&mut found, parse(&bytes, name, path.display().to_string())),
            Err(error) => found.warnings.push(format!(
                "global skill `{name}` (listed in `skills`): `{}`: {error}",
                path.display()
            )),
        }
    }
    found
}

fn add(found: &mut Found, skill: Skill) {
    if let Some(first) = found.skills.iter().find(|s| s.name == skill.name) {
        found.warnings.push(format!(
            "two skills are named `{}`: `{}` and `{}`; the second is not used (rename one)",
            skill.name, first.source, skill.source
        ));
        return;
    }
    found.skills.push(skill);
}

/// Reads a SKILL.md: YAML-style frontmatter between `---` lines with
/// `name:` and `description:`, then the body.
fn parse(bytes: &[u8], folder: &str, source: String) -> Skill {
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_SKILL_BYTES)]).into_owned();
    let text = text.trim_start_matches('\u{feff}');
    let (front, body) = match text.strip_prefix("---") {
        Some(rest) => match rest.find("\n---") {
            Some(end) => {
                let after = &rest[end + 4..];
                let body = after.split_once('\n').map_or("", |(_, b)| b);
                (&rest[..end], body)
            }
            None => ("", text),
        },
        None => ("", text),
    };
    let field = |key: &str| {
        front.lines().find_map(|line| {
            let (k, v) = line.split_once(':')?;
            (k.trim() == key).then(|| v.trim().trim_matches(['"', '\'']).to_owned())
        })
    };
    let name = field("name")
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| folder.to_owned());
    let description = field("description")
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| first_paragraph(body));
    Skill {
        name,
        description: description.chars().take(MAX_DESCRIPTION).collect(),
        source,
        body: body.trim().to_owned(),
    }
}

/// The first paragraph of `body` that is not a heading, on one line.
fn first_paragraph(body: &str) -> String {
    body.split("\n\n")
        .map(str::trim)
        .find(|p| !p.is_empty() && !p.starts_with('#'))
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The index the model sees: one line per skill.
pub fn index(skills: &[Skill]) -> String {
    let mut text =
        String::from("Skills (load one with the `skill` tool when the task calls for it):");
    for skill in skills {
        text.push_str("\n- ");
        text.push_str(&skill.name);
        text.push_str(": ");
        text.push_str(&skill.description);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frontmatter_or_folder_and_first_paragraph() {
        let skill = parse(
            b"---\nname: release\ndescription: \"Cut a release\"\n---\n# Steps\n1. tag\n",
            "rel",
            "x".into(),
        );
        assert_eq!(
            (skill.name.as_str(), skill.description.as_str()),
            ("release", "Cut a release")
        );
        assert_eq!(skill.body, "# Steps\n1. tag");
        let plain = parse(
            b"# Deploy\n\nShip it to the\nstaging hosts.\n\nMore.",
            "deploy",
            "y".into(),
        );
        assert_eq!(plain.name, "deploy");
        assert_eq!(plain.description, "Ship it to the staging hosts.");
    }

    #[test]
    fn project_and_listed_global_skills_with_duplicates_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let config = dir.path().join("config");
        for (base, name, text) in [
            (
                root.join(".offcode/skills"),
                "lint",
                "---\nname: lint\n---\nRun clippy.",
            ),
            (
                root.join(".agents/skills"),
                "other",
                "---\nname: lint\n---\nAgain.",
            ),
            (root.join(".agents/skills"), "翻译", "把文档翻译成英文。"),
            (config.join("skills"), "global", "Global one."),
            (config.join("skills"), "unlisted", "Never."),
        ] {
            std::fs::create_dir_all(base.join(name)).unwrap();
            std::fs::write(base.join(name).join("SKILL.md"), text).unwrap();
        }
        let sandbox = Sandbox::new(&root).unwrap();
        let found = discover(
            &sandbox,
            Some(&config),
            &["global".into(), "missing".into()],
        );
        let names: Vec<&str> = found.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["lint", "翻译", "global"]);
        assert_eq!(found.warnings.len(), 2, "{:?}", found.warnings);
        assert!(
            found.warnings[0]
                .contains("`.offcode/skills/lint/SKILL.md` and `.agents/skills/other/SKILL.md`"),
            "{}",
            found.warnings[0]
        );
        assert!(found.warnings[1].contains("global skill `missing`"));
        assert_eq!(
            index(&found.skills[..2]),
            "Skills (load one with the `skill` tool when the task calls for it):\n\
             - lint: Run clippy.\n- 翻译: 把文档翻译成英文。"
        );
    }
}
