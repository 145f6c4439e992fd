//! What a prompt asks for, read from its words: whether the person asked
//! for a change (so a turn that changed nothing did not do it) or only
//! asked a question. English and Chinese; when in doubt, not a change.
#![deny(clippy::print_stdout, clippy::print_stderr)]

/// English verbs that ask for files to change, as whole words.
// Not `make` or `format`: "make a plan", "format the answer as a table".
const ENGLISH: [&str; 23] = [
    "set",
    "write",
    "change",
    "fix",
    "rename",
    "replace",
    "edit",
    "create",
    "add",
    "remove",
    "delete",
    "update",
    "modify",
    "refactor",
    "implement",
    "move",
    "convert",
    "save",
    "append",
    "insert",
    "generate",
    "patch",
    "rewrite",
];
/// Chinese verbs that ask for files to change.
const CHINESE: [&str; 24] = [
    "设为",
    "设成",
    "写入",
    "写到",
    "写进",
    "保存",
    "修改",
    "改成",
    "改为",
    "改名",
    "重命名",
    "修复",
    "创建",
    "新建",
    "添加",
    "增加",
    "删除",
    "删掉",
    "替换",
    "更新",
    "转换",
    "实现",
    "重构",
    "生成",
];
/// Words that open an English question.
const QUESTION_WORDS: [&str; 18] = [
    "what", "why", "how", "where", "which", "who", "when", "is", "are", "does", "do", "did", "can",
    "could", "should", "would", "will", "explain",
];
/// Marks of a Chinese question.
const CHINESE_QUESTION: [&str; 8] = ["什么", "为什么", "怎么", "哪", "多少", "吗", "呢", "解释"];

/// Whether `prompt` asks for a change of files: a change verb, and not a
/// question (it ends with a question mark, opens with a question word or
/// holds a Chinese question mark of speech).
pub(super) fn asks_for_change(prompt: &str) -> bool {
    !is_question(prompt) && has_change_verb(prompt)
}

/// Whether `prompt` only asks a question: a question with no change verb
/// anywhere ("What is the port in config.json?", not "Can you fix it?").
pub(super) fn only_asks(prompt: &str) -> bool {
    is_question(prompt) && !has_change_verb(prompt)
}

/// A question: it ends with a question mark, opens with a question word
/// or holds a Chinese question mark of speech.
fn is_question(prompt: &str) -> bool {
    let text = prompt.trim();
    text.ends_with('?')
        || text.ends_with('？')
        || words(text)
            .first()
            .is_some_and(|w| QUESTION_WORDS.contains(&w.as_str()))
        || CHINESE_QUESTION.iter().any(|q| text.contains(q))
}

/// An English change verb as a whole word, or a Chinese one.
fn has_change_verb(prompt: &str) -> bool {
    words(prompt).iter().any(|w| ENGLISH.contains(&w.as_str()))
        || CHINESE.iter().any(|v| prompt.contains(v))
}

/// `text`'s words, lower case.
fn words(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Something a turn did that changes things, for the report a final
/// answer that does not say it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Done {
    /// A file written, edited or patched.
    Changed(String),
    /// A command that ran and succeeded.
    Ran(String),
}

impl Done {
    /// What a call that worked did, from its arguments (JSON text).
    pub(super) fn of(tool: &str, arguments: &str) -> Vec<Self> {
        let arguments: serde_json::Value = serde_json::from_str(arguments).unwrap_or_default();
        let text = |key: &str| arguments.get(key).and_then(serde_json::Value::as_str);
        match tool {
            "write" | "edit" => text("path")
                .map(|p| Self::Changed(p.to_owned()))
                .into_iter()
                .collect(),
            "patch" => text("patch")
                .unwrap_or_default()
                .lines()
                .filter_map(|line| line.strip_prefix("+++ "))
                .map(|path| path.trim().trim_start_matches("b/"))
                .filter(|path| *path != "/dev/null")
                .map(|path| Self::Changed(path.to_owned()))
                .collect(),
            "bash" => text("command")
                .map(|c| Self::Ran(c.trim().to_owned()))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }
}

/// What an `edit` that worked replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Replaced {
    /// The text replaced.
    pub(super) old: String,
    /// What replaced it.
    pub(super) new: String,
    /// The file, as the model named it.
    pub(super) path: String,
}

/// What an `edit` call that worked replaced.
pub(super) fn replaced(tool: &str, arguments: &str) -> Option<Replaced> {
    if tool != "edit" {
        return None;
    }
    let arguments: serde_json::Value = serde_json::from_str(arguments).ok()?;
    let text = |key: &str| arguments.get(key)?.as_str().map(str::to_owned);
    Some(Replaced {
        old: text("old_string")?,
        new: text("new_string")?,
        path: text("path")?,
    })
}

/// Extensions of the files a prompt may name.
const EXTENSIONS: [&str; 40] = [
    "txt", "md", "py", "rs", "go", "js", "ts", "tsx", "jsx", "json", "jsonc", "yaml", "yml",
    "toml", "ini", "cfg", "conf", "log", "csv", "tsv", "html", "css", "sh", "c", "h", "cpp", "hpp",
    "java", "kt", "rb", "php", "sql", "xml", "env", "proto", "swift", "lua", "vue", "mod", "lock",
];

/// The workspace files a prompt names: relative paths ending in a known
/// extension (`out.txt`, `src/app.py`), once each, in order.
pub(super) fn named_files(prompt: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let path_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    for word in prompt.split(|c: char| !path_char(c)) {
        let word = word.trim_end_matches('.').trim_start_matches("./");
        let Some((stem, extension)) = word.rsplit_once('.') else {
            continue;
        };
        let plain = !stem.is_empty()
            && !word.starts_with('/')
            && !word.split('/').any(|part| part == ".." || part.is_empty())
            && EXTENSIONS.contains(&extension.to_ascii_lowercase().as_str());
        if plain && !found.iter().any(|f| f == word) {
            found.push(word.to_owned());
        }
    }
    found
}

/// The report added to a final answer that does not say what was done:
/// `None` when it names a file the turn changed, or nothing was done.
/// In Chinese when the prompt is.
pub(super) fn report(answer: &str, done: &[Done], prompt: &str) -> Option<String> {
    let changed: Vec<&str> = done
        .iter()
        .filter_map(|d| match d {
            Done::Changed(path) => Some(path.as_str()),
            Done::Ran(_) => None,
        })
        .collect();
    let ran: Vec<String> = done
        .iter()
        .filter_map(|d| match d {
            Done::Ran(command) => Some(format!("`{}`", first_line(command))),
            Done::Changed(_) => None,
        })
        .collect();
    let names = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        answer.contains(name)
    };
    if done.is_empty() || changed.iter().any(|p| names(p)) {
        return None;
    }
    // A long answer that names no file may still say what was done.
    if changed.is_empty() && answer.trim().chars().count() > 40 {
        return None;
    }
    let chinese = prompt
        .chars()
        .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c));
    let mut parts = Vec::new();
    if !changed.is_empty() {
        parts.push(if chinese {
            format!("已修改 {}", changed.join("、"))
        } else {
            format!("Changed {}", changed.join(", "))
        });
    }
    // Commands are named when no file was: what the turn did was run them.
    if changed.is_empty() && !ran.is_empty() {
        parts.push(if chinese {
            format!("已运行 {}", ran.join("、"))
        } else {
            format!("Ran {}", ran.join(", "))
        });
    }
    let joined = parts.join(if chinese { "；" } else { "; " });
    Some(if chinese {
        format!("{joined}。")
    } else {
        format!("{joined}.")
    })
}

/// A command's first line, cut to 80 characters.
fn first_line(command: &str) -> String {
    let line = command.lines().next().unwrap_or_default();
    let mut cut: String = line.chars().take(80).collect();
    if line.chars().count() > 80 || command.trim_end().lines().count() > 1 {
        cut.push('…');
    }
    cut
}

/// `path` without `.` components, so `./a` and `a` compare equal.
pub(super) fn lexical(path: &std::path::Path) -> std::path::PathBuf {
    path.components()
        .filter(|c| *c != std::path::Component::CurDir)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{Done, asks_for_change, only_asks, report};

    #[test]
    fn an_answer_that_does_not_say_what_was_done_gets_a_report() {
        let done = [
            Done::Changed("out.txt".into()),
            Done::Ran("python3 -m unittest test_calc".into()),
        ];
        assert_eq!(
            report(
                "I'm off.",
                &done,
                "read hello.txt and write it in upper case to out.txt"
            )
            .as_deref(),
            Some("Changed out.txt.")
        );
        assert_eq!(
            report("Done.", &done[1..], "run the tests").as_deref(),
            Some("Ran `python3 -m unittest test_calc`.")
        );
        assert_eq!(
            report("", &done[..1], "读取 hello.txt，写入 out.txt").as_deref(),
            Some("已修改 out.txt。")
        );
        // An answer that names the file says it already.
        assert_eq!(report("Wrote HELLO WORLD to out.txt.", &done, "p"), None);
        // Nothing done, nothing to report.
        assert_eq!(report("", &[], "p"), None);
        assert_eq!(
            Done::of("patch", "{\"patch\": \"--- a/x.py\\n+++ b/x.py\\n@@\"}"),
            [Done::Changed("x.py".into())]
        );
        assert_eq!(
            Done::of(
                "bash",
                "{\"command\": \"grep -c ERROR app.log > count.txt\"}"
            ),
            [Done::Ran("grep -c ERROR app.log > count.txt".into())]
        );
    }

    #[test]
    fn the_files_a_prompt_names_are_found() {
        assert_eq!(
            super::named_files("read hello.txt and write it in upper case to out.txt."),
            ["hello.txt", "out.txt"]
        );
        assert_eq!(
            super::named_files("把 shop.py 和 main.py 里的函数改名，写入 ./src/a.rs。"),
            ["shop.py", "main.py", "src/a.rs"]
        );
        assert!(
            super::named_files(
                "use python3 -m unittest, see example.com, /etc/passwd, ../x.py, 0.5b"
            )
            .is_empty()
        );
    }

    #[test]
    fn a_change_is_told_from_a_question() {
        for change in [
            "read hello.txt and write it in upper case to out.txt",
            "In greet.py, change the greeting from Hello to Goodbye.",
            "The test fails. Fix the bug in calc.py so that the tests pass.",
            "Rename the function compute_total to total_price in shop.py and main.py.",
            "Count the ERROR lines of app.log and write the number to count.txt.",
            "读取 hello.txt，把内容转换成大写后写入 out.txt",
            "把 greet.py 里的问候语 Hello 改成 Goodbye。",
            "修复 calc.py 里的错误，让测试通过。",
            "add a README",
            "In config.yaml, set debug to true.",
            "把 debug 设为 true",
        ] {
            assert!(asks_for_change(change), "{change}");
        }
        for question in [
            "What is the port in config.json?",
            "config.json 里的 port 是多少？",
            "How would you fix the bug in calc.py",
            "Explain how the write path works",
            "list the files",
            "hello",
            "这个函数是做什么的",
            "Does make test pass",
            "make a plan",
        ] {
            assert!(!asks_for_change(question), "{question}");
        }
        // Only a question: no change verb anywhere.
        for (prompt, only) in [
            ("What is the port in config.json?", true),
            ("config.json 里的 port 是多少？", true),
            ("这个函数是做什么的", true),
            ("How would you fix the bug in calc.py", false),
            ("Can you rename compute_total?", false),
            ("能帮我修改 calc.py 吗？", false),
            ("list the files", false),
            ("Fix calc.py", false),
        ] {
            assert_eq!(only_asks(prompt), only, "{prompt}");
        }
    }
}
