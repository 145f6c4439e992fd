//! `OpenCode`'s wildcard patterns: `*` matches any run of characters
//! (slashes included), `?` one character, everything else itself.

/// Whether `pattern` matches all of `text`.
pub fn matches(pattern: &str, text: &str) -> bool {
    let pattern: Vec<char> = pattern.chars().collect();
    let text: Vec<char> = text.chars().collect();
    // Iterative matching with one backtrack point: linear for `*` runs.
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('*') => {
                star = Some((p, t));
                p += 1;
            }
            Some('?') => {
                p += 1;
                t += 1;
            }
            Some(c) if *c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((star_p, star_t)) => {
                    p = star_p + 1;
                    t = star_t + 1;
                    star = Some((star_p, star_t + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// Like [`matches()`] for a command line: a pattern ending in ` *` also
/// matches the command without arguments (`ls *` matches `ls`).
pub fn matches_command(pattern: &str, text: &str) -> bool {
    matches(pattern, text)
        || pattern
            .strip_suffix(" *")
            .is_some_and(|bare| matches(bare, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_and_question_marks() {
        assert!(matches("*", ""));
        assert!(matches("*", "a/b c"));
        assert!(matches("git push *", "git push origin main"));
        assert!(!matches("git push *", "git pull"));
        assert!(matches("mkfs*", "mkfs.ext4"));
        assert!(matches("a?c", "abc"));
        assert!(!matches("a?c", "ac"));
        assert!(matches("*.rs", "src/main.rs"));
        assert!(matches("*a*b*c", "xxaxxbxxc"));
        assert!(!matches("*a*b*c", "xxaxxcxxb"));
        assert!(!matches("rm", "rmdir"));
        assert!(matches_command("ls *", "ls"));
        assert!(matches_command("ls *", "ls -la"));
        assert!(!matches_command("ls *", "lsblk"));
    }
}
