//! The small languages a command line can carry as data: sed scripts and
//! awk programs. Each is read as its program reads it, to find what writes
//! files or runs commands; what cannot be read is not understood.

/// What a sed script does beyond printing.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct SedEffects {
    /// Files `w`, `W` and `s///w` write.
    pub writes: Vec<String>,
}

/// Reads a sed script (GNU syntax). `Err` names a command that runs
/// programs or a script that cannot be read.
pub fn sed(script: &str) -> Result<SedEffects, String> {
    let mut effects = SedEffects::default();
    let chars: Vec<char> = script.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() || c == ';' || c == '}' {
            at += 1;
            continue;
        }
        if c == '#' {
            at = line_end(&chars, at);
            continue;
        }
        at = sed_address(&chars, at)?;
        at = skip_blanks(&chars, at);
        if chars.get(at) == Some(&'!') {
            at = skip_blanks(&chars, at + 1);
        }
        let Some(&command) = chars.get(at) else {
            return Err("a sed address without a command".to_owned());
        };
        at += 1;
        match command {
            '{' | '=' | 'd' | 'D' | 'g' | 'G' | 'h' | 'H' | 'n' | 'N' | 'p' | 'P' | 'x' | 'z'
            | 'F' => {}
            'q' | 'Q' | 'l' | 'L' => {
                while chars.get(at).is_some_and(char::is_ascii_digit) {
                    at += 1;
                }
            }
            // GNU sed ends a label at whitespace too: `:a e cmd` is a label
            // and then an `e` command.
            ':' | 'b' | 't' | 'T' | 'v' => {
                at = skip_blanks(&chars, at);
                while chars
                    .get(at)
                    .is_some_and(|c| !c.is_whitespace() && *c != ';' && *c != '}')
                {
                    at += 1;
                }
            }
            'a' | 'i' | 'c' => at = text_end(&chars, at),
            'r' | 'R' => at = line_end(&chars, at),
            'w' | 'W' => {
                let end = line_end(&chars, at);
                effects.writes.push(file_name(&chars[at..end])?);
                at = end;
            }
            'e' => return Err("sed's `e` command runs a shell command".to_owned()),
            's' => at = sed_substitute(&chars, at, &mut effects)?,
            'y' => {
                let delimiter = *chars.get(at).ok_or("an unfinished `y` command")?;
                at = delimited(&chars, at + 1, delimiter)?;
                at = delimited(&chars, at, delimiter)?;
            }
            other => return Err(format!("sed command `{other}` is not one offcode knows")),
        }
    }
    Ok(effects)
}

fn skip_blanks(chars: &[char], mut at: usize) -> usize {
    while chars.get(at).is_some_and(|c| *c == ' ' || *c == '\t') {
        at += 1;
    }
    at
}

fn line_end(chars: &[char], at: usize) -> usize {
    chars[at..]
        .iter()
        .position(|c| *c == '\n')
        .map_or(chars.len(), |n| at + n)
}

/// `a text`, with `\` newline continuing it.
fn text_end(chars: &[char], mut at: usize) -> usize {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            '\n' => return at,
            _ => at += 1,
        }
    }
    chars.len()
}

fn file_name(chars: &[char]) -> Result<String, String> {
    let name: String = chars.iter().collect::<String>().trim().to_owned();
    if name.is_empty() {
        return Err("a sed `w` without a file name".to_owned());
    }
    Ok(name)
}

/// Past text up to an unescaped `delimiter`, starting after the opening
/// one.
fn delimited(chars: &[char], mut at: usize, delimiter: char) -> Result<usize, String> {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            c if c == delimiter => return Ok(at + 1),
            '\n' if delimiter != '\n' => return Err("a newline inside a sed expression".to_owned()),
            _ => at += 1,
        }
    }
    Err("an unfinished sed expression".to_owned())
}

/// Past a regular expression up to an unescaped `delimiter`, as GNU sed
/// reads it: inside a bracket expression (`[/]`, `[]x]`, `[[:alpha:]/]`)
/// the delimiter is a character of the set, not the end.
fn regex_end(chars: &[char], mut at: usize, delimiter: char) -> Result<usize, String> {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            c if c == delimiter => return Ok(at + 1),
            '\n' if delimiter != '\n' => return Err("a newline inside a sed expression".to_owned()),
            '[' => at = bracket_end(chars, at + 1)?,
            _ => at += 1,
        }
    }
    Err("an unfinished sed expression".to_owned())
}

/// Past a bracket expression, from after its `[`: a `^` and a `]` first
/// are part of it, and `[:class:]`, `[=c=]`, `[.c.]` are read whole.
fn bracket_end(chars: &[char], mut at: usize) -> Result<usize, String> {
    if chars.get(at) == Some(&'^') {
        at += 1;
    }
    if chars.get(at) == Some(&']') {
        at += 1;
    }
    while at < chars.len() {
        match (chars[at], chars.get(at + 1)) {
            ('[', Some(&kind @ (':' | '=' | '.'))) => {
                let close = (at + 2..chars.len().saturating_sub(1))
                    .find(|&i| chars[i] == kind && chars[i + 1] == ']')
                    .ok_or("an unfinished bracket expression")?;
                at = close + 2;
            }
            (']', _) => return Ok(at + 1),
            ('\n', _) => return Err("a newline inside a bracket expression".to_owned()),
            _ => at += 1,
        }
    }
    Err("an unfinished bracket expression".to_owned())
}

/// Past an address or a range (`1`, `$`, `/re/I`, `\%re%`, `1,+3`,
/// `0~2`).
fn sed_address(chars: &[char], at: usize) -> Result<usize, String> {
    let mut at = one_address(chars, at)?;
    if chars.get(at) == Some(&',') {
        at += 1;
        if matches!(chars.get(at), Some('+' | '~')) {
            at += 1;
        }
        at = one_address(chars, at)?;
    }
    Ok(at)
}

fn one_address(chars: &[char], mut at: usize) -> Result<usize, String> {
    match chars.get(at) {
        Some(c) if c.is_ascii_digit() => {
            while chars
                .get(at)
                .is_some_and(|c| c.is_ascii_digit() || *c == '~')
            {
                at += 1;
            }
        }
        Some('$') => at += 1,
        Some('/') => at = regex_end(chars, at + 1, '/')?,
        Some('\\') => {
            let delimiter = *chars.get(at + 1).ok_or("an unfinished sed address")?;
            at = regex_end(chars, at + 2, delimiter)?;
        }
        _ => return Ok(at),
    }
    while matches!(chars.get(at), Some('I' | 'M')) {
        at += 1;
    }
    Ok(at)
}

/// `s/re/replacement/flags`: `e` runs the result, `w FILE` writes.
fn sed_substitute(chars: &[char], at: usize, effects: &mut SedEffects) -> Result<usize, String> {
    let delimiter = *chars.get(at).ok_or("an unfinished `s` command")?;
    if delimiter == '\\' || delimiter == '\n' {
        return Err("an `s` command with an odd delimiter".to_owned());
    }
    let mut at = regex_end(chars, at + 1, delimiter)?;
    at = delimited(chars, at, delimiter)?;
    while let Some(&flag) = chars.get(at) {
        match flag {
            'g' | 'p' | 'i' | 'I' | 'm' | 'M' | '0'..='9' => at += 1,
            'e' => return Err("sed's `s///e` runs the result as a shell command".to_owned()),
            'w' => {
                let end = line_end(chars, at + 1);
                effects.writes.push(file_name(&chars[at + 1..end])?);
                return Ok(end);
            }
            _ => break,
        }
    }
    Ok(at)
}

/// Reads an awk program; `Err` says what in it runs commands or writes
/// files (`system`, pipes, `print > file`, gawk's `@load`).
pub fn awk(program: &str) -> Result<(), String> {
    // Whatever the tokens say, these words in the text run commands.
    if let Some(why) = runs_anyway(program) {
        return Err(why.to_owned());
    }
    let chars: Vec<char> = program.chars().collect();
    let mut at = 0;
    // Whether the last token ends an operand (then `/` divides).
    let mut operand = false;
    let mut depth = 0_usize;
    // Paren depth at which the current print statement started.
    let mut print_depth: Option<usize> = None;
    while at < chars.len() {
        let c = chars[at];
        match c {
            '"' => {
                at = awk_string(&chars, at + 1)?;
                operand = true;
                continue;
            }
            '/' if !operand => {
                at = delimited(&chars, at + 1, '/')?;
                operand = true;
                continue;
            }
            '#' => {
                at = line_end(&chars, at);
                continue;
            }
            '@' => return Err("gawk's `@` directives load code".to_owned()),
            '|' if chars.get(at + 1) == Some(&'|') => {
                at += 2;
                operand = false;
                continue;
            }
            '|' => return Err("the awk program runs a command through a pipe".to_owned()),
            '>' if print_depth == Some(depth) => {
                return Err("the awk program writes output to a file".to_owned());
            }
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            ';' | '\n' | '}' | '{' => {
                print_depth = None;
                operand = false;
                at += 1;
                continue;
            }
            _ => {}
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let start = at;
            while chars
                .get(at)
                .is_some_and(|c| c.is_ascii_alphanumeric() || *c == '_')
            {
                at += 1;
            }
            let word: String = chars[start..at].iter().collect();
            match word.as_str() {
                "system" => return Err("the awk program calls `system`".to_owned()),
                "print" | "printf" => print_depth = Some(depth),
                _ => {}
            }
            // A keyword before `/` (`print /x/`) starts a regex.
            operand = !matches!(
                word.as_str(),
                "print" | "printf" | "return" | "in" | "if" | "while" | "do" | "else" | "case"
            );
            continue;
        }
        if c.is_ascii_digit() || c == ')' || c == ']' || c == '$' {
            operand = c != '$';
        } else if !c.is_whitespace() {
            operand = false;
        }
        at += 1;
    }
    Ok(())
}

/// `system(` or `| getline` anywhere in the text, even inside what reads
/// as a string: a reader that mistakes a regex for division must not be
/// able to hide them.
fn runs_anyway(program: &str) -> Option<&'static str> {
    let squeezed: String = program.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains("system(") {
        return Some("the awk program calls `system`");
    }
    if squeezed.contains("|getline") {
        return Some("the awk program runs a command through a pipe");
    }
    None
}

fn awk_string(chars: &[char], mut at: usize) -> Result<usize, String> {
    while at < chars.len() {
        match chars[at] {
            '\\' => at += 2,
            '"' => return Ok(at + 1),
            _ => at += 1,
        }
    }
    Err("an unfinished awk string".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn sed_scripts_that_only_print_are_read() {
        for script in [
            "s/a/b/",
            "s/ e / E /",
            "s/x/y/g;s|a|b|2",
            "1,10p",
            "/start/,/end/d",
            "$!N;P;D",
            "\\%usr%s/a/b/I",
            "y/abc/xyz/",
            "/x/{s/a/b/;p}",
            "1~2d",
            "a hello world",
            ":a;N;$!ba;s/\\n/ /g",
            "r header.txt",
            "0,/re/s//X/",
        ] {
            assert_eq!(sed(script), Ok(SedEffects::default()), "{script}");
        }
    }

    #[test]
    fn sed_writes_and_runs_are_found() {
        assert_eq!(
            sed("s/a/b/w out.txt").unwrap().writes,
            vec!["out.txt".to_owned()]
        );
        assert_eq!(sed("/x/w log").unwrap().writes, vec!["log".to_owned()]);
        assert!(sed("s/a/b/e").is_err());
        assert!(sed("1e id").is_err());
        assert!(sed("s/a/b/ge").is_err());
        assert!(sed("Z").is_err());
        // GNU sed ends a label at a blank.
        assert!(sed(":a e touch x").is_err());
        assert!(sed("b end; e id").is_err());
        assert!(sed("s/a/b").is_err());
    }

    #[test]
    fn awk_programs_that_only_print_are_read() {
        for program in [
            "{print $1}",
            "{print \"a->b\"}",
            "{print \"x | y\"}",
            "$3 > 10 {print $1}",
            "{if ($2 > $3) print $1}",
            "{print ($1 > 2)}",
            "BEGIN {FS=\":\"} {n += $2} END {print n / 2}",
            "/a|b/ {print}",
            "{ a = $1 / $2; print a }",
            "NR > 1 || $1 == \"x\"",
        ] {
            assert_eq!(awk(program), Ok(()), "{program}");
        }
    }

    #[test]
    fn awk_programs_that_run_or_write_are_found() {
        for program in [
            "{system(\"rm x\")}",
            "BEGIN { \"id\" | getline u }",
            "{print | \"sh\"}",
            "{print > \"out\"}",
            "{printf \"%s\", $1 >> \"log\"}",
            "@load \"x\"",
            "{print $1 > $2}",
            // A newline ends a statement: `/` after it starts a regex, and
            // `system(` is found whatever the reader thought.
            "x\n/\"?/ { system(\"id\") }\n# \"",
            "{ s = \"system (\" }",
        ] {
            assert!(awk(program).is_err(), "{program}");
        }
    }
}
