//! Whether a final answer rests on what the turn saw: a task that says to
//! use a command ran one, and an answer to a question about a value in a
//! file says what the file says. A small local model at its server's own
//! sampling writes a count it never made ("3" for 6 lines, no command run)
//! and answers "What is the port in config.json?" with the file read and
//! no number in the answer; both ended with exit 0.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::path::Path;

/// Bytes of a named file searched for the lines a question is about.
const MAX_SEARCHED: u64 = 256 * 1024;
/// Lines naming the question's words beyond which the question is too
/// broad to judge this way.
const MAX_LINES: usize = 3;

/// Whether `prompt` says to do it with a command ("count them using a
/// command", "用命令统计"). Not "add a command to the CLI", nor "with a
/// command parameter": the command is the means, at the phrase's end.
pub(super) fn asks_for_command(prompt: &str) -> bool {
    const BY: [&str; 6] = ["using", "with", "via", "use", "run", "running"];
    const BETWEEN: [&str; 7] = ["a", "an", "the", "one", "single", "shell", "bash"];
    /// Words that may follow the phrase ("… with a command and write …").
    const AFTER: [&str; 8] = ["and", "to", "then", "that", "which", "like", "such", "for"];
    const CHINESE: [&str; 6] = [
        "用命令",
        "使用命令",
        "通过命令",
        "用一个命令",
        "用一条命令",
        "用 shell 命令",
    ];
    if CHINESE.iter().any(|phrase| prompt.contains(phrase)) {
        return true;
    }
    // Words, and where a sentence or clause ends, as an empty word.
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    for c in prompt.to_lowercase().chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if !word.is_empty() {
            words.push(std::mem::take(&mut word));
        }
        if ".,;:!?，。；：".contains(c) {
            words.push(String::new());
        }
    }
    words.push(word);
    words.iter().enumerate().any(|(at, word)| {
        if !BY.contains(&word.as_str()) {
            return false;
        }
        let mut rest = words[at + 1..]
            .iter()
            .map(String::as_str)
            .skip_while(|w| BETWEEN.contains(w));
        matches!(rest.next(), Some("command" | "commands"))
            && rest
                .next()
                .is_none_or(|next| next.is_empty() || AFTER.contains(&next))
    })
}

/// Where an answer to `prompt`, a question for a value that the files it
/// names (`named`, under `root`) hold, does not say what they say: the
/// file, the line number and the line. `None` when the answer holds a
/// word of those lines, or the question is not one for such a value
/// (yes or no, why or how, how many: answered in words of its own).
pub(super) fn ungrounded(
    root: &Path,
    prompt: &str,
    named: &[String],
    answer: &str,
) -> Option<(String, usize, String)> {
    let keys = keys(prompt, named)?;
    let mut lines = Vec::new();
    for name in named {
        let Some(text) = small_text(&root.join(name), MAX_SEARCHED) else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            if line_words(line).any(|word| keys.contains(&word.to_lowercase())) {
                lines.push((name.clone(), number + 1, line.trim().to_owned()));
            }
        }
    }
    if lines.is_empty() || lines.len() > MAX_LINES {
        return None;
    }
    let answer = answer.to_lowercase();
    let said = lines.iter().any(|(_, _, line)| {
        line_words(line)
            .map(str::to_lowercase)
            .filter(|word| !keys.contains(word))
            .filter(|word| word.chars().count() >= 3 || word.chars().all(|c| c.is_ascii_digit()))
            .any(|word| answer.contains(&word))
    });
    (!said).then(|| lines.swap_remove(0))
}

/// The words a question for a value asks about ("port" in "What is the
/// port in config.json?", "config.json 里的 port 是多少？"), lower case;
/// `None` when it is not such a question.
fn keys(prompt: &str, named: &[String]) -> Option<Vec<String>> {
    const ASKS: [&str; 5] = ["what", "which", "where", "who", "when"];
    const CHINESE: [&str; 4] = ["什么", "多少", "哪", "几"];
    /// A count asked for is a number of its own, not a word of the file.
    const COUNTS: [&str; 9] = [
        "how many",
        "count",
        "number of",
        "多少个",
        "多少行",
        "多少次",
        "几个",
        "几行",
        "几次",
    ];
    const PLAIN: [&str; 24] = [
        "what", "which", "where", "who", "when", "the", "and", "for", "with", "from", "this",
        "that", "file", "files", "value", "values", "line", "lines", "does", "are", "was", "there",
        "set", "used",
    ];
    let lower = prompt.to_lowercase();
    let first = lower.split_whitespace().next().unwrap_or_default();
    let asks = ASKS
        .iter()
        .any(|w| first.trim_matches(|c: char| !c.is_alphanumeric()) == *w)
        || CHINESE.iter().any(|w| prompt.contains(w));
    if !asks || COUNTS.iter().any(|w| lower.contains(w)) {
        return None;
    }
    let file_words: Vec<String> = named
        .iter()
        .flat_map(|name| line_words(name).map(str::to_lowercase).collect::<Vec<_>>())
        .collect();
    let keys: Vec<String> = line_words(&lower)
        .filter(|word| word.len() >= 3 && !PLAIN.contains(word))
        .filter(|word| !file_words.iter().any(|name| name == word))
        .map(str::to_owned)
        .collect();
    (!keys.is_empty()).then_some(keys)
}

/// The names a change task asks to bring in: code names in `prompt` (with
/// an `_`, or written as a call, `sub(a, b)`) that no file it names holds
/// yet (`named`, under `root`) and that are not a file's stem
/// (`test_calc` of `test_calc.py`). "Add a function sub(a, b) to calc.py"
/// asks for `sub`; the 1.5B model edited `add` into itself, or made it
/// `a - b`, and said sub was added.
pub(super) fn new_names(root: &Path, prompt: &str, named: &[String]) -> Vec<String> {
    let texts: Vec<String> = named
        .iter()
        .filter_map(|name| small_text(&root.join(name), MAX_SEARCHED))
        .collect();
    // The stems of the files named and of those at the root, read once.
    let listed = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned());
    let stems: Vec<String> = named
        .iter()
        .map(|name| name.rsplit('/').next().unwrap_or(name).to_owned())
        .chain(listed)
        .filter_map(|file| file.split_once('.').map(|(stem, _)| stem.to_owned()))
        .collect();
    let stem = |word: &str| stems.iter().any(|stem| stem == word);
    let mut asked: Vec<String> = Vec::new();
    let mut rest = prompt;
    while let Some(at) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        rest = &rest[at..];
        let end = rest
            .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
            .unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        let code = word.contains('_') || after.starts_with('(');
        // Not a file name's part (`.py`), nor a method after a dot.
        let part = after.starts_with('.') && !after.starts_with(". ") && after.len() > 1;
        if code
            && !part
            && word.chars().count() >= 3
            && !asked.iter().any(|name| name == word)
            && !texts.iter().any(|text| text.contains(word))
            && !stem(word)
        {
            asked.push(word.to_owned());
        }
    }
    asked
}

/// Whether `answer` only repeats text the model was given (`given`: the
/// system prompt, the task, offcode's notes): every line of it long enough
/// to tell is found in that text. The 1.5B model at its server's own
/// sampling answered with the `<workspace>` block of its prompt and the
/// question, or with offcode's last note.
pub(super) fn echoed(answer: &str, given: &[&str]) -> bool {
    /// Characters below which a line may be in any text by chance.
    const MIN_LINE: usize = 20;
    let mut long = answer
        .lines()
        .map(str::trim)
        .filter(|line| line.chars().count() >= MIN_LINE)
        .peekable();
    long.peek().is_some() && long.all(|line| given.iter().any(|text| text.contains(line)))
}

/// The text of the file at `path` when it is a file of at most `max`
/// bytes and UTF-8.
pub(super) fn small_text(path: &Path, max: u64) -> Option<String> {
    let small = std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.len() <= max);
    small.then(|| std::fs::read_to_string(path).ok()).flatten()
}

/// A line's ASCII words: letters, digits and `_`.
fn line_words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|word| !word.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_command_asked_for_is_told_from_a_command_written_about() {
        for asks in [
            "Count the lines of app.log that contain ERROR, using a command, and write the number to count.txt.",
            "Count them with a shell command.",
            "Find the largest file using a command",
            "用命令统计 app.log 里包含 ERROR 的行数，把这个数字写入 count.txt。",
            "Use a command to list the files",
        ] {
            assert!(asks_for_command(asks), "{asks}");
        }
        for not in [
            "Add a command to the CLI that prints the version.",
            "Write a function with a command parameter.",
            "Document the run command in README.md.",
            "Rename the function in two files.",
            "给 CLI 添加一个命令。",
        ] {
            assert!(!asks_for_command(not), "{not}");
        }
    }

    #[test]
    fn a_change_task_asks_for_the_code_names_no_file_holds_yet() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("calc.py"),
            "def add(a, b):\n    return a + b\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("test_calc.py"), "from calc import add\n").unwrap();
        std::fs::write(
            dir.path().join("shop.py"),
            "def compute_total(p):\n    pass\n",
        )
        .unwrap();
        let names = |prompt: &str, named: &[&str]| {
            let named: Vec<String> = named.iter().map(|n| (*n).to_owned()).collect();
            new_names(dir.path(), prompt, &named)
        };
        assert_eq!(
            names(
                "Add a function sub(a, b) to calc.py that returns a - b.",
                &["calc.py"]
            ),
            ["sub"]
        );
        assert_eq!(
            names(
                "在 calc.py 里添加一个函数 sub(a, b)，返回 a - b。",
                &["calc.py"]
            ),
            ["sub"]
        );
        assert_eq!(
            names(
                "Rename compute_total to total_price in shop.py.",
                &["shop.py"]
            ),
            ["total_price"]
        );
        // Names the files hold already, a file's stem, plain words.
        for prompt in [
            "The test in test_calc.py fails. Fix the bug in calc.py so that python3 -m unittest test_calc passes.",
            "Change add(a, b) in calc.py to check its arguments.",
            "Create hello.py that prints Hello, world",
        ] {
            assert!(
                names(prompt, &["calc.py", "test_calc.py"]).is_empty(),
                "{prompt}"
            );
        }
    }

    #[test]
    fn an_answer_that_repeats_what_it_was_given_is_told_from_one_that_quotes() {
        let system = "You are offcode.\n<workspace>\n/tmp/rm-m2/port-zh-1/project\n</workspace>\n";
        let prompt = "config.json 里的 port 是多少？";
        let note = "(offcode) The task is not done: your `read` call failed (Error: offset 11 is past the end of `utils.py`, which has 10 lines) and has not worked since, and you ended without a word. Fix the call and make it again, or say why the task cannot be done.";
        let given = [system, prompt, note];
        for echo in [
            "<workspace>\n/tmp/rm-m2/port-zh-1/project\n</workspace>\n\nconfig.json 里的 port 是多少？",
            "The task is not done: your `read` call failed (Error: offset 11 is past the end of `utils.py`, which has 10 lines) and has not worked since, and you ended without a word.",
        ] {
            assert!(echoed(echo, &given), "{echo}");
        }
        for answer in [
            "The port is 7341.",
            "",
            "config.json 里的 port 是多少？ The answer: port 是 7341，见第 3 行。",
            "You asked: config.json 里的 port 是多少？\nIt is 7341, on line 3 of the file.",
        ] {
            assert!(!echoed(answer, &given), "{answer}");
        }
    }

    #[test]
    fn an_answer_about_a_value_is_judged_by_the_lines_that_hold_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.json"),
            "{\n  \"name\": \"api\",\n  \"port\": 7341\n}\n",
        )
        .unwrap();
        let named = ["config.json".to_owned()];
        let judge = |prompt: &str, answer: &str| {
            ungrounded(dir.path(), prompt, &named, answer).map(|l| l.1)
        };
        // The 1.5B model's answers at its server's own sampling.
        for (prompt, answer) in [
            (
                "What is the port in config.json?",
                "This is the output from the `read` function call, which reads the contents of the `config.json` file and returns the port number from it.",
            ),
            (
                "config.json 里的 port 是多少？",
                "<workspace>\n/api/port\n</workspace>",
            ),
        ] {
            assert_eq!(judge(prompt, answer), Some(3), "{answer}");
        }
        for (prompt, answer) in [
            ("What is the port in config.json?", "The port is 7341."),
            ("config.json 里的 port 是多少？", "port 是 7341。"),
            ("What is the name in config.json?", "It is called API."),
            // Not questions for a value: answered in words of their own.
            ("Is the port in config.json above 1024?", "Yes."),
            (
                "Why is the port in config.json so high?",
                "To avoid clashes.",
            ),
            ("How many keys does config.json have?", "Two."),
            ("What does config.json do?", "It configures the server."),
            // Nothing in the file about what was asked.
            ("What is the timeout in config.json?", "There is none."),
        ] {
            assert_eq!(judge(prompt, answer), None, "{prompt} {answer}");
        }
    }
}
