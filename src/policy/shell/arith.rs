//! Where bash evaluates arithmetic, and what the arithmetic reads.
//!
//! bash evaluates as arithmetic the inside of `$((...))`, `((...))`,
//! `for ((...))` and `let`, array subscripts, the offset and length of
//! `${P:OFFSET:LENGTH}` for any parameter `P`, and the operands of `[[ -eq
//! ]]` and its kin. Arithmetic reads variables by name, and a variable's
//! value is itself evaluated as arithmetic: `x='a[$(rm f)]'; echo $((x))`
//! runs `rm f`. So an expression is harmless only when each of its operands
//! is a literal number or a variable the line itself sets to a number; this
//! module says which variables an expression reads and whether it holds
//! anything else ([`Reading::code`]). The gate judges the names once it has
//! seen every assignment of the line.

/// What one arithmetic expression reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// Variables it reads, by name (`x`, `$x`, `${x}`): each is harmless
    /// only when the line sets it to numbers alone.
    pub reads: Vec<String>,
    /// Variables it assigns numbers to (`i=0`, `i++`, `i+=2`).
    pub assigns: Vec<String>,
    /// Why it may run code whatever the line sets: an array element, a
    /// special parameter, a substitution, a quote... `None` when its only
    /// operands are numbers and [`Reading::reads`].
    pub code: Option<String>,
}

impl Reading {
    fn code(&mut self, why: impl Into<String>) {
        self.code.get_or_insert_with(|| why.into());
    }

    fn merge(&mut self, other: Self) {
        self.reads.extend(other.reads);
        self.assigns.extend(other.assigns);
        if let Some(why) = other.code {
            self.code(why);
        }
    }
}

/// Operator characters arithmetic may hold (`;` separates the parts of a
/// `for ((...))`).
const OPERATORS: &str = "+-*/%<>=!~&|^?:,();";

/// Reads the arithmetic expression `text` (without its `$((`/`))`).
pub fn expression(text: &str) -> Reading {
    let mut reading = Reading::default();
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() || OPERATORS.contains(c) {
            at += 1;
        } else if c.is_ascii_digit() {
            // `12`, `0x1f`, `8#17`, `64#@_`.
            while at < chars.len()
                && (chars[at].is_ascii_alphanumeric() || "#@_".contains(chars[at]))
            {
                at += 1;
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
                at += 1;
            }
            let name: String = chars[start..at].iter().collect();
            let next = chars[at..].iter().find(|c| !c.is_whitespace());
            if next == Some(&'[') {
                reading.code(format!("the array element `{name}[...]`"));
                continue;
            }
            if assigned(&chars, start, at) {
                reading.assigns.push(name.clone());
            }
            reading.reads.push(name);
        } else if c == '$' {
            at = dollar(&chars, at, &mut reading);
        } else {
            reading.code(format!("`{c}`"));
            at += 1;
        }
    }
    reading
}

/// Whether the name at `start..end` is assigned: followed by `=` (not
/// `==`), an operator and `=`, `++` or `--`, or preceded by `++` or `--`.
fn assigned(chars: &[char], start: usize, end: usize) -> bool {
    let after: String = chars[end..]
        .iter()
        .skip_while(|c| c.is_whitespace())
        .take(4)
        .collect();
    let before: String = chars[..start].iter().rev().take(2).collect();
    if before == "++" || before == "--" || after.starts_with("++") || after.starts_with("--") {
        return true;
    }
    if after.starts_with("==") {
        return false;
    }
    [
        "=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "^=", "|=",
    ]
    .iter()
    .any(|op| after.starts_with(op))
}

/// A `$` inside arithmetic, at `chars[at]`: reads what it expands and
/// returns where the expression goes on.
fn dollar(chars: &[char], at: usize, reading: &mut Reading) -> usize {
    let rest: String = chars[at + 1..].iter().collect();
    if rest.starts_with("((") {
        if let Some(end) = closing(&chars[at + 1..], '(', ')') {
            // `$(( $((...)) ))`: the inner one is read the same way.
            let inner: String = chars[at + 3..at + end].iter().collect();
            reading.merge(expression(&inner));
            return at + 2 + end;
        }
        reading.code("an unclosed `$((`");
        return chars.len();
    }
    if rest.starts_with('{') {
        let Some(end) = closing(&chars[at + 1..], '{', '}') else {
            reading.code("an unclosed `${`");
            return chars.len();
        };
        let inner: String = chars[at + 2..at + 1 + end].iter().collect();
        match braced(&inner) {
            Braced::Number => {}
            Braced::Name(name) => reading.reads.push(name),
            Braced::Other => reading.code(format!("`${{{inner}}}`")),
        }
        return at + 2 + end;
    }
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    if name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        reading.reads.push(name.clone());
        return at + 1 + name.chars().count();
    }
    match rest.chars().next() {
        // The count of parameters, the last status, PIDs: numbers.
        Some('#' | '?' | '$' | '!') => at + 2,
        Some(other) => {
            reading.code(format!("`${other}`"));
            at + 2
        }
        None => {
            reading.code("a lone `$`");
            at + 1
        }
    }
}

enum Braced {
    Number,
    Name(String),
    Other,
}

/// `${...}` inside arithmetic: `${x}` reads `x`; `${#x}`, `${#a[@]}` and
/// `${#}` are numbers; anything else may hold code.
fn braced(inner: &str) -> Braced {
    if let Some(counted) = inner.strip_prefix('#') {
        let name = counted
            .strip_suffix("[@]")
            .or_else(|| counted.strip_suffix("[*]"))
            .unwrap_or(counted);
        if name.is_empty() || is_name(name) || matches!(name, "@" | "*") {
            return Braced::Number;
        }
        return Braced::Other;
    }
    if matches!(inner, "#" | "?" | "$" | "!") {
        return Braced::Number;
    }
    if is_name(inner) {
        return Braced::Name(inner.to_owned());
    }
    Braced::Other
}

/// Whether `text` is a variable name.
pub fn is_name(text: &str) -> bool {
    text.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Where the bracket opened at `chars[0]` closes, counting nesting.
fn closing(chars: &[char], open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (at, &c) in chars.iter().enumerate() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(at);
            }
        }
    }
    None
}

/// What a `${...}` expansion makes bash evaluate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parameter {
    /// The arithmetic it evaluates: a subscript, an offset, a length.
    pub arithmetic: Option<Reading>,
    /// It evaluates a variable's value as code outside arithmetic: an
    /// indirect reference (`${!x}`) or prompt expansion (`${x@P}`).
    pub late: Option<String>,
    /// The variable it may assign (`${x:=word}`, `${x=word}`).
    pub assigns: Option<String>,
}

/// Reads the expansion `${...}` whose whole text is `text`. Unknown forms
/// are code.
pub fn parameter(text: &str) -> Parameter {
    let mut found = Parameter::default();
    let Some(inner) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) else {
        found.late = Some(format!("`{text}`, which the checker cannot read"));
        return found;
    };
    let chars: Vec<char> = inner.chars().collect();
    let mut at = 0;
    let mut indirect = false;
    let mut length = false;
    // `${#}` and `${!}` are parameters; `${#x}` a length, `${!x}` indirect.
    if chars.len() > 1 && chars[0] == '#' && chars[1] != '}' && !OPERATOR_START.contains(chars[1]) {
        length = true;
        at = 1;
    } else if chars.len() > 1 && chars[0] == '!' && !OPERATOR_START.contains(chars[1]) {
        indirect = true;
        at = 1;
    }
    let start = at;
    if at < chars.len() && (chars[at].is_ascii_alphabetic() || chars[at] == '_') {
        while at < chars.len() && (chars[at].is_ascii_alphanumeric() || chars[at] == '_') {
            at += 1;
        }
    } else if at < chars.len() && chars[at].is_ascii_digit() {
        while at < chars.len() && chars[at].is_ascii_digit() {
            at += 1;
        }
    } else if at < chars.len() && "@*#?-$!0".contains(chars[at]) {
        at += 1;
    } else {
        found.late = Some(format!("`{text}`, which the checker cannot read"));
        return found;
    }
    let name: String = chars[start..at].iter().collect();
    let mut reading = Reading::default();
    let mut all_elements = false;
    if chars.get(at) == Some(&'[') {
        let Some(end) = closing(&chars[at..], '[', ']') else {
            found.late = Some(format!("`{text}`, which the checker cannot read"));
            return found;
        };
        let subscript: String = chars[at + 1..at + end].iter().collect();
        if matches!(subscript.as_str(), "@" | "*") {
            all_elements = true;
        } else {
            reading.merge(subscript_reading(&subscript));
        }
        at += end + 1;
    }
    let rest: String = chars[at..].iter().collect();
    if indirect {
        // `${!prefix*}`, `${!prefix@}` list names; `${!a[@]}` lists keys.
        let lists = (rest == "*" || rest == "@") || (all_elements && rest.is_empty());
        if !lists {
            found.late = Some(format!(
                "`{text}` takes the value of `{name}` as a name, which may hold code"
            ));
        }
    } else if length {
        if !rest.is_empty() {
            found.late = Some(format!("`{text}`, which the checker cannot read"));
        }
    } else if let Some(operand) = rest.strip_prefix(':')
        && !operand.starts_with(['-', '=', '?', '+'])
    {
        // `${P:OFFSET}`, `${P:OFFSET:LENGTH}`: both are arithmetic.
        reading.merge(expression(operand));
    } else if rest.starts_with(":=") || rest.starts_with('=') {
        found.assigns = Some(name);
    } else if rest.starts_with("@P") {
        found.late = Some(format!(
            "`{text}` runs the value of `{name}` as a prompt, which may hold code"
        ));
    }
    if reading != Reading::default() {
        found.arithmetic = Some(reading);
    }
    found
}

/// Characters that begin an operator right after `${`, where `#` or `!`
/// is then the parameter itself (`${#:-x}`, `${!:-x}`).
const OPERATOR_START: &str = ":-=?+}%/^,@[";

/// An array subscript: a literal word in an associative array, arithmetic
/// in an indexed one; offcode cannot tell which, so arithmetic.
pub fn subscript_reading(subscript: &str) -> Reading {
    expression(subscript)
}

/// A name operand (`read NAME`, `unset NAME`, `declare NAME=...`, `[[ -v
/// NAME ]]`): the arithmetic of its subscript, if it has one; `None` when
/// it is a plain name.
pub fn name_operand(word: &str) -> Option<Reading> {
    let name = word.split_once('=').map_or(word, |(name, _)| name);
    let name = name.strip_suffix('+').unwrap_or(name);
    let (base, subscript) = name.split_once('[')?;
    let mut reading = Reading::default();
    if !is_name(base) {
        reading.code(format!("the name `{name}`"));
        return Some(reading);
    }
    match subscript.strip_suffix(']') {
        Some("@" | "*") => return None,
        Some(inner) => reading.merge(subscript_reading(inner)),
        None => reading.code(format!("the name `{name}`")),
    }
    Some(reading)
}

/// An operand of `[[ A -eq B ]]`, as written: quotes around it come off,
/// and what is left is evaluated as arithmetic once expanded.
pub fn comparison_operand(text: &str) -> Reading {
    let unquoted = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .or_else(|| text.strip_prefix('\'').and_then(|t| t.strip_suffix('\'')))
        .unwrap_or(text);
    expression(unquoted)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reads(text: &str) -> (Vec<String>, bool) {
        let reading = expression(text);
        (reading.reads, reading.code.is_some())
    }

    #[test]
    fn numbers_and_operators_are_harmless() {
        assert_eq!(reads("1 + 2 * (3 - 0x1f) / 16#ff"), (vec![], false));
        assert_eq!(reads("$# + $? + ${#} + ${#x} + ${#a[@]}"), (vec![], false));
    }

    #[test]
    fn names_are_read_in_every_spelling() {
        assert_eq!(
            reads("x + $y + ${z}"),
            (vec!["x".into(), "y".into(), "z".into()], false)
        );
        let reading = expression("i=0; i<3; i++");
        assert_eq!(reading.assigns, vec!["i".to_owned(), "i".to_owned()]);
        assert!(expression("i == 2").assigns.is_empty());
    }

    #[test]
    fn elements_specials_and_substitutions_are_code() {
        for text in [
            "a[1]", "$1", "$@", "$(id)", "`id`", "\"x\"", "${x:-1}", "${a[0]}", "x[$i]",
        ] {
            assert!(expression(text).code.is_some(), "{text}");
        }
    }

    #[test]
    fn parameters_of_every_kind_give_their_arithmetic() {
        for (text, read) in [
            ("${@:x}", "x"),
            ("${*:x}", "x"),
            ("${$:x}", "x"),
            ("${?:x}", "x"),
            ("${-:x}", "x"),
            ("${#:x}", "x"),
            ("${!:x}", "x"),
            ("${0:x}", "x"),
            ("${1:0:x}", "x"),
            ("${v:1:x}", "x"),
            ("${v: x}", "x"),
            ("${a[@]:x}", "x"),
            ("${a[x]}", "x"),
            ("${#a[x]}", "x"),
            ("${a[x]:-d}", "x"),
        ] {
            let found = parameter(text);
            let reading = found.arithmetic.unwrap_or_default();
            assert_eq!(reading.reads, vec![read.to_owned()], "{text}");
        }
        for text in [
            "${HOME}",
            "${1:-x}",
            "${v:=x}",
            "${x%.txt}",
            "${#a[@]}",
            "${a[@]}",
            "${!a[@]}",
            "${!pre*}",
            "${v:1:2}",
            "${v: -1}",
            "${@}",
            "${10}",
            "${#}",
        ] {
            let found = parameter(text);
            assert_eq!(found.arithmetic, None, "{text}");
            assert_eq!(found.late, None, "{text}");
        }
        assert!(parameter("${!x}").late.is_some());
        assert!(parameter("${x@P}").late.is_some());
        assert_eq!(parameter("${x:=1}").assigns.as_deref(), Some("x"));
    }

    #[test]
    fn name_operands_read_their_subscripts() {
        assert_eq!(name_operand("x"), None);
        assert_eq!(name_operand("x=1"), None);
        assert_eq!(name_operand("a[@]"), None);
        assert_eq!(name_operand("a[1]=2").and_then(|r| r.code), None);
        let reading = name_operand("a[i]=2").unwrap_or_default();
        assert_eq!(reading.reads, vec!["i".to_owned()]);
        assert!(name_operand("a[$(id)]").is_some_and(|r| r.code.is_some()));
    }
}
